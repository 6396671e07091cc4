"""Reliability over the real corpus: no traceback, GL000 exactly where Python says so, safe fixes.

    python benchmarks/corpus_check.py              # every package of corpus.py
    python benchmarks/corpus_check.py trl skorch   # only these
    python benchmarks/corpus_check.py --no-full    # skip the in-process full analysis

For each package (fetched by ``corpus.py`` if needed) it checks:

1. the command line, ``gradlint check . --format json --no-cache --exit-zero --isolated
   --max-file-size 0`` run in the package folder: exit status 0, no traceback, JSON output;
2. GL000: the command line reports it for exactly the ``.py``/``.pyi`` files that the running
   Python rejects (``compile`` on the file's bytes: syntax, encoding, NUL bytes, nesting)
   and that pass the text filter (a file without ``backward`` or ``.step(`` is skipped
   unparsed, as rules/GL000.md says);
3. in process, every file through ``lint_bytes(..., full=True)`` (no text filter, every
   unit parsed): it never raises, and reports GL000 exactly when Python rejects the file;
   the slowest files are listed;
4. fix safety, for every file with a fixable finding (default rules, from the command line;
   and every rule, from the full analysis): with every fix applied (unsafe ones too) the
   text parses, keeps its statements and comments, and is a fixpoint (``tests/fixsafety.py``).

Prints a summary and exits 1 if anything failed.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import corpus
from common import REPO, gradlint_argv, gradlint_env

sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from fixsafety import check_fix_safety

from gradlint.catalogue import CATALOGUE
from gradlint.engine import lint_bytes
from gradlint.prefilter import might_hold_training_loop_bytes
from gradlint.settings import Settings, default_settings
from gradlint.source import decode

SOURCES = (".py", ".pyi")
EVERY_RULE = Settings(select=frozenset(CATALOGUE))
SLOWEST = 5


@dataclass
class Summary:
    """What the check found over all packages."""

    files: int = 0
    rejected: int = 0
    rejected_filtered: int = 0
    gl000: int = 0
    findings: int = 0
    fixable: int = 0
    fixable_every_rule: int = 0
    fixed: int = 0
    failures: list[str] = field(default_factory=list)
    timings: list[tuple[float, str]] = field(default_factory=list)


def rejects(data: bytes, path: str) -> str | None:
    """Why the running Python refuses the file's bytes (None: it compiles)."""
    try:
        compile(data, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return f"SyntaxError: {exc.msg} (line {exc.lineno})"
    except (ValueError, RecursionError, MemoryError) as exc:
        return f"{exc.__class__.__name__}: {exc}"
    return None


def run_cli(folder: Path, summary: Summary) -> list[dict] | None:
    """The command line's JSON findings for ``folder`` (None, recorded, when it failed)."""
    argv = [*gradlint_argv(), "check", ".", "--format", "json", "--no-cache", "--exit-zero", "--isolated",
            "--max-file-size", "0"]
    done = subprocess.run(argv, cwd=folder, env=gradlint_env(), capture_output=True, text=True, check=False)
    name = folder.name
    if "Traceback" in done.stderr or done.returncode != 0:
        summary.failures.append(f"{name}: exit {done.returncode}, stderr: {done.stderr[-2000:]}")
        return None
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        summary.failures.append(f"{name}: output is not JSON ({exc})")
        return None


def check_package(folder: Path, summary: Summary, full: bool, settings: Settings) -> None:
    """Every check on one unpacked package."""
    findings = run_cli(folder, summary)
    files = sorted(p for p in folder.rglob("*") if p.suffix in SOURCES and p.is_file())
    reported = {f["path"] for f in findings or [] if f["code"] == "GL000"}
    expected = set()
    for file in files:
        relative = file.relative_to(folder).as_posix()
        data = file.read_bytes()
        summary.files += 1
        why = rejects(data, relative)
        if why is not None:
            summary.rejected += 1
            if might_hold_training_loop_bytes(data):
                expected.add(relative)
            else:
                summary.rejected_filtered += 1
        if full:
            _check_full(folder.name, relative, data, why, summary)
    if findings is not None:
        summary.gl000 += len(reported)
        for path in sorted(expected - reported):
            summary.failures.append(f"{folder.name}/{path}: Python rejects it but GL000 is not reported")
        for path in sorted(reported - expected):
            summary.failures.append(f"{folder.name}/{path}: GL000 reported but Python compiles it")
        _check_fixes(folder, findings, summary, settings)


def _check_full(package: str, relative: str, data: bytes, why: str | None, summary: Summary) -> None:
    started = time.perf_counter()
    try:
        diagnostics = lint_bytes(data, relative, EVERY_RULE, full=True)
    except Exception:  # noqa: BLE001 - any exception is the finding
        summary.failures.append(f"{package}/{relative}: lint_bytes(full=True) raised:\n{traceback.format_exc()}")
        return
    summary.timings.append((time.perf_counter() - started, f"{package}/{relative}"))
    gl000 = any(d.code == "GL000" for d in diagnostics)
    if gl000 != (why is not None):
        summary.failures.append(f"{package}/{relative}: full analysis GL000={gl000} "
                                f"but Python says {why or 'it compiles'}")
    if any(d.fix is not None for d in diagnostics):
        summary.fixable_every_rule += 1
        _check_fix(package, relative, decode(data).text, EVERY_RULE, summary)


def _check_fixes(folder: Path, findings: list[dict], summary: Summary, settings: Settings) -> None:
    summary.findings += len(findings)
    fixable = sorted({f["path"] for f in findings if f.get("fix")})
    for relative in fixable:
        summary.fixable += 1
        _check_fix(folder.name, relative, decode((folder / relative).read_bytes()).text, settings, summary)


def _check_fix(package: str, relative: str, source: str, settings: Settings, summary: Summary) -> None:
    try:
        check = check_fix_safety(source, relative, settings)
    except Exception:  # noqa: BLE001 - any exception is the finding
        summary.failures.append(f"{package}/{relative}: the fixer raised:\n{traceback.format_exc()}")
        return
    if check.result.fixed:
        summary.fixed += 1
    summary.failures.extend(f"{package}/{relative}: fix: {problem}" for problem in check.problems)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("packages", nargs="*", help="corpus package names (default: all)")
    parser.add_argument("--no-full", dest="full", action="store_false",
                        help="skip the in-process full analysis of every file")
    args = parser.parse_args(argv)
    summary = Summary()
    settings = default_settings()
    started = time.perf_counter()
    for folder in corpus.ensure(args.packages or None):
        before = len(summary.failures)
        check_package(folder, summary, args.full, settings)
        print(f"{folder.name}: {len(summary.failures) - before} failure(s)", flush=True)
    for failure in summary.failures:
        print(f"FAIL {failure}")
    print(f"\n{summary.files} files in {time.perf_counter() - started:.0f} s; Python rejects {summary.rejected} "
          f"({summary.rejected - summary.rejected_filtered} pass the text filter: GL000 expected; "
          f"{summary.rejected_filtered} skipped by it); GL000 reported for {summary.gl000}")
    print(f"fixes: {summary.findings} findings (default rules); {summary.fixable} files with a fixable one, "
          f"{summary.fixable_every_rule} with every rule on; {summary.fixed} fixed and checked "
          "(parse, statements, comments, fixpoint)")
    if summary.timings:
        slowest = sorted(summary.timings, reverse=True)[:SLOWEST]
        print("slowest full analyses: " + ", ".join(f"{path} {seconds:.2f} s" for seconds, path in slowest))
    print(f"{len(summary.failures)} failure(s)")
    return 1 if summary.failures else 0


if __name__ == "__main__":
    sys.exit(main())
