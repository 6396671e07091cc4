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


def write_atomic(path: Path, data: bytes, expected: bytes | None = None) -> None:
    """Replace ``path`` with ``data`` through a temporary file in the same folder (fsync,
    then rename), keeping its permissions. Refuses a read-only file and, with
    ``expected``, a file that changed since it was read."""
    target = Path(os.path.realpath(path))
    info = target.stat()
    writable = info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    if not writable or not os.access(target, os.W_OK):
        raise PermissionError(13, "file is read-only", str(path))
    if expected is not None and target.read_bytes() != expected:
        raise OSError(0, "file changed while it was being fixed", str(path))
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".gradlint-tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, stat.S_IMODE(info.st_mode))
        os.replace(temporary, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary)
        raise
    _sync_folder(target.parent)


def _sync_folder(folder: Path) -> None:
    """Make the rename durable where the platform allows it."""
    with suppress(OSError, AttributeError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
