"""Turn file bytes into text the way Python does (BOM, PEP 263 cookie), or say why not."""

from __future__ import annotations

import ast
import errno
import io
import os
import re
import stat
import tokenize
import warnings
from dataclasses import dataclass


class SourceError(Exception):
    """The bytes are not Python source text (binary, undecodable, unreadable)."""

    def __init__(self, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


@dataclass(frozen=True)
class DecodedSource:
    """Source text plus what is needed to write it back byte-for-byte alike: the encoding
    (``utf-8-sig`` when the file starts with a BOM, which encoding writes back)."""

    text: str
    encoding: str


def read_source_file(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the file at ``path``. Anything but a regular file (a FIFO, a device, a
    folder) raises OSError instead of blocking or reading forever: it is opened without
    waiting for a writer, and only read once it is known to be a regular file."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        require_regular(os.fstat(handle.fileno()), path)
        return handle.read()


def require_regular(status: os.stat_result, path: str | os.PathLike[str]) -> None:
    """Raise OSError unless ``status`` (of ``path``) is that of a regular file."""
    if not stat.S_ISREG(status.st_mode):
        raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))


def decode(data: bytes) -> DecodedSource:
    """Decode ``data`` as Python source; raise :class:`SourceError` when that is impossible."""
    if b"\x00" in data:
        line, column = _position(data, data.index(b"\x00"))
        raise SourceError("file contains NUL bytes (binary, not Python source)", line, column)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        if "encoding declaration" not in exc.msg:
            raise SourceError(f"cannot decode source: {exc.msg}") from None
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as bad:
            line, column = _position(data, bad.start)
            raise SourceError("source is not valid utf-8 text and declares no other encoding", line, column) from None
        raise SourceError(f"cannot decode source: {exc.msg}") from None
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        line, column = _position(data, getattr(exc, "start", 0))
        raise SourceError(f"source is not valid {encoding.replace('-sig', '')} text", line, column) from None
    return DecodedSource(text=text, encoding=encoding)


def encode(source: DecodedSource, text: str) -> bytes:
    """Encode ``text`` with the encoding (and BOM) the original file had."""
    return text.encode(source.encoding)


_LINE_END = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")


def python_lines(text: str) -> list[str]:
    """``text`` cut into lines as Python (``ast``, ``tokenize``, libcst) numbers them: ``\\n``,
    ``\\r\\n`` and a lone ``\\r`` end a line. Each line keeps its ending; the last one,
    after the final line ending, may be empty."""
    if "\r" in text:
        return _LINE_END.split(text)
    lines = text.split("\n")  # the same cut, many times faster than the pattern
    last = lines.pop()
    found = [line + "\n" for line in lines]
    found.append(last)
    return found


def parse_python(text: str) -> ast.Module:
    """``ast.parse(text)`` without printing the warnings the user's code draws (an invalid
    escape sequence is a SyntaxWarning on stderr from Python 3.12 on; not gradlint's to show)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(text)


def _position(data: bytes, offset: int) -> tuple[int, int]:
    line = data.count(b"\n", 0, offset) + 1
    column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return line, column
