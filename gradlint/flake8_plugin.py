"""A flake8 plugin (entry point ``flake8.extension`` under ``GL``): gradlint's findings in flake8.

Each file is linted with the settings ``gradlint check`` would use for it (its nearest
configuration, per-file ignores included), so the codes, lines and columns are the CLI's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from gradlint import __version__

Report = tuple[int, int, str, type]


class Plugin:
    """flake8 calls ``run()`` once per file with its lines (``tree`` is requested but unused:
    gradlint parses the units it needs itself)."""

    name = "gradlint"
    version = __version__

    def __init__(self, tree: Any, filename: str, lines: Sequence[str]) -> None:
        self._filename = filename
        self._lines = lines

    def run(self) -> Iterator[Report]:
        from gradlint.config import settings_for
        from gradlint.engine import lint_source
        from gradlint.settings import SettingsError

        path = Path(self._filename)
        try:
            settings = settings_for(path if path.name != "-" else Path("stdin.py"))
        except SettingsError as exc:
            yield 1, 0, f"GL000 gradlint configuration error: {exc}", type(self)
            return
        for diagnostic in lint_source("".join(self._lines), self._filename, settings):
            # flake8 takes 0-based columns and shows them 1-based, as gradlint does.
            yield diagnostic.line, diagnostic.column - 1, f"{diagnostic.code} {diagnostic.message}", type(self)
