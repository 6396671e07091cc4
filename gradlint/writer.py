"""Fixing files: from a file's bytes to the fixed bytes, and the atomic write that puts them back.

:func:`fix_data` decodes the bytes as Python does (a notebook as UTF-8 JSON), runs the pure
fixpoint (:func:`gradlint.fixer.fix_source`, cell by cell for a notebook) and encodes the
result with the file's own encoding and BOM. :func:`write_atomic` replaces a file through a
temporary file and a rename, keeping its permissions. The runner reads, budgets and calls
both (:mod:`gradlint.runner`).
"""

from __future__ import annotations

import codecs
import os
import stat
import tempfile
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from gradlint.diagnostics import Diagnostic
from gradlint.fixer import Reverted, fix_source
from gradlint.settings import Settings
from gradlint.source import SourceError, decode, encode


@dataclass
class FileFix:
    """What fixing one file did: its text before and after, the diagnostics fixed and
    remaining, fixes reverted, the bytes to write (None: nothing to write), and why it was
    left unchanged (if it was)."""

    path: Path
    display: str
    before: str = ""
    after: str = ""
    fixed: list[Diagnostic] = field(default_factory=list)
    remaining: list[Diagnostic] = field(default_factory=list)
    reverted: list[Reverted] = field(default_factory=list)
    error: str | None = None
    output: bytes | None = None

    @property
    def changed(self) -> bool:
        return self.error is None and self.after != self.before

    def unchanged(self, reason: str, remaining: list[Diagnostic]) -> None:
        """Give up the fixes (``reason`` says why); ``remaining`` is what the file, as it is, has."""
        self.error = f"not fixed: {reason}"
        self.after, self.fixed, self.output, self.remaining = self.before, [], None, remaining


def fix_data(data: bytes, path: Path, display: str, settings: Settings, unsafe: bool, notebook: bool) -> FileFix | None:
    """Fix the bytes of one file (a notebook's code cells); None when they are not text the
    fixer can work on (undecodable, not a notebook): then they are only linted."""
    return _fix_notebook(data, path, display, settings, unsafe) if notebook else _fix_python(
        data, path, display, settings, unsafe)


def _fix_python(data: bytes, path: Path, display: str, settings: Settings, unsafe: bool) -> FileFix | None:
    try:
        decoded = decode(data)
    except SourceError:
        return None
    result = fix_source(decoded.text, display, settings, unsafe)
    outcome = FileFix(path, display, decoded.text, result.text, result.fixed, result.remaining, result.reverted)
    if outcome.changed:
        try:
            outcome.output = encode(decoded, result.text)
        except UnicodeEncodeError:
            outcome.unchanged(f"the fixed text cannot be encoded as {decoded.encoding}", result.initial)
    return outcome


def _fix_notebook(data: bytes, path: Path, display: str, settings: Settings, unsafe: bool) -> FileFix | None:
    from gradlint.notebook import NotebookError, fix_notebook

    bom = codecs.BOM_UTF8 if data.startswith(codecs.BOM_UTF8) else b""
    try:
        raw = data[len(bom):].decode("utf-8")
        result = fix_notebook(raw, display, settings, unsafe)
    except (UnicodeDecodeError, NotebookError):
        return None
    outcome = FileFix(path, display, raw, result.text, result.fixed, result.remaining)
    if result.error is not None:
        outcome.unchanged(result.error, result.remaining)
    elif outcome.changed:
        outcome.output = bom + result.text.encode("utf-8")
    return outcome


TEMPORARY_SUFFIX = ".gradlint-tmp"


def write_atomic(path: Path, data: bytes, expected: bytes | None = None) -> None:
    """Replace ``path`` with ``data`` through a temporary file in the same folder (fsync,
    then rename), keeping its permissions, owner and group (where allowed) and extended
    attributes (ACLs among them). A file with more than one hard link is rewritten in place
    instead, so every link sees the new text. Refuses a read-only file and, with
    ``expected``, a file that changed since it was read: checked again immediately before
    the replacement. Temporaries left by a killed run are removed on the next write there."""
    target = Path(os.path.realpath(path))
    info = target.stat()
    writable = info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    if not writable or not os.access(target, os.W_OK):
        raise PermissionError(13, "file is read-only", str(path))
    _check_unchanged(target, expected, path)
    _remove_stale_temporaries(target)
    if info.st_nlink > 1:
        _rewrite_in_place(target, data, expected, path)
        return
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.{os.getpid()}.",
                                     suffix=TEMPORARY_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        _copy_metadata(info, target, temporary)
        _check_unchanged(target, expected, path)
        os.replace(temporary, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary)
        raise
    _sync_folder(target.parent)


def _check_unchanged(target: Path, expected: bytes | None, path: Path) -> None:
    if expected is not None and target.read_bytes() != expected:
        raise OSError(0, "file changed while it was being fixed", str(path))


def _copy_metadata(info: os.stat_result, source: Path, temporary: str) -> None:
    """Give ``temporary`` the mode, owner, group and extended attributes of ``source``.
    Changing the owner needs privileges: without them the file is the writer's, as an
    editor's save would make it."""
    if (info.st_uid, info.st_gid) != (os.geteuid(), os.getegid()):
        with suppress(OSError, AttributeError):
            os.chown(temporary, info.st_uid, info.st_gid)
    os.chmod(temporary, stat.S_IMODE(info.st_mode))  # after chown, which may clear set-id bits
    listxattr = getattr(os, "listxattr", None)
    if listxattr is None:
        return
    try:
        names = listxattr(source)
    except OSError:
        return
    for name in names:
        with suppress(OSError):
            os.setxattr(temporary, name, os.getxattr(source, name))


def _rewrite_in_place(target: Path, data: bytes, expected: bytes | None, path: Path) -> None:
    """Overwrite a hard-linked file through its own inode (a rename would split the links),
    checking under the open handle that it still holds what was read."""
    with open(target, "r+b") as handle:
        if expected is not None and handle.read() != expected:
            raise OSError(0, "file changed while it was being fixed", str(path))
        handle.seek(0)
        handle.write(data)
        handle.truncate()
        handle.flush()
        os.fsync(handle.fileno())


def _remove_stale_temporaries(target: Path) -> None:
    """Remove the temporaries of ``target`` left by writers that are gone (a killed run):
    their names carry the writing process's id."""
    prefix = f".{target.name}."
    with suppress(OSError):
        for entry in os.scandir(target.parent):
            name = entry.name
            if not (name.startswith(prefix) and name.endswith(TEMPORARY_SUFFIX)):
                continue
            pid = name[len(prefix):].split(".", 1)[0]
            if pid.isdigit() and not _alive(int(pid)):
                with suppress(OSError):
                    os.unlink(entry.path)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process
    return True


def _sync_folder(folder: Path) -> None:
    """Make the rename durable where the platform allows it."""
    with suppress(OSError, AttributeError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
