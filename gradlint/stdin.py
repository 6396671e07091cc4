"""``gradlint check - --stdin-filename path.py``: lint (and fix) text piped in by an editor."""

from __future__ import annotations

from dataclasses import dataclass

from gradlint.diagnostics import Diagnostic
from gradlint.engine import lint_bytes
from gradlint.fixer import fix_source
from gradlint.notebook import NotebookError, fix_notebook, lint_notebook
from gradlint.settings import Settings
from gradlint.source import SourceError, decode, encode


@dataclass
class StdinResult:
    """The diagnostics of the piped text, the text itself (for the ``full`` format) and,
    when fixing, the bytes to write back to stdout."""

    diagnostics: list[Diagnostic]
    text: str
    output: bytes | None = None
    fixed: int = 0  # problems the fix resolved (``diagnostics`` are what remains)


def check_stdin(data: bytes, display: str, settings: Settings, *, fix: bool = False,
                unsafe: bool = False) -> StdinResult:
    """Lint ``data`` as the file ``display`` (a notebook when it ends in ``.ipynb``); with
    ``fix``, also return the fixed bytes (the input unchanged when nothing applies)."""
    if display.endswith(".ipynb"):
        return _notebook(data, display, settings, fix, unsafe)
    try:
        decoded = decode(data)
    except SourceError:
        return StdinResult(lint_bytes(data, display, settings), "", data if fix else None)
    if not fix:
        return StdinResult(lint_bytes(data, display, settings), decoded.text)
    result = fix_source(decoded.text, display, settings, unsafe)
    try:
        output = encode(decoded, result.text)
    except UnicodeEncodeError:
        return StdinResult(lint_bytes(data, display, settings), decoded.text, data)
    return StdinResult(result.remaining, result.text, output, len(result.fixed))


def _notebook(data: bytes, display: str, settings: Settings, fix: bool, unsafe: bool) -> StdinResult:
    if not fix:
        return StdinResult(lint_notebook(data, display, settings), data.decode("utf-8", "replace"))
    try:
        result = fix_notebook(data.decode("utf-8-sig"), display, settings, unsafe)
    except (UnicodeDecodeError, NotebookError):
        return StdinResult(lint_notebook(data, display, settings), "", data)
    output = result.text.encode("utf-8") if result.fixed else data
    return StdinResult(result.remaining, result.text, output, len(result.fixed))
