"""``--target-version``: code written for a newer Python than the one gradlint runs on.

gradlint reads code with the running Python's ``ast``; syntax added later (``type X = ...``,
``def f[T]()``, PEP 695 on Python < 3.12) is a syntax error to it. When the target version is
newer than the running Python and libcst's parser, told that version, accepts the text, the
file is valid code gradlint cannot analyse here: no GL000, and no findings (precision first).
"""

from __future__ import annotations

import sys

from gradlint.settings import Settings


def newer_syntax(source: str, settings: Settings) -> bool:
    """Whether ``source``, which the running Python rejects, parses for the target version
    (only when that version is newer than the running Python)."""
    target = settings.target_version
    if target is None or target <= sys.version_info[:2]:
        return False
    import libcst as cst

    try:
        cst.parse_module(source, config=cst.PartialParserConfig(python_version=f"{target[0]}.{target[1]}"))
    except (cst.ParserSyntaxError, RecursionError, ValueError):
        return False
    return True
