"""Real-code validation: run gradlint over the pinned corpus and compare its
findings with the reviewed list ``benchmarks/REVIEWED.md``.

    python benchmarks/realworld.py

Fetches the corpus (see ``corpus.py``), runs ``gradlint check DIR --format json
--no-cache --exit-zero`` once per package, prints every finding grouped by rule,
the findings not yet reviewed (as rows ready for REVIEWED.md), the reviewed
entries that no longer occur, crashes, and a closing summary per rule.  With
``--check`` it exits 1 when a finding is unreviewed, a false positive is still
reported, or gradlint crashed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import corpus
from common import RunResult, gradlint_argv, gradlint_env, help_text, run_measured, supports

REVIEWED = Path(__file__).resolve().with_name("REVIEWED.md")
TRUE_BUG = "true bug"
FALSE_POSITIVE = "false positive"
VERDICTS = (TRUE_BUG, FALSE_POSITIVE)
TIMEOUT_S = 1800.0

Key = tuple[str, str, str, int, str]
"""(package, version, file, line, code): how a finding matches a reviewed row."""


@dataclass(frozen=True)
class Finding:
    """One gradlint diagnostic, located in a corpus package."""

    package: str
    version: str
    file: str
    line: int
    column: int
    code: str
    name: str
    message: str

    @property
    def key(self) -> Key:
        return (self.package, self.version, self.file, self.line, self.code)


@dataclass(frozen=True)
class Reviewed:
    """One row of REVIEWED.md."""

    package: str
    version: str
    file: str
    line: int
    code: str
    verdict: str
    why: str

    @property
    def key(self) -> Key:
        return (self.package, self.version, self.file, self.line, self.code)


@dataclass
class PackageRun:
    """The outcome of gradlint on one package."""

    pkg: corpus.Package
    result: RunResult
    findings: list[Finding] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def tracebacks(self) -> int:
        return self.result.stderr.count("Traceback (most recent call last)")

    @property
    def crashed(self) -> bool:
        return bool(self.problems) or self.tracebacks > 0


# --- REVIEWED.md ---------------------------------------------------------------------

def _cells(line: str) -> list[str] | None:
    """The 7 cells of a table row (the last, ``why``, keeps any extra ``|``)."""
    text = line.strip()
    if not text.startswith("|"):
        return None
    cells = [c.strip() for c in text[1:].removesuffix("|").split("|", 6)]
    return cells if len(cells) == 7 else None


def _is_data_row(cells: list[str]) -> bool:
    if cells[0].lower() == "package":
        return False
    return not all(set(c) <= set("-: ") for c in cells)


def parse_reviewed(path: Path) -> tuple[list[Reviewed], list[str]]:
    """The rows of the reviewed list and warnings about malformed ones."""
    rows: list[Reviewed] = []
    warnings: list[str] = []
    if not path.exists():
        return rows, [f"{path} does not exist"]
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        cells = _cells(line)
        if cells is None or not _is_data_row(cells):
            continue
        package, version, file, line_s, code, verdict, why = cells
        verdict = verdict.lower()
        if not line_s.isdigit() or verdict not in VERDICTS:
            warnings.append(f"{path.name}:{n}: bad row (line must be a number, verdict "
                            f"one of {VERDICTS}): {line.strip()}")
            continue
        rows.append(Reviewed(package, version, file.strip("`"), int(line_s), code,
                             verdict, why))
    return rows, warnings


# --- running gradlint ----------------------------------------------------------------

def check_argv(gradlint: list[str], directory: Path, help_out: str) -> list[str]:
    """``gradlint check DIR --format json`` plus the optional flags the CLI has."""
    argv = [*gradlint, "check", str(directory), "--format", "json"]
    for flag in ("--no-cache", "--exit-zero"):
        if not help_out or supports(help_out, flag):
            argv.append(flag)
    return argv


def _finding(pkg: corpus.Package, item: dict) -> Finding:
    located = corpus.package_of(Path(item["path"]))
    rel = located[1].as_posix() if located else str(item["path"])
    return Finding(pkg.name, pkg.version, rel, int(item["line"]), int(item.get("column", 0)),
                   str(item["code"]), str(item.get("name", "")), str(item.get("message", "")))


def parse_output(pkg: corpus.Package, text: str) -> tuple[list[Finding], list[str]]:
    """The findings of gradlint's JSON output, or a description of what was wrong."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return [], [f"output is not JSON ({exc}); starts with {text[:200]!r}"]
    if not isinstance(data, list):
        return [], [f"output is a {type(data).__name__}, not a list"]
    findings, problems = [], []
    for item in data:
        try:
            findings.append(_finding(pkg, item))
        except (KeyError, TypeError, ValueError) as exc:
            problems.append(f"malformed finding {item!r}: {exc!r}")
    return findings, problems


