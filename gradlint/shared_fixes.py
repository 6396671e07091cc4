"""One fix, several findings: when rules report the same call and the fix of one also makes
another go away, that other finding gets the same fix. ``check`` then counts (``[*]``, the
fixable hint, ``--statistics``) what ``--fix`` resolves, and ``--fix`` counts each finding the
fix resolved, so a call reported by two rules is two problems in both."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from gradlint.diagnostics import Diagnostic, Fix
from gradlint.fix_text import apply_fixes


def share_fixes(diagnostics: list[Diagnostic], source: str, relint: Callable[[str], list[Diagnostic]]) -> list[Diagnostic]:
    """``diagnostics`` of ``source``, where a finding without a fix that shares its start with
    a fixed one gets that fix if applying it (``relint``: the diagnostics of the new text)
    leaves no such finding."""
    starts: dict[tuple[int, int, int], list[Diagnostic]] = {}
    for diagnostic in diagnostics:
        starts.setdefault((diagnostic.cell or 0, diagnostic.line, diagnostic.column), []).append(diagnostic)
    given: dict[int, Fix] = {}
    for group in starts.values():
        bare = [d for d in group if d.fix is None or not d.fix.edits]
        donors = [d for d in group if d.fix is not None and d.fix.edits]
        for donor in donors:
            if not bare:
                break
            assert donor.fix is not None
            left = {(d.code, d.message) for d in relint(apply_fixes(source, [donor.fix]))}
            for diagnostic in [d for d in bare if (d.code, d.message) not in left]:
                given[id(diagnostic)] = donor.fix
                bare.remove(diagnostic)
    return [replace(d, fix=given[id(d)]) if id(d) in given else d for d in diagnostics]
