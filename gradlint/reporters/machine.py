"""Machine-readable lists: ``json`` (one array) and ``json-lines`` (one object per line)."""

from __future__ import annotations

import json
from typing import TextIO

from gradlint.diagnostics import Diagnostic


def render_json(diagnostics: list[Diagnostic], out: TextIO) -> None:
    """A JSON list of diagnostic objects, sorted by path, cell, line, column, code."""
    json.dump([d.to_dict() for d in diagnostics], out, indent=2)
    out.write("\n")


def render_json_lines(diagnostics: list[Diagnostic], out: TextIO) -> None:
    """One compact JSON object per diagnostic per line."""
    for diagnostic in diagnostics:
        out.write(json.dumps(diagnostic.to_dict()) + "\n")
