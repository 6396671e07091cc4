"""The mutation harness: inject one catalogue defect at a time into every loop labelled
"correct" of the labelled benchmark and check that gradlint reports exactly it.

    python benchmarks/mutate.py [--only PACKAGE] [--source-dir DIR] [--json]

For each such loop and each mutation kind whose anchors the loop has (see
``mutations.py``), the mutated file is linted through gradlint's stdin from the package
root.  A mutant is caught when the kind's code is reported on the expected line and no
other finding appears that the original (lines shifted) did not have.  Mutants that do
not parse are skipped and counted.  Findings inside the unmutated correct loops are
listed: the originals must be clean.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from labelled import add_common, load_labels, resolve
from labelled_sources import Finding, SourceError, lint_files, lint_text
from labelset import LabelError, LabelFile, Loop
from mutations import KINDS, NotApplicable, mutate, parses


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


def run_loop(lab: LabelFile, root: Path, loop: Loop, text: str,
             original: Sequence[Finding], harness: Harness) -> None:
    """Mutate one correct loop once per applicable kind and lint every mutant."""
    for kind in KINDS:
        try:
            mutant = mutate(text, kind, loop.anchors, loop.accumulates)
        except NotApplicable:
            continue
        base = Outcome(lab.package, loop.path, loop.id, kind.name, kind.code,
                       mutant.expected_line, "unparseable")
        if not parses(mutant.text):
            harness.outcomes.append(base)
            continue
        shifted = {(f.code, mutant.line_map[f.line]) for f in original if f.line in mutant.line_map}
        new = sorted(_keys(lint_text(root, loop.path, mutant.text)) - shifted,
                     key=lambda k: (k[1], k[0]))
        expected = (kind.code, mutant.expected_line)
        status = "caught" if new == [expected] else "missed"
        harness.outcomes.append(replace(base, status=status,
                                        reported=tuple(f"{c}:{n}" for c, n in new)))


def run_package(lab: LabelFile, root: Path, harness: Harness) -> None:
    """Every correct loop with anchors of one package."""
    loops = [lp for lp in lab.loops if lp.verdict == "correct" and any(lp.anchors.values())]
    if not loops:
        return
    paths = sorted({lp.path for lp in loops})
    findings = lint_files(root, paths)
    by_path: dict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        by_path[f.path].append(f)
    for loop in loops:
        harness.loops += 1
        harness.dirty += [f"{lab.package}/{f.path}:{f.line} {f.code} {f.message} (loop {loop.id})"
                          for f in by_path[loop.path] if loop.contains(f.path, f.line)]
        text = (root / loop.path).read_text(encoding="utf-8")
        run_loop(lab, root, loop, text, by_path[loop.path], harness)


def shares(harness: Harness) -> list[dict[str, object]]:
    """Per mutation kind and overall: mutants, caught, missed, unparseable."""
    rows = []
    for name, code in [(k.name, k.code) for k in KINDS] + [("overall", "")]:
        mine = [o for o in harness.outcomes if name in ("overall", o.kind)]
        caught = sum(o.status == "caught" for o in mine)
        missed = sum(o.status == "missed" for o in mine)
        rows.append({"kind": name, "code": code, "caught": caught, "missed": missed,
                     "unparseable": sum(o.status == "unparseable" for o in mine),
                     "share": caught / (caught + missed) if caught + missed else None})
    return rows


def report(harness: Harness) -> str:
    """The text report: the table of shares, the misses and the unclean originals."""
    out = [f"correct loops with anchors: {harness.loops}, mutants: {len(harness.outcomes)}", "",
           "| kind | code | caught | missed | unparseable | share caught |",
           "| --- | --- | ---: | ---: | ---: | ---: |"]
    for r in shares(harness):
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
    args = parser.parse_args(argv)
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
            run_package(lab, root, harness)
    except SourceError as exc:
        print(f"mutate: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"loops": harness.loops, "shares": shares(harness),
                          "outcomes": [asdict(o) for o in harness.outcomes],
                          "unclean_originals": harness.dirty}, indent=2))
    else:
        print(report(harness))
    return 0


if __name__ == "__main__":
    sys.exit(main())
