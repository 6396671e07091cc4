"""Where a project starts and which file a module name means inside it.

The project of a file is the folder tree under the nearest ``pyproject.toml``, ``gradlint.toml``,
``.gradlint.toml`` or ``.git`` above it (the spec's "Scope of the analysis"), or the file's own
folder when there is none. Module names are
looked up the way Python would find them when the code runs: next to the importing script
first (its folder is ``sys.path[0]``), then from the project root and its ``src/`` folder, then
from the folder that holds the importer's top-level package (``pkg/a/b.py`` importing ``pkg.c``
runs with ``pkg`` importable, wherever the package sits in the project).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

ROOT_MARKERS = ("pyproject.toml", "gradlint.toml", ".gradlint.toml", ".git")

MAX_LISTED_FILES = 5000
"""How many Python files :func:`python_files` lists at most (a larger project: no listing)."""

LISTING = "listing:"
"""The prefix of a :func:`listing_digest`: a cached result recorded it for a folder it searched."""

_SKIPPED_FOLDERS = frozenset({"node_modules", "site-packages", "venv", "build", "dist", "__pycache__"})


def project_root(path: Path) -> Path:
    """The nearest folder at or above ``path``'s folder that holds a root marker (else that folder)."""
    folder = path.absolute().parent
    return _marked_root(folder) or folder


@lru_cache(maxsize=1024)
def _marked_root(folder: Path) -> Path | None:
    """The nearest folder at or above ``folder`` that holds a root marker (None: none does);
    kept per folder, so the files of one tree share their parents' answers."""
    if any((folder / marker).exists() for marker in ROOT_MARKERS):
        return folder
    return None if folder.parent == folder else _marked_root(folder.parent)


def module_file(base: Path, dotted: str, absent: set[Path] | None = None) -> Path | None:
    """The file of module ``dotted`` under ``base``: ``a/b.py`` or ``a/b/__init__.py``; the
    files looked for and not found are added to ``absent`` (one appearing later would change
    the answer)."""
    if not dotted:
        return _package_init(base, absent)
    target = base.joinpath(*dotted.split("."))
    as_module = target.with_name(target.name + ".py")
    if as_module.is_file():
        return as_module
    if absent is not None:
        absent.add(as_module)
    return _package_init(target, absent)


def _package_init(folder: Path, absent: set[Path] | None = None) -> Path | None:
    init = folder / "__init__.py"
    if init.is_file():
        return init
    if absent is not None:
        absent.add(init)
    return None


def search_bases(importer: Path, root: Path) -> Iterator[Path]:
    """The folders an absolute import in ``importer`` is looked up from, in order."""
    seen: set[Path] = set()
    for base in (importer.absolute().parent, root, root / "src", _package_parent(importer.absolute().parent)):
        if base not in seen and base.is_dir() and within(base, root):
            seen.add(base)
            yield base


@lru_cache(maxsize=1024)
def _package_parent(folder: Path) -> Path:
    """The folder above the outermost package (a folder with an ``__init__.py``) that holds
    ``folder``; ``folder`` itself when it is no package."""
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        folder = folder.parent
    return folder


def within(path: Path, root: Path) -> bool:
    """Whether ``path`` lies in the project under ``root``."""
    try:
        path.absolute().relative_to(root)
    except ValueError:
        return False
    return True


def python_files(root: Path) -> list[Path] | None:
    """The Python files under ``root``, sorted (hidden and build folders left out); None past
    :data:`MAX_LISTED_FILES`."""
    files: list[Path] = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and d not in _SKIPPED_FOLDERS)
        files += [Path(folder, n) for n in sorted(names) if n.endswith(".py")]
        if len(files) > MAX_LISTED_FILES:
            return None
    return files


def listing_digest(files: list[Path] | None) -> str:
    """A digest of which Python files a folder holds (:func:`python_files`), so a cached result
    that searched the folder misses once a file appears or disappears there."""
    names = "\n".join(str(f) for f in files) if files is not None else "(too many)"
    return LISTING + hashlib.sha256(names.encode("utf-8", "surrogateescape")).hexdigest()
