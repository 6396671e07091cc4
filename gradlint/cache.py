"""The result cache: a file's diagnostics (with fixes) keyed on what decides them.

Like ruff's cache, it lives in ``.gradlint_cache/`` at the project root (the nearest folder
from the current one holding ``pyproject.toml`` or ``.git``, else the current folder), or in
``--cache-dir`` / ``$GRADLINT_CACHE_DIR``. The folder carries a ``CACHEDIR.TAG`` and a
``.gitignore`` of ``*`` so backup tools and git leave it alone.

An entry's key is a SHA-256 of the file's bytes (its *digest*), the effective settings of
the file, whether it is a notebook, the root folder of its project (its helpers are read
from there), and the *build*: gradlint's version, a hash of gradlint's own source files (a
development edit invalidates everything), the Python version (its parser judges syntax) and
the installed libcst. Entries hold the diagnostics without the file's path, so a file moved
or copied within its project still hits; the path is filled in on reading. An entry also
records the digest of every other project module the analysis read (a helper a loop calls):
when one of them has changed, the entry is a miss, so editing a helper re-lints the files
that use it.

One JSON file per entry, written to a temporary name and renamed into place, so two runs at
the same time never see a torn entry; a missing, unreadable or malformed entry is a miss.
Writes are best-effort: a read-only or full disk only costs speed.

A *file index* (like git's) lets a warm run skip reading unchanged files: it remembers, per
path, what the runner learnt from the bytes (their digest, the text filters' answers) with
the file's size, modification and change times, inode and device. A file whose status
differs is read again. Only files settled for :data:`SETTLED_NS` are remembered, so a write
within the file system's timestamp granularity cannot hide behind an unchanged status.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import importlib.util
import json
import os
import stat
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gradlint import __version__
from gradlint.diagnostics import Diagnostic, Fix, Severity, Span
from gradlint.settings import Settings
from gradlint.source import read_source_file

CACHE_DIR_NAME = ".gradlint_cache"
CACHE_DIR_ENV = "GRADLINT_CACHE_DIR"
FORMAT = 3
"""Version of the entry layout; part of the build key."""
SETTLED_NS = 2_000_000_000
"""A file is remembered in the file index only when its last change is this much older
than the run (two seconds: coarser than any common file system's timestamps)."""

CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by gradlint.\n"
    "# For information about cache directory tags, see:\n"
    "#\thttps://bford.info/cachedir/\n"
)
_PROJECT_MARKERS = ("pyproject.toml", ".git")


class CacheError(Exception):
    """The cache folder cannot be used as asked (reported in one line, exit 2)."""


def project_root(start: Path | None = None) -> Path:
    """The nearest folder from ``start`` (default: the current one) upward holding
    ``pyproject.toml`` or ``.git``; ``start`` itself when there is none."""
    here = (start or Path.cwd()).absolute()
    for folder in (here, *here.parents):
        if any((folder / marker).exists() for marker in _PROJECT_MARKERS):
            return folder
    return here


def default_cache_dir(start: Path | None = None) -> Path:
    """``$GRADLINT_CACHE_DIR`` if set, else ``.gradlint_cache`` at the project root."""
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env).expanduser()
    return project_root(start) / CACHE_DIR_NAME