def run_package(gradlint: list[str], pkg: corpus.Package, directory: Path,
                help_out: str, workdir: Path) -> PackageRun:
    """Run gradlint on one package directory and collect its findings."""
    out = workdir / f"{pkg.slug}.json"
    argv = check_argv(gradlint, directory, help_out)
    result = run_measured(argv, cwd=workdir, env=gradlint_env(), stdout=out,
                          timeout=TIMEOUT_S)
    run = PackageRun(pkg, result)
    if result.timed_out:
        run.problems.append(f"timed out after {TIMEOUT_S:.0f}s")
    elif result.returncode not in (0, 1):
        run.problems.append(f"exit code {result.returncode}")
    else:
        run.findings, run.problems = parse_output(pkg, out.read_text("utf-8", "replace"))
    return run


def run_all(gradlint: list[str], names: Sequence[str] | None) -> list[PackageRun]:
    """Fetch the corpus and run gradlint on each package, printing progress."""
    pkgs = corpus.select(names)
    dirs = corpus.ensure([p.name for p in pkgs])
    help_out = help_text([*gradlint, "check"], gradlint_env())
    if not help_out:
        print("warning: `gradlint check --help` failed; passing every flag", file=sys.stderr)
    runs = []
    with tempfile.TemporaryDirectory(prefix="gradlint-realworld-") as tmp:
        for pkg, directory in zip(pkgs, dirs, strict=True):
            run = run_package(gradlint, pkg, directory, help_out, Path(tmp))
            state = "CRASH" if run.crashed else "ok"
            print(f"  {pkg.pin:30} {len(run.findings):5} findings  "
                  f"{run.result.wall:7.1f}s  {state}", file=sys.stderr, flush=True)
            runs.append(run)
    return runs


# --- reporting -----------------------------------------------------------------------

def _row(item: Finding | Reviewed, verdict: str = "", why: str = "") -> str:
    return (f"| {item.package} | {item.version} | {item.file} | {item.line} | {item.code} "
            f"| {verdict} | {why} |")


def print_by_rule(findings: Sequence[Finding], reviewed: dict[Key, Reviewed]) -> None:
    """Every finding, grouped by rule code, with its verdict if reviewed."""
    by_rule: dict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        by_rule[f.code].append(f)
    print(f"\n== Findings by rule ({len(findings)})")
    for code in sorted(by_rule):
        group = by_rule[code]
        print(f"\n{code} {group[0].name} ({len(group)})")
        for f in group:
            verdict = reviewed[f.key].verdict if f.key in reviewed else "UNREVIEWED"
            print(f"  {f.package} {f.version} {f.file}:{f.line}:{f.column}  {f.code}  "
                  f"{f.message}  [{verdict}]")


def print_unreviewed(findings: Sequence[Finding], reviewed: dict[Key, Reviewed]) -> list[Finding]:
    """The findings missing from REVIEWED.md, as rows to fill in."""
    todo = [f for f in findings if f.key not in reviewed]
    print(f"\n== Not yet reviewed ({len(todo)}): rows for {REVIEWED.name}, "
          "verdict and why to fill in")
    for f in todo:
        print(_row(f))
    return todo


def print_gone(findings: Sequence[Finding], rows: Sequence[Reviewed]) -> list[Reviewed]:
    """The reviewed entries that gradlint no longer reports."""
    seen = {f.key for f in findings}
    gone = [r for r in rows if r.key not in seen]
    print(f"\n== Reviewed entries no longer reported ({len(gone)})")
    for r in gone:
        print(_row(r, r.verdict, r.why))
    return gone


