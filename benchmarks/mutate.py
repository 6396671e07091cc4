"""The mutation harness: inject one catalogue defect at a time into every loop labelled
"correct" of the labelled benchmark and check that gradlint reports exactly it.

    python benchmarks/mutate.py [--only PACKAGE] [--kind KIND] [--source-dir DIR] [--json]

For each such loop and each mutation kind whose anchors the loop has (see
``mutations.py``), the mutated file is linted through gradlint's stdin from the package
root.  A mutant is caught when the kind's code is reported on the expected line (or, when
the statement there calls a function of the module, where that function writes the call:
gradlint reports an event in the helper that holds it) and no finding appears elsewhere that
the original (lines shifted) did not have; a second code on that same line is on the
mutated statement, not elsewhere.  Mutants that do not parse are skipped and counted.
Findings inside the unmutated correct loops are listed: the originals must be clean.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # lint_text imports gradlint in this process: this checkout's

from labelled import add_common, load_labels, resolve  # noqa: E402
from labelled_sources import Finding, SourceError, lint_files, lint_text  # noqa: E402
from labelset import LabelError, LabelFile, Loop  # noqa: E402
from mutations import KINDS, Kind, Mutant, NotApplicable, helper_lines, mutate, parses  # noqa: E402


@dataclass(frozen=True)
class Outcome:
    """What happened to one mutant."""

    package: str
    path: str
    loop: str
    kind: str
    code: str
    line: int
    """The mutant's line where ``code`` was expected."""
    status: str
    """``caught``, ``missed`` or ``unparseable``."""
    reported: tuple[str, ...] = ()
    """Findings on the mutant not in the original, as ``CODE:line``."""


@dataclass
class Harness:
    """Every mutant's outcome and the findings in the unmutated correct loops."""

    outcomes: list[Outcome] = field(default_factory=list)
    dirty: list[str] = field(default_factory=list)
    loops: int = 0


def _keys(findings: Sequence[Finding]) -> set[tuple[str, int]]:
    return {(f.code, f.line) for f in findings}


@dataclass(frozen=True)
class _Job:
    """One mutant to lint: where, what, and the original's findings shifted to it."""

    base: Outcome
    mutant: Mutant
    shifted: frozenset[tuple[str, int]]


def mutants_of(lab: LabelFile, loop: Loop, text: str, original: Sequence[Finding],
               kinds: Sequence[Kind] = KINDS) -> list[Outcome | _Job]:
    """Every applicable mutant of one correct loop: an unparseable outcome or a job."""
    made: list[Outcome | _Job] = []
    for kind in kinds:
        try:
            mutant = mutate(text, kind, loop.anchors, loop.accumulates, (loop.first, loop.last))
        except NotApplicable:
            continue
        base = Outcome(lab.package, loop.path, loop.id, kind.name, mutant.code,
                       mutant.expected_line, "unparseable")
        if not parses(mutant.text):
            made.append(base)
            continue
        shifted = frozenset((f.code, mutant.line_map[f.line]) for f in original
                            if f.line in mutant.line_map)
        made.append(_Job(base, mutant, shifted))
    return made


def judge(job: _Job, findings: Sequence[Finding]) -> Outcome:
    """Caught when the expected code is reported on the expected line, or inside a function of
    the module that the statement on that line calls (gradlint reports an event where its call
    is written: in the helper that holds it), and nothing new appears elsewhere: a second code
    on that same line (a clip moved into the micro-batch also precedes the boundary's
    ``unscale_``) is a finding on the mutated statement, not elsewhere."""
    new = sorted(_keys(findings) - job.shifted, key=lambda k: (k[1], k[0]))
    code, line = job.base.code, job.base.line
    places = {line} | helper_lines(job.mutant.text, line)
    hit = {n for c, n in new if c == code and n in places}
    caught = bool(hit) and all(n in hit for _, n in new)
    return replace(job.base, status="caught" if caught else "missed",
                   reported=tuple(f"{c}:{n}" for c, n in new))


