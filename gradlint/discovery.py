"""Find the Python files to check under the paths the user names."""

from __future__ import annotations

import os
from pathlib import Path

SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", ".bzr", "__pycache__", "build", "dist", "node_modules", "site-packages",
    ".tox", ".nox", ".venv", "venv", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".gradlint_cache",
    ".eggs", "_build", "buck-out",
})
SOURCE_SUFFIXES = (".py", ".pyi")


def is_skipped_dir(path: Path) -> bool:
    """Version-control, cache and build folders, and virtualenvs (they hold pyvenv.cfg)."""
    return path.name in SKIPPED_DIRS or (path / "pyvenv.cfg").is_file()


def discover(paths: list[Path]) -> list[Path]:
    """Files to check: named files as given, folders walked for Python sources, sorted.

    A named path that does not exist is returned as is; reading it reports the I/O error.
    """
    found: dict[str, Path] = {}
    for path in paths:
        if path.is_dir():
            for file in _walk(path):
                found.setdefault(os.path.normpath(file), file)
        else:
            found.setdefault(os.path.normpath(path), path)
    return [found[key] for key in sorted(found)]


def _walk(root: Path) -> list[Path]:
    files: list[Path] = []
    for folder, dirs, names in os.walk(root, followlinks=False):
        base = Path(folder)
        dirs[:] = sorted(d for d in dirs if not is_skipped_dir(base / d))
        files.extend(base / n for n in sorted(names) if n.endswith(SOURCE_SUFFIXES) and (base / n).is_file())
    return files
