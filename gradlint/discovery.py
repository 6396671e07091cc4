"""Find the Python files and notebooks to check under the paths the user names."""

from __future__ import annotations

import os
from pathlib import Path

from gradlint.exclusion import PathFilter
from gradlint.paths import SKIPPED_DIRS, is_folder

SOURCE_SUFFIXES = (".py", ".pyi", ".ipynb")


def is_skipped_dir(path: Path) -> bool:
    """Version-control, cache and build folders, and virtualenvs (they hold pyvenv.cfg)."""
    return path.name in SKIPPED_DIRS or (path / "pyvenv.cfg").is_file()


def discover(paths: list[Path], path_filter: PathFilter | None = None) -> list[Path]:
    """Files to check: named files as given, folders walked for Python sources and notebooks, sorted.

    A named path that does not exist is returned as is; reading it reports the I/O error.
    Without ``path_filter`` the default folders are skipped; with one, it decides what a walk
    skips, and named paths are dropped only when it force-excludes them.
    """
    found: dict[str, Path] = {}
    for path in paths:
        if path_filter is not None and path_filter.explicitly_excluded(path):
            continue
        if is_folder(path):
            for file in _walk(path, path_filter):
                found.setdefault(os.path.normpath(file), file)
        else:
            found.setdefault(os.path.normpath(path), path)
    return [found[key] for key in sorted(found)]


def _walk(root: Path, path_filter: PathFilter | None) -> list[Path]:
    """The source files under ``root`` (in no particular order), like ``os.walk`` without
    following symlinked folders, but with the file types ``os.scandir`` already knows: no
    ``stat`` per file."""
    files: list[Path] = []
    folders = [root]
    while folders:
        base = folders.pop()
        try:
            with os.scandir(base) as scan:
                entries = list(scan)
        except OSError:
            continue  # an unreadable folder is skipped, as os.walk does
        for entry in entries:
            if _is_dir(entry):
                folder = base / entry.name
                if entry.is_symlink():
                    continue
                if path_filter is None:
                    skipped = is_skipped_dir(folder)
                else:
                    skipped = (folder / "pyvenv.cfg").is_file() or path_filter.excluded(folder, is_dir=True)
                if not skipped:
                    folders.append(folder)
            elif entry.name.endswith(SOURCE_SUFFIXES) and _is_file(entry):
                file = base / entry.name
                if path_filter is None or not path_filter.excluded(file, is_dir=False):
                    files.append(file)
    return files


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _is_file(entry: os.DirEntry) -> bool:
    """A regular file (or a symlink to one); a symlink loop or a file that cannot be looked
    at is not walked into the run, as ``os.walk`` would skip it."""
    try:
        return entry.is_file()
    except OSError:
        return False
