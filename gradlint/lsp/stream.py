"""The server's input stream: header lines that find their way back to the message framing.

JSON-RPC over stdio frames each message by its ``Content-Length`` header. A message whose
declared length is wrong (a truncated body) makes the reader take the start of the next
message as the rest of its body; from then on every header line it reads begins with the
tail of a body (``...}Content-Length: 171``), pygls matches none of them, and the session
is silently lost. Cutting such a line at ``Content-Length:`` costs the one message the
wrong length swallowed and keeps the session.
"""

from __future__ import annotations

from typing import BinaryIO

_HEADER = b"Content-Length:"
MAX_BODY = 256 * 2**20
"""A declared body longer than this (256 MiB) is not read: reading it would allocate the
declared size at once, or wait for bytes that never come. The body's bytes that do follow
are read as garbage lines and skipped until the next header, like any misframed message."""


class ResyncingStdin:
    """``readline`` / ``read`` over a binary stream, for pygls' stdin reader."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream

    def readline(self) -> bytes:
        """The next line; text glued before a ``Content-Length:`` header is dropped."""
        line = self._stream.readline()
        at = line.find(_HEADER)
        return line[at:] if at > 0 else line

    def read(self, size: int) -> bytes:
        """The next ``size`` bytes (a message body, taken as it is); for a declared size over
        :data:`MAX_BODY`, a blank body, answered as unparsable (an empty one would end the
        session: pygls reads it as the end of the stream)."""
        if size > MAX_BODY:
            return b" "
        return self._stream.read(size)
