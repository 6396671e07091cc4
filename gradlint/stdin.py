"""``gradlint check - --stdin-filename path.py``: what goes back to an editor that piped text in.

The piped bytes go through the runner like a file (:class:`gradlint.runner.Piped`); this
module turns the outcome into the text the report quotes and the bytes written to stdout.
"""

from __future__ import annotations

from gradlint.source import SourceError, decode
from gradlint.writer import FileFix


def report_text(data: bytes, notebook: bool, outcome: FileFix | None) -> str:
    """The text the report quotes: what fixing produced, else the bytes decoded as the
    analysis decodes them (empty when they are not text)."""
    if outcome is not None and (outcome.before or outcome.after):
        return outcome.after
    if notebook:
        return data.decode("utf-8", "replace")
    try:
        return decode(data).text
    except SourceError:
        return ""


def fixed_output(data: bytes, outcome: FileFix | None) -> bytes:
    """The bytes to write back: the fixed ones, else the input unchanged."""
    return outcome.output if outcome is not None and outcome.output is not None else data