def build_id() -> str:
    """What, besides a file and its settings, decides its diagnostics: gradlint's version
    and source, the entry format, the Python version and the installed libcst."""
    digest = hashlib.sha256(f"{__version__}\0{FORMAT}\0{sys.version}\0".encode())
    package = Path(__file__).resolve().parent
    for source in sorted(package.rglob("*.py")):
        digest.update(source.relative_to(package).as_posix().encode() + b"\0")
        digest.update(source.read_bytes())
    spec = importlib.util.find_spec("libcst")  # located, not imported
    if spec is not None and spec.origin:
        stat = os.stat(spec.origin)
        digest.update(f"\0{spec.origin}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:20]


def settings_token(settings: Settings) -> str:
    """A canonical text for ``settings`` (stable across processes, unlike ``hash``)."""
    return json.dumps(_canonical(settings), sort_keys=True, separators=(",", ":"))


def _canonical(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return _canonical(value.value)
    if isinstance(value, (set, frozenset)):
        return sorted((_canonical(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"cannot key the cache on a {type(value).__name__}")


def content_digest(data: bytes) -> str:
    """The digest of a file's bytes that entry keys are made of."""
    return hashlib.sha256(data).hexdigest()


def _status(status: os.stat_result) -> list[int]:
    return [status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_ino, status.st_dev]


def _entry(diagnostic: Diagnostic) -> dict[str, Any]:
    data = diagnostic.to_dict()
    del data["path"]
    return data


def _diagnostic(path: str, data: Any) -> Diagnostic:
    """The diagnostic an entry item holds; ValueError for an item of the wrong shape or types
    (a corrupt or foreign entry is a miss, never a wrong report)."""
    if not isinstance(data, dict):
        raise ValueError("not an entry item")
    fix = data.get("fix")
    cell = data.get("cell")
    if not (_whole(data, "line", "column", "end_line", "end_column") and _text(data, "code", "name", "message")
            and (fix is None or _fix_shaped(fix)) and (cell is None or _whole(data, "cell"))):
        raise ValueError("malformed entry item")
    span = Span(data["line"], data["column"], data["end_line"], data["end_column"])
    detail = data.get("detail")
    if detail is not None and not isinstance(detail, str):
        raise ValueError("malformed entry item")
    return Diagnostic(path, span, data["code"], data["name"], Severity(data["severity"]), data["message"],
                      Fix.from_dict(fix) if fix is not None else None, cell, detail)


def _foreign(data: Any) -> Diagnostic:
    """A diagnostic an entry holds for another module, with that module's path."""
    if not isinstance(data, dict) or not _text(data, "path"):
        raise ValueError("malformed entry item")
    return _diagnostic(data["path"], data)


def _whole(data: dict[str, Any], *keys: str) -> bool:
    return all(type(data.get(key)) is int for key in keys)


def _text(data: dict[str, Any], *keys: str) -> bool:
    return all(isinstance(data.get(key), str) for key in keys)


def _fix_shaped(fix: Any) -> bool:
    """Whether ``fix`` has the JSON shape of :meth:`Fix.to_dict` (the applicability is
    checked by its enum)."""
    return (isinstance(fix, dict) and _text(fix, "message") and isinstance(fix.get("edits"), list)
            and all(isinstance(e, dict) and _whole(e, "line", "column", "end_line", "end_column")
                    and _text(e, "content") for e in fix["edits"]))


class Cache:
    """Diagnostics by content key under one cache folder (see the module documentation)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._build = build_id()
        self._entries = directory / f"v{FORMAT}-{self._build}"
        self._tokens: dict[Settings, bytes] = {}
        self._ready = False
        self._started = time.time_ns()
        self._files: dict[str, list[Any]] | None = None
        self._files_changed = False
        self._digests: dict[str, str | None] = {}  # module path -> digest now, for the entries' uses
        self._absences = _Absences()  # the same run's look-ups of those modules

    def key(self, digest: str, settings: Settings, notebook: bool, project: str = "") -> str:
        """The entry key of a file with bytes of ``digest`` (:func:`content_digest`) under its
        settings, in the project under folder ``project`` (whose modules it may read)."""
        token = self._tokens.get(settings)
        if token is None:
            token = self._tokens[settings] = settings_token(settings).encode()
        key = hashlib.sha256(token)
        key.update(b"\0notebook\0" if notebook else b"\0module\0")
        key.update(digest.encode())
        key.update(b"\0" + project.encode("utf-8", "surrogatepass"))
        return key.hexdigest()

    def _index(self) -> dict[str, list[Any]]:
        if self._files is None:
            try:
                loaded = json.loads(read_source_file(self._entries / "files.json"))
                self._files = loaded if isinstance(loaded, dict) else {}
            except (OSError, ValueError):
                self._files = {}
        return self._files

    def recall(self, absolute: str, status: os.stat_result) -> dict[str, Any] | None:
        """What the file index remembers of the file at the ``absolute`` path (as
        ``os.path.abspath`` gives it), if its status is unchanged."""
        found = self._index().get(absolute)
        if isinstance(found, list) and len(found) == 2 and found[0] == _status(status) and isinstance(found[1], dict):
            return found[1]
        return None

    def remember(self, absolute: str, before: os.stat_result, after: os.stat_result, facts: dict[str, Any]) -> None:
        """Note ``facts`` (JSON values) about the bytes of the file at the ``absolute`` path, read
        between the statuses ``before`` and ``after``; a file that changed meanwhile or is not
        settled is not noted."""
        settled = self._started - SETTLED_NS
        status = _status(before)
        if status == _status(after) and before.st_mtime_ns < settled and before.st_ctime_ns < settled:
            self._index()[absolute] = [status, facts]
            self._files_changed = True

    def save_index(self) -> None:
        """Write the file index if it changed (atomically; errors are ignored); the end of a
        run's triage, so the next run reads the modules its entries used again."""
        self._digests.clear()
        self._absences = _Absences()
        if self._files_changed:
            self._files_changed = False
            self._write(self._entries / "files.json", json.dumps(self._files, separators=(",", ":")))

    def _path(self, key: str) -> Path:
        return self._entries / key[:2] / f"{key}.json"

    def get(self, key: str, path: str) -> list[Diagnostic] | None:
        """The cached diagnostics of ``key``, reported at ``path`` (those the file's loops gave
        in other project modules at those modules' absolute paths, after the file's own); None
        on a miss, and when a project module the result was computed from has changed since."""
        try:
            stored = json.loads(read_source_file(self._path(key)))
            items = stored["diagnostics"] if isinstance(stored, dict) else None
            elsewhere = stored.get("elsewhere", []) if isinstance(stored, dict) else None
            if not isinstance(items, list) or not isinstance(elsewhere, list) or not self._unchanged(stored.get("uses", {})):
                return None
            return [_diagnostic(path, item) for item in items] + [_foreign(item) for item in elsewhere]
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
            return None

    def _unchanged(self, uses: dict[str, str | None]) -> bool:
        """Whether every module in ``uses`` still has its recorded digest (None: still absent);
        each module is read once per cache object (one run)."""
        if not uses:
            return True
        from gradlint.project.index import module_digest  # only for an entry that read other modules
        from gradlint.project.layout import LISTING, listing_digest, python_files

        digests = self._digests
        for path, digest in uses.items():
            if path not in digests:
                if digest is not None and digest.startswith(LISTING):  # a folder the lint searched
                    digests[path] = listing_digest(python_files(Path(path)))
                else:
                    digests[path] = None if self._absences.absent(path) else module_digest(Path(path))
            if digests[path] != digest:
                return False
        return True

    def put(self, key: str, diagnostics: list[Diagnostic], uses: Mapping[Path, str | None] | None = None,
            elsewhere: list[Diagnostic] | None = None) -> None:
        """Store the diagnostics of ``key``, computed from the project modules ``uses`` (path:
        content digest, None for a module that does not exist), and those its loops gave in
        other modules (``elsewhere``, at absolute paths), atomically; errors are ignored."""
        entry: dict[str, Any] = {"diagnostics": [_entry(d) for d in diagnostics]}
        if uses:
            entry["uses"] = {str(path): digest for path, digest in uses.items()}
        if elsewhere:
            entry["elsewhere"] = [d.to_dict() for d in elsewhere]
        self._write(self._path(key), json.dumps(entry, separators=(",", ":")))

    def _write(self, target: Path, text: str) -> None:
        """Write ``text`` to ``target`` through a temporary file and a rename; errors are ignored."""
        import tempfile  # a run the cache answers writes nothing

        try:
            self._prepare()
            target.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(prefix=f".{target.stem[:16]}-", suffix=".tmp", dir=target.parent)
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    out.write(text)
                os.replace(temporary, target)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError:
            return

    def _prepare(self) -> None:
        """Create the cache folder with its tag and .gitignore; drop other builds' entries."""
        if self._ready:
            return
        self._ready = True
        fresh = not self._entries.is_dir()
        self.directory.mkdir(parents=True, exist_ok=True)
        for name, content in (("CACHEDIR.TAG", CACHEDIR_TAG), (".gitignore", "# Created by gradlint.\n*\n")):
            marker = self.directory / name
            if not marker.exists():
                marker.write_text(content, encoding="utf-8")
        if fresh:
            import shutil

            for old in self.directory.glob("v*-*"):
                if old != self._entries and old.is_dir():
                    shutil.rmtree(old, ignore_errors=True)


class _Absences:
    """Whether nothing is at a path, for the modules cached entries used: most are files
    their imports looked for and did not find, many in folders that do not exist either.
    A path under a folder found missing (or no folder) is absent with no look-up of its own;
    otherwise it takes one ``stat``, and each folder above it one, once."""

    def __init__(self) -> None:
        self._folders: dict[str, bool] = {}

    def absent(self, path: str) -> bool:
        """Whether nothing is at ``path`` (an absent file has no digest)."""
        # POSIX resolves every folder of an absolute path in turn ("a/b/.." too): one that
        # cannot be found or is no folder leaves nothing below it.
        if _POSIX and path[:1] == "/":
            folder = path.rpartition("/")[0] or "/"
            found = self._folders.get(folder)
            if not (self._folder(folder) if found is None else found):
                return True
        try:
            os.stat(path)
        except OSError:
            return True
        return False

    def _folder(self, folder: str) -> bool:
        """Whether the absolute POSIX ``folder`` is a folder (its parents first)."""
        found = self._folders.get(folder)
        if found is None:
            parent = folder.rpartition("/")[0] or "/"
            if parent != folder and not self._folder(parent):
                found = False
            else:
                try:
                    found = stat.S_ISDIR(os.stat(folder).st_mode)
                except OSError:
                    found = False
            self._folders[folder] = found
        return found


_POSIX = os.name == "posix"


def clean(directory: Path) -> bool:
    """Remove the cache folder ``directory``; False if there is none.

    Raises :class:`CacheError` for a folder that is not a gradlint cache (no ``CACHEDIR.TAG``
    written by gradlint), so a mistyped ``--cache-dir`` never deletes anything else.
    """
    if not directory.exists():
        return False
    tag = directory / "CACHEDIR.TAG"
    try:
        ours = directory.is_dir() and read_source_file(tag) == CACHEDIR_TAG.encode()
    except OSError:
        ours = False
    if not ours:
        raise CacheError(f"{directory} is not a gradlint cache folder (no gradlint CACHEDIR.TAG); not removing it")
    import shutil

    shutil.rmtree(directory)
    return True
