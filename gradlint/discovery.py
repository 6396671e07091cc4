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


def discover(paths: list[Path], path_filter: PathFilter | None = None,
             warnings: list[str] | None = None) -> list[Path]:
    """Files to check: named files as given, folders walked for Python sources and notebooks, sorted.

    A named path that does not exist is returned as is; reading it reports the I/O error.
    Without ``path_filter`` the default folders are skipped; with one, it decides what a walk
    skips, and named paths are dropped only when it force-excludes them. Nothing named is
    skipped silently: ``warnings`` (if given) receives one line per named path that is
    excluded or whose walk found only excluded files, and per folder that cannot be read.
    """
    found: dict[str, Path] = {}
    said = warnings if warnings is not None else []
    for path in paths:
        if path_filter is not None and path_filter.explicitly_excluded(path):
            said.append(f"{path.as_posix()} is excluded by the configuration (force-exclude): not checked")
            continue
        if is_folder(path):
            files, excluded = _walk(path, path_filter, said)
            if excluded and not files:
                said.append(f"{path.as_posix()}: nothing checked: what it holds is excluded "
                            "(.gitignore or exclude patterns)")
            for file in files:
                found.setdefault(os.path.normpath(file), file)
        else:
            found.setdefault(os.path.normpath(path), path)
    return [found[key] for key in sorted(found)]


def _walk(root: Path, path_filter: PathFilter | None, warnings: list[str]) -> tuple[list[Path], bool]:
    """The source files under ``root`` (in no particular order), like ``os.walk`` without
    following symlinked folders, but with the file types ``os.scandir`` already knows: no
    ``stat`` per file; and whether the filter excluded a source file or a folder (other
    than the version-control, cache and build folders always skipped)."""
    files: list[Path] = []
    excluded = False
    folders = [root]
    while folders:
        base = folders.pop()
        try:
            with os.scandir(base) as scan:
                entries = list(scan)
        except OSError as exc:  # skipped, as os.walk does, but said
            warnings.append(f"cannot read folder {base.as_posix()}: {exc.strerror or exc}: skipped")
            continue
        for entry in entries:
            if _is_dir(entry):
                folder = base / entry.name
                if entry.is_symlink():
                    continue
                if path_filter is None:
                    skipped = is_skipped_dir(folder)
                elif (folder / "pyvenv.cfg").is_file():
                    skipped = True
                else:
                    skipped = path_filter.excluded(folder, is_dir=True)
                    excluded = excluded or (skipped and entry.name not in SKIPPED_DIRS)
                if not skipped:
                    folders.append(folder)
            elif entry.name.endswith(SOURCE_SUFFIXES) and _is_file(entry):
                file = base / entry.name
                if path_filter is None or not path_filter.excluded(file, is_dir=False):
                    files.append(file)
                else:
                    excluded = True
    return files, excluded


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