def run_package(lab: LabelFile, root: Path, harness: Harness, jobs: int,
                kinds: Sequence[Kind] = KINDS) -> None:
    """Every correct loop with anchors of one package, mutated by ``kinds``; ``jobs`` gradlint
    runs at a time."""
    loops = [lp for lp in lab.loops if lp.verdict == "correct" and any(lp.anchors.values())]
    if not loops:
        return
    findings = lint_files(root, sorted({lp.path for lp in loops}))
    by_path: dict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        by_path[f.path].append(f)
    made: list[Outcome | _Job] = []
    for loop in loops:
        harness.loops += 1
        harness.dirty += [f"{lab.package}/{f.path}:{f.line} {f.code} {f.message} (loop {loop.id})"
                          for f in by_path[loop.path] if loop.contains(f.path, f.line)]
        try:
            text = (root / loop.path).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            harness.dirty.append(f"{lab.package}/{loop.path}: not UTF-8, not mutated (loop {loop.id})")
            continue
        made += mutants_of(lab, loop, text, by_path[loop.path], kinds)
    todo = [m for m in made if isinstance(m, _Job)]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        linted = iter(list(pool.map(lambda j: lint_text(root, j.base.path, j.mutant.text), todo)))
    harness.outcomes += [judge(m, next(linted)) if isinstance(m, _Job) else m for m in made]


def shares(harness: Harness, kinds: Sequence[Kind] = KINDS) -> list[dict[str, object]]:
    """Per mutation kind and overall: mutants, caught, missed, unparseable."""
    rows = []
    for name, code in [(k.name, k.code) for k in kinds] + [("overall", "")]:
        mine = [o for o in harness.outcomes if name in ("overall", o.kind)]
        caught = sum(o.status == "caught" for o in mine)
        missed = sum(o.status == "missed" for o in mine)
        rows.append({"kind": name, "code": code, "caught": caught, "missed": missed,
                     "unparseable": sum(o.status == "unparseable" for o in mine),
                     "share": caught / (caught + missed) if caught + missed else None})
    return rows


def report(harness: Harness, kinds: Sequence[Kind] = KINDS) -> str:
    """The text report: the table of shares, the misses and the unclean originals."""
    out = [f"correct loops with anchors: {harness.loops}, mutants: {len(harness.outcomes)}", "",
           "| kind | code | caught | missed | unparseable | share caught |",
           "| --- | --- | ---: | ---: | ---: | ---: |"]
    for r in shares(harness, kinds):
        share = r["share"]
        shown = f"{100 * share:.1f}%" if isinstance(share, float) else "n/a"
        out.append(f"| {r['kind']} | {r['code']} | {r['caught']} | {r['missed']} "
                   f"| {r['unparseable']} | {shown} |")
    misses = [o for o in harness.outcomes if o.status == "missed"]
    out += ["", f"missed ({len(misses)}):"]
    out += [f"  {o.package}/{o.path} (loop {o.loop}) {o.kind}: expected {o.code} at line "
            f"{o.line}; new findings: {', '.join(o.reported) or 'none'}" for o in misses]
    out.append(f"findings on the unmutated correct loops ({len(harness.dirty)}):")
    out += [f"  {d}" for d in harness.dirty]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_common(parser)
    parser.add_argument("--jobs", "-j", type=int, default=1,
                        help="mutants linted at a time (default 1: the in-process project index is not thread-safe)")
    parser.add_argument("--kind", action="append", default=[], metavar="KIND",
                        choices=[k.name for k in KINDS], help="only this mutation kind (repeatable)")
    args = parser.parse_args(argv)
    kinds = tuple(k for k in KINDS if not args.kind or k.name in args.kind)
    try:
        roots = resolve(load_labels(args.labels_dir, args.only), args.source_dir)
    except LabelError as exc:
        print("\n".join(exc.problems), file=sys.stderr)
        return 2
    except SourceError as exc:
        print(f"mutate: {exc}", file=sys.stderr)
        return 2
    harness = Harness()
    try:
        for lab, root in roots:
            run_package(lab, root, harness, args.jobs, kinds)
    except SourceError as exc:
        print(f"mutate: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"loops": harness.loops, "shares": shares(harness, kinds),
                          "outcomes": [asdict(o) for o in harness.outcomes],
                          "unclean_originals": harness.dirty}, indent=2))
    else:
        print(report(harness, kinds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
