"""File-system questions that never raise: a path that cannot be looked at (permission
denied, a symlink loop) is neither a folder nor a file here, and reading it later reports
the I/O error for that one file instead of stopping the run."""

from __future__ import annotations

from pathlib import Path

SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", ".bzr", "__pycache__", "build", "dist", "node_modules", "site-packages",
    ".tox", ".nox", ".venv", "venv", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".gradlint_cache",
    ".eggs", "_build", "buck-out",
})
"""Folders never walked unless configured otherwise: version control, caches, builds,
virtualenvs (discovery skips them; they are the default ``exclude`` patterns)."""


def is_folder(path: Path) -> bool:
    """``path.is_dir()``, False when the path cannot be looked at."""
    try:
        return path.is_dir()
    except OSError:
        return False


def is_file(path: Path) -> bool:
    """``path.is_file()``, False when the path cannot be looked at."""
    try:
        return path.is_file()
    except OSError:
        return False
