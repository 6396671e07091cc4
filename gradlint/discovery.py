"""Find the Python files and notebooks to check under the paths the user names."""

from __future__ import annotations

import os
from pathlib import Path

from gradlint.exclusion import FolderRules, PathFilter
from gradlint.listing import Listing
from gradlint.paths import SKIPPED_DIRS, is_folder

SOURCE_SUFFIXES = (".py", ".pyi", ".ipynb")
VIRTUALENV_MARKER = "pyvenv.cfg"


def discover(paths: list[Path], path_filter: PathFilter | None = None,
             warnings: list[str] | None = None) -> list[Path]:
    """Files to check: named files as given, folders walked for Python sources and notebooks, sorted.

    A named path that does not exist is returned as is; reading it reports the I/O error.
    Without ``path_filter`` the default folders are skipped; with one, it decides what a walk
    skips, and named paths are dropped only when it force-excludes them. Nothing named is
    skipped silently: ``warnings`` (if given) receives one line per named path that is
    excluded or whose walk found only excluded files, and per folder that cannot be read.
    """
    found: dict[str, str | Path] = {}
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
    return [Path(found[key]) for key in sorted(found)]


def _walk(root: Path, path_filter: PathFilter | None, warnings: list[str]) -> tuple[list[str], bool]:
    """The source files under ``root`` (in no particular order, spelt from ``root`` as
    ``root / name / ...`` would be), like ``os.walk`` without following symlinked folders,
    but with the file types ``os.scandir`` already knows: no ``stat`` per file, and none per
    folder for a configuration, ignore or ``pyvenv.cfg`` file its listing lacks; and whether
    the filter excluded a source file or a folder (other than the version-control, cache and
    build folders always skipped). Paths are strings inside, folders' absolute paths the
    only ``Path`` objects (one per folder, for the filter)."""
    files: list[str] = []
    excluded = False
    top = os.fspath(root)
    folders: list[tuple[str, Path, FolderRules | None]] = [(top, root.absolute(), None)]
    while folders:
        base, absolute, parent = folders.pop()
        try:
            with os.scandir(base) as scan:
                entries = list(scan)
        except OSError as exc:  # skipped, as os.walk does, but said (unless a virtualenv: skipped anyway)
            if base is top or not _holds_virtualenv_marker(base):
                warnings.append(f"cannot read folder {Path(base).as_posix()}: {exc.strerror or exc}: skipped")
            continue
        listing = Listing(entry.name for entry in entries)
        if base is not top and _holds_virtualenv_marker(base, listing):
            continue
        rules = path_filter.rules(absolute, listing, parent) if path_filter is not None else None
        for entry in entries:
            name = entry.name
            if _is_dir(entry):
                if entry.is_symlink():
                    continue
                folder = name if base == "." else os.path.join(base, name)
                if rules is None:
                    if name in SKIPPED_DIRS:
                        continue
                elif rules.excludes(name, True):
                    excluded = excluded or (name not in SKIPPED_DIRS and not _holds_virtualenv_marker(folder))
                    continue
                folders.append((folder, absolute / name, rules))
            elif name.endswith(SOURCE_SUFFIXES) and _is_file(entry):
                if rules is None or not rules.excludes(name, False):
                    files.append(name if base == "." else os.path.join(base, name))
                else:
                    excluded = True
    return files, excluded


def _holds_virtualenv_marker(folder: str, listing: Listing | None = None) -> bool:
    """Whether ``folder`` is a virtualenv (it holds a file ``pyvenv.cfg``); never walked, and
    not counted as excluded. ``listing`` (what it holds, if known) spares the look-up."""
    return (listing is None or listing.may_hold(VIRTUALENV_MARKER)) and os.path.isfile(
        os.path.join(folder, VIRTUALENV_MARKER))


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