def print_crashes(runs: Sequence[PackageRun]) -> None:
    """Non-zero exits other than 0/1, tracebacks and unreadable output, per package."""
    crashed = [r for r in runs if r.crashed]
    print(f"\n== Crashes ({len(crashed)} packages, "
          f"{sum(r.tracebacks for r in runs)} tracebacks)")
    for run in crashed:
        print(f"\n{run.pkg.pin}: exit {run.result.returncode}, {run.tracebacks} tracebacks")
        for problem in run.problems:
            print(f"  {problem}")
        for line in run.result.stderr.strip().splitlines()[-15:]:
            print(f"  | {line}")


def summary_rows(findings: Iterable[Finding], reviewed: dict[Key, Reviewed]) -> list[str]:
    """A Markdown table: findings, true bugs, false positives, unreviewed, per rule."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    names: dict[str, str] = {}
    for f in findings:
        names[f.code] = f.name
        verdict = reviewed[f.key].verdict if f.key in reviewed else "unreviewed"
        counts[f.code]["findings"] += 1
        counts[f.code][verdict] += 1
    lines = ["| rule | name | findings | true bugs | false positives (open) | unreviewed |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    total: Counter[str] = Counter()
    for code in sorted(counts):
        c = counts[code]
        total.update(c)
        lines.append(f"| {code} | {names[code]} | {c['findings']} | {c[TRUE_BUG]} "
                     f"| {c[FALSE_POSITIVE]} | {c['unreviewed']} |")
    lines.append(f"| **total** | | {total['findings']} | {total[TRUE_BUG]} "
                 f"| {total[FALSE_POSITIVE]} | {total['unreviewed']} |")
    return lines


def print_summary(runs: Sequence[PackageRun], reviewed: dict[Key, Reviewed],
                  gone: Sequence[Reviewed]) -> None:
    """The closing summary."""
    findings = [f for r in runs for f in r.findings]
    print(f"\n== Summary: {len(runs)} packages, "
          f"{sum(corpus.stats(corpus.src_dir(r.pkg)).files for r in runs)} .py files, "
          f"{sum(r.result.wall for r in runs):.1f}s\n")
    print("\n".join(summary_rows(findings, reviewed)))
    fixed_fp = sum(r.verdict == FALSE_POSITIVE for r in gone)
    print(f"\nreviewed entries no longer reported: {len(gone)} "
          f"({fixed_fp} false positives fixed, {len(gone) - fixed_fp} true bugs gone)")
    print(f"crashed packages: {sum(r.crashed for r in runs)}, "
          f"tracebacks: {sum(r.tracebacks for r in runs)}, "
          f"stderr lines: {sum(len(r.result.stderr.splitlines()) for r in runs)}")


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("packages", nargs="*",
                        help="corpus packages to check (default: all)")
    parser.add_argument("--gradlint", default=None, metavar="CMD",
                        help="the gradlint command (default: 'python -m gradlint', "
                             "'python' meaning this interpreter)")
    parser.add_argument("--reviewed", type=Path, default=REVIEWED,
                        help=f"the reviewed list (default: {REVIEWED})")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 on unreviewed findings, open false positives or crashes")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point."""
    args = _parse_args(argv)
    gradlint = gradlint_argv(args.gradlint)
    rows, warnings = parse_reviewed(args.reviewed)
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    reviewed = {r.key: r for r in rows}
    print(f"gradlint: {' '.join(gradlint)}\ncorpus: {corpus.cache_dir()}", file=sys.stderr)
    runs = run_all(gradlint, args.packages or None)
    findings = [f for r in runs for f in r.findings]
    print_by_rule(findings, reviewed)
    todo = print_unreviewed(findings, reviewed)
    selected = {p.name for p in corpus.select(args.packages or None)}
    gone = print_gone(findings, [r for r in rows if r.package in selected])
    print_crashes(runs)
    print_summary(runs, reviewed, gone)
    open_fp = sum(reviewed[f.key].verdict == FALSE_POSITIVE
                  for f in findings if f.key in reviewed)
    failed = bool(todo) or open_fp > 0 or any(r.crashed for r in runs)
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
