"""Fuzz gradlint for a while: valid programs (hypothesmith), programs with training calls
grafted in, and mutated training scripts from ``fixtures/``.

Every program goes through ``tests/fuzzing.py``'s :func:`check_program`: the core
(``lint_source``/``lint_bytes``, fast and full paths) never raises, GL000 appears exactly for
text the running Python rejects, diagnostics are well formed, and the fixer (unsafe fixes
included) never raises nor returns code that does not parse. Runs rounds of each source until
the time is up, prints how many programs were tried, and writes each (shrunk) failing
program to ``--crash-dir``. Exit status 1 if anything failed.

With ``--files``, it runs the fix-safety oracle (``tests/fixsafety.py``: every fix applied,
unsafe ones included; the training calls keep their conditions, no duplicate, no removed
guard) over every Python file under the given paths instead, and prints each violation.

    python scripts/fuzz.py --minutes 30
    python scripts/fuzz.py --files fixtures path/to/packages
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
import warnings
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import fixsafety
import fuzzing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SOURCES = {
    "valid": fuzzing.valid_programs,
    "grafted": fuzzing.grafted_programs,
    "mutated": fuzzing.mutated_scripts,
}
ROUND = 100
"""Programs per round of one source (each round is a fresh hypothesis run)."""


def fuzz_round(name: str, strategy: st.SearchStrategy[str], tried: Counter, deadline: float) -> str | None:
    """One hypothesis run of ``ROUND`` programs; the failing (shrunk) program, or None."""
    failing: list[str] = []

    @settings(max_examples=ROUND, deadline=None, database=None, print_blob=False,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def round_(text: str) -> None:
        if time.monotonic() > deadline:
            return
        tried[name] += 1
        try:
            fuzzing.check_program(text)
        except BaseException:
            failing[:] = [text]
            raise

    try:
        round_()
    except Exception:  # noqa: BLE001 - any failure is a finding to report, not to stop on
        traceback.print_exc()
        return failing[0] if failing else "<no program recorded>"
    return None


def check_files(paths: list[Path]) -> int:
    """The fix-safety oracle over every ``.py`` file under ``paths`` that may hold a training
    loop (default rules, unsafe fixes included); prints each violation and a summary, and
    returns the number of files with a violation."""
    from gradlint.prefilter import might_hold_training_loop
    from gradlint.settings import default_settings

    files = sorted({f for p in paths for f in ([p] if p.is_file() else p.rglob("*.py"))})
    checked = fixed = failing = problems = 0
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if not might_hold_training_loop(text):
            continue
        checked += 1
        check = fixsafety.check_fix_safety(text, str(file), default_settings())
        fixed += bool(check.result.fixed)
        if check.problems:
            failing += 1
            problems += len(check.problems)
            for problem in check.problems:
                print(f"{file}: {problem}", flush=True)
    print(f"done: {checked} files checked, {fixed} fixed, {problems} violation(s) in {failing} file(s)")
    return failing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="how long to fuzz (default 5)")
    parser.add_argument("--sources", default=",".join(SOURCES), help="comma-separated: " + ", ".join(SOURCES))
    parser.add_argument("--crash-dir", type=Path, default=Path("fuzz-crashes"),
                        help="where failing programs are written (default ./fuzz-crashes)")
    parser.add_argument("--files", type=Path, nargs="+", metavar="PATH",
                        help="run the fix-safety oracle over these files and folders instead of fuzzing")
    args = parser.parse_args(argv)
    if args.files:
        return 1 if check_files(args.files) else 0
    names = [n.strip() for n in args.sources.split(",") if n.strip()]
    unknown = [n for n in names if n not in SOURCES]
    if unknown or not names:
        parser.error(f"unknown source(s): {', '.join(unknown) or '(none)'}")
    warnings.simplefilter("ignore", SyntaxWarning)  # hypothesmith compiles odd programs
    strategies = {name: SOURCES[name]() for name in names}
    started = time.monotonic()
    deadline = started + args.minutes * 60
    tried: Counter = Counter()
    failures = 0
    rounds = 0
    while time.monotonic() < deadline:
        name = names[rounds % len(names)]
        rounds += 1
        program = fuzz_round(name, strategies[name], tried, deadline)
        if program is not None:
            failures += 1
            args.crash_dir.mkdir(parents=True, exist_ok=True)
            out = args.crash_dir / f"{name}-{failures}.py"
            out.write_text(program, encoding="utf-8", newline="")
            print(f"FAILURE in {name}: program written to {out}", flush=True)
        elapsed = (time.monotonic() - started) / 60
        print(f"[{elapsed:6.1f} min] tried {sum(tried.values())} programs "
              f"({', '.join(f'{n} {tried[n]}' for n in names)}), {failures} failure(s)", flush=True)
    total = sum(tried.values())
    print(f"done: {total} programs in {(time.monotonic() - started) / 60:.1f} minutes "
          f"({', '.join(f'{n} {tried[n]}' for n in names)}); {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
