"""The labelled real-code benchmark: gradlint's precision and recall on hand-labelled
training loops of pinned PyPI releases.

    python benchmarks/labelled.py [--only PACKAGE] [--json] [--update-results]

Reads every ``benchmarks/labelled/labels/*.json`` (format: ``labelled/FORMAT.md``),
checks them, fetches each package, runs ``gradlint check --format json --isolated`` on
the listed files from the package root and matches the findings with the labels.  A
finding is a true positive when a labelled defect has its path, code and line; every
other finding is a false positive (one outside every labelled loop is "unreviewed").
Findings in loops labelled "unsure" and those loops' defects count in neither figure.
Invalid labels: one line per problem, exit 2.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from labelled_sources import Finding, SourceError, lint_files, package_root
from labelset import LABELS_DIR, Defect, LabelError, LabelFile, Loop, check_sources, label_paths, load
from results import write_section

RESULTS = Path(__file__).resolve().with_name("RESULTS.md")
SECTION = "labelled-benchmark"


@dataclass(frozen=True)
class Scored:
    """One finding with its verdict: ``tp``, ``fp`` or ``unsure``, and why."""

    package: str
    path: str
    line: int
    code: str
    message: str
    kind: str
    why: str


@dataclass(frozen=True)
class Miss:
    """A labelled defect that no finding matched."""

    package: str
    path: str
    line: int
    code: str
    why: str
    loop: str


@dataclass
class Score:
    """Everything the benchmark measured."""

    findings: list[Scored] = field(default_factory=list)
    defects: list[tuple[str, Defect]] = field(default_factory=list)
    misses: list[Miss] = field(default_factory=list)
    packages: int = 0
    projects: set[str] = field(default_factory=set)
    verdicts: Counter[str] = field(default_factory=Counter)
    styles: Counter[str] = field(default_factory=Counter)


def _loop_of(loops: Sequence[Loop], path: str, line: int) -> Loop | None:
    """The innermost labelled loop holding ``path:line``."""
    holding = [lp for lp in loops if lp.contains(path, line)]
    return min(holding, key=lambda lp: lp.last - lp.first) if holding else None


def score_package(labels: LabelFile, findings: Sequence[Finding], score: Score) -> None:
    """Match one package's findings with its labels, adding to ``score``."""
    score.packages += 1
    score.projects.add(labels.project)
    score.verdicts.update(lp.verdict for lp in labels.loops)
    score.styles.update(s for lp in labels.loops for s in lp.style)
    open_defects: dict[tuple[str, str, int], list[tuple[Defect, Loop]]] = {}
    for lp in labels.loops:
        if lp.verdict == "unsure":
            continue
        for d in lp.defects:
            score.defects.append((labels.package, d))
            open_defects.setdefault((d.path, d.code, d.line), []).append((d, lp))
    for f in sorted(findings, key=lambda f: (f.path, f.line, f.code)):
        loop = _loop_of(labels.loops, f.path, f.line)
        matches = open_defects.get((f.path, f.code, f.line))
        if matches:
            d, lp = matches.pop(0)
            kind, why = "tp", d.why
        elif loop is not None and loop.verdict == "unsure":
            kind, why = "unsure", f"in loop {loop.id}, labelled unsure"
        elif loop is not None:
            kind, why = "fp", f"in loop {loop.id}, labelled {loop.verdict}"
        else:
            kind, why = "fp", "unreviewed: outside every labelled loop"
        score.findings.append(Scored(labels.package, f.path, f.line, f.code, f.message, kind, why))
    for (path, code, line), left in sorted(open_defects.items()):
        for d, lp in left:
            score.misses.append(Miss(labels.package, path, line, code, d.why, lp.id))


def _ratio(num: int, den: int) -> str:
    return f"{100 * num / den:.1f}% ({num}/{den})" if den else f"n/a (0/{den})"


@dataclass(frozen=True)
class RuleRow:
    """One rule's figures: findings, true and false positives, defects, defects found."""

    code: str
    findings: int
    tp: int
    fp: int
    defects: int
    found: int


def per_rule(score: Score) -> list[RuleRow]:
    """Per code: findings, true positives, defects, defects found."""
    codes = sorted({f.code for f in score.findings if f.kind != "unsure"}
                   | {d.code for _, d in score.defects})
    rows = []
    for code in codes:
        judged = [f for f in score.findings if f.code == code and f.kind != "unsure"]
        tp = sum(f.kind == "tp" for f in judged)
        defects = sum(d.code == code for _, d in score.defects)
        missed = sum(m.code == code for m in score.misses)
        rows.append(RuleRow(code, len(judged), tp, len(judged) - tp, defects, defects - missed))
    return rows


@dataclass(frozen=True)
class Summary:
    """The benchmark's figures as plain data (what ``--json`` prints)."""

    packages: int
    projects: int
    loops: int
    verdicts: dict[str, int]
    styles: dict[str, int]
    findings: int
    true_positives: int
    false_positives: int
    unreviewed: int
    defects: int
    found: int
    precision: float | None
    recall: float | None
    per_rule: list[RuleRow]
    false_positive_list: list[Scored]
    misses: list[Miss]
    unsure_findings: list[Scored]


