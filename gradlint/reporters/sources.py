"""Source text for the ``full`` format: files read once, notebook cells by number."""

from __future__ import annotations

import re

from gradlint.notebook import cell_text
from gradlint.source import SourceError, decode, read_source_file

_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # what Python counts as a line break (not form feeds)


class SourceLines:
    """The lines of each reported file (or notebook cell), read lazily and kept for the run.

    ``preloaded`` holds texts already in memory by display path (stdin).
    """

    def __init__(self, preloaded: dict[str, str] | None = None) -> None:
        self._texts: dict[str, str | None] = dict(preloaded or {})
        self._lines: dict[tuple[str, int | None], list[str] | None] = {}

    def _text(self, path: str) -> str | None:
        if path not in self._texts:
            try:
                data = read_source_file(path)
                self._texts[path] = data.decode("utf-8-sig") if path.endswith(".ipynb") else decode(data).text
            except (OSError, SourceError, UnicodeDecodeError):
                self._texts[path] = None
        return self._texts[path]

    def lines(self, path: str, cell: int | None = None) -> list[str] | None:
        """The lines (without line endings) of ``path``, or of its cell ``cell``."""
        key = (path, cell)
        if key not in self._lines:
            text = self._text(path)
            if text is not None and cell is not None:
                text = cell_text(text, cell)
            lines = _LINE_BREAK.split(text) if text is not None else None
            if lines and len(lines) > 1 and lines[-1] == "":
                lines.pop()  # a final line break does not start another line
            self._lines[key] = lines
        return self._lines[key]

    def text(self, path: str, cell: int | None = None) -> str | None:
        """The whole text of ``path`` (or of its cell), line endings kept."""
        text = self._text(path)
        if text is not None and cell is not None:
            return cell_text(text, cell)
        return text
