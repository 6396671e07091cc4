"""The fast path against the full analysis on the real corpus (issue 7).

    python benchmarks/fast_path_check.py                 # the benchmark corpus
    python benchmarks/fast_path_check.py trl skorch      # these packages of corpus.py
    python benchmarks/fast_path_check.py --set all       # every package

For every ``.py`` file that passes the text filter, lints its bytes twice in process, every
rule selected: as ``gradlint check`` does (``lint_bytes``) and with every shortcut off
(``full=True``: every function and top-level statement parsed with libcst). Prints each file
where they differ and the findings only one of them has; exits 1 if any. Files failing the
text filter are not compared: there the spec reports nothing but the full analysis may
report a syntax error. ``tests/test_fast_path.py`` does the same on the fixtures.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import corpus
from common import REPO

sys.path.insert(0, str(REPO))

from gradlint.catalogue import CATALOGUE  # noqa: E402
from gradlint.engine import lint_bytes  # noqa: E402  (this checkout first)
from gradlint.prefilter import might_hold_training_loop_bytes  # noqa: E402
from gradlint.settings import Settings  # noqa: E402

EVERY_RULE = Settings(select=frozenset(CATALOGUE))


def _line(diagnostic: dict) -> str:
    return f"{diagnostic['line']}:{diagnostic['column']} {diagnostic['code']} {diagnostic['message'][:90]}"


def main(argv: Sequence[str] | None = None) -> int:
    """Compare, print the differences, exit 1 if there are any."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="packages of corpus.py (default: the set)")
    parser.add_argument("--set", choices=sorted(corpus.SETS), default="bench", help="default: bench")
    args = parser.parse_args(argv)
    dirs = corpus.ensure(args.names or list(corpus.SETS[args.set]))
    start = time.perf_counter()
    compared = differing = 0
    for path in corpus.python_files(dirs):
        data = path.read_bytes()
        if not might_hold_training_loop_bytes(data):
            continue
        compared += 1
        fast = [d.to_dict() for d in lint_bytes(data, str(path), EVERY_RULE)]
        full = [d.to_dict() for d in lint_bytes(data, str(path), EVERY_RULE, full=True)]
        if fast != full:
            differing += 1
            print(path)
            for label, mine, other in (("full only", full, fast), ("fast only", fast, full)):
                for diagnostic in mine:
                    if diagnostic not in other:
                        print(f"  {label}: {_line(diagnostic)}")
    print(f"{compared} files compared, {differing} differ ({time.perf_counter() - start:.0f} s)")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