def summarize(score: Score) -> Summary:
    """The figures of ``score``."""
    judged = [f for f in score.findings if f.kind != "unsure"]
    tp = sum(f.kind == "tp" for f in judged)
    found = len(score.defects) - len(score.misses)
    return Summary(
        packages=score.packages, projects=len(score.projects),
        loops=sum(score.verdicts.values()), verdicts=dict(sorted(score.verdicts.items())),
        styles=dict(sorted(score.styles.items())), findings=len(judged), true_positives=tp,
        false_positives=len(judged) - tp,
        unreviewed=sum(f.why.startswith("unreviewed") for f in judged),
        defects=len(score.defects), found=found,
        precision=tp / len(judged) if judged else None,
        recall=found / len(score.defects) if score.defects else None,
        per_rule=per_rule(score), false_positive_list=[f for f in judged if f.kind == "fp"],
        misses=list(score.misses),
        unsure_findings=[f for f in score.findings if f.kind == "unsure"])


def _counts(counter: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counter.items()) or "none"


def figures_markdown(s: Summary) -> str:
    """The headline figures and the per-rule table, as Markdown."""
    lines = [
        f"- packages {s.packages}, projects {s.projects}, loops {s.loops} "
        f"({_counts(s.verdicts)})",
        f"- styles: {_counts(s.styles)}",
        f"- findings {s.findings}: {s.true_positives} true, {s.false_positives} false "
        f"({s.unreviewed} unreviewed); {len(s.unsure_findings)} in unsure loops, not counted",
        f"- precision {_ratio(s.true_positives, s.findings)}",
        f"- recall {_ratio(s.found, s.defects)}",
        "",
        "| code | findings | true | false | precision | defects | found | recall |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in s.per_rule:
        lines.append(f"| {r.code} | {r.findings} | {r.tp} | {r.fp} | {_ratio(r.tp, r.findings)} "
                     f"| {r.defects} | {r.found} | {_ratio(r.found, r.defects)} |")
    return "\n".join(lines)


def _finding_line(f: Scored) -> str:
    return f"  {f.package}/{f.path}:{f.line} {f.code} {f.message} / {f.why}"


def report(s: Summary) -> str:
    """The text report: figures, then every false positive, miss and unsure finding."""
    out = [figures_markdown(s), "", f"false positives ({len(s.false_positive_list)}):"]
    out += [_finding_line(f) for f in s.false_positive_list]
    out.append(f"misses ({len(s.misses)}):")
    out += [f"  {m.package}/{m.path}:{m.line} {m.code} (loop {m.loop}) / {m.why}"
            for m in s.misses]
    out.append(f"findings in unsure loops, not counted ({len(s.unsure_findings)}):")
    out += [_finding_line(f) for f in s.unsure_findings]
    return "\n".join(out)


def _commit() -> str:
    """The short commit of this checkout, or ``unknown``."""
    try:
        proc = subprocess.run(["git", "-C", str(RESULTS.parent), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return proc.stdout.strip() if proc.returncode == 0 else "unknown"


def update_results(path: Path, data: Summary, command: str) -> None:
    """Rewrite the marked benchmark section of ``path``."""
    day = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")
    body = (f"## Labelled real-code benchmark\n\nProduced by `{command}` on {day} "
            f"(gradlint commit {_commit()}); the labels are in `benchmarks/labelled/labels/`.\n\n"
            f"{figures_markdown(data)}")
    write_section(SECTION, body, path)


def load_labels(labels_dir: Path, only: Sequence[str]) -> list[LabelFile]:
    """Every label file of ``labels_dir`` (those of ``only`` if given), checked."""
    paths = label_paths(labels_dir, only)
    if only and len(paths) < len(set(only)):
        missing = sorted(set(only) - {p.stem for p in paths})
        raise LabelError([f"no label file for {name} in {labels_dir.name}" for name in missing])
    if not paths:
        raise LabelError([f"no label files in {labels_dir}"])
    return load(paths)


def resolve(labels: Sequence[LabelFile], source_dir: Path | None) -> list[tuple[LabelFile, Path]]:
    """Each package's unpacked root, after checking the labels against its files."""
    roots = [(lab, package_root(lab, source_dir)) for lab in labels]
    problems = [p for lab, root in roots for p in check_sources(lab, root)]
    if problems:
        raise LabelError(problems)
    return roots


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line of both benchmark scripts' shared options plus this one's."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common(parser)
    parser.add_argument("--select", help="rule codes passed to gradlint's --select "
                        "(default: gradlint's default rules)")
    parser.add_argument("--update-results", action="store_true",
                        help="rewrite the labelled-benchmark section of RESULTS.md")
    parser.add_argument("--results-file", type=Path, default=RESULTS, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def add_common(parser: argparse.ArgumentParser) -> None:
    """Options shared with ``mutate.py``."""
    parser.add_argument("--only", action="append", default=[], metavar="PACKAGE",
                        help="only this package (repeatable)")
    parser.add_argument("--source-dir", type=Path,
                        help="use the unpacked trees DIR/<package>-<version>/ (no download)")
    parser.add_argument("--labels-dir", type=Path, default=LABELS_DIR,
                        help="folder of the label files (default: labelled/labels)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point."""
    args = parse_args(argv)
    try:
        labels = load_labels(args.labels_dir, args.only)
        roots = resolve(labels, args.source_dir)
    except LabelError as exc:
        print("\n".join(exc.problems), file=sys.stderr)
        return 2
    except SourceError as exc:
        print(f"labelled: {exc}", file=sys.stderr)
        return 2
    score = Score()
    try:
        for lab, root in roots:
            score_package(lab, lint_files(root, lab.files, args.select), score)
    except SourceError as exc:
        print(f"labelled: {exc}", file=sys.stderr)
        return 1
    data = summarize(score)
    print(json.dumps(asdict(data), indent=2) if args.json else report(data))
    if args.update_results:
        command = "python benchmarks/labelled.py" + (f" --select {args.select}" if args.select else "")
        update_results(args.results_file, data, command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
