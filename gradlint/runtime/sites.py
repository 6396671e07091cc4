"""Find the user's line that made a call: the first frame outside torch and gradlint."""

from __future__ import annotations

import os
import sys
from types import ModuleType

from gradlint.runtime.errors import Site

_GRADLINT = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_internal: tuple[str, ...] = (_GRADLINT,)


def skip_package(module: ModuleType) -> None:
    """Treat the frames of ``module``'s package (torch) as internal, like gradlint's own."""
    global _internal
    folder = os.path.dirname(os.path.abspath(module.__file__ or "")) + os.sep
    if folder not in _internal:
        _internal = (*_internal, folder)


def user_site() -> Site:
    """The innermost frame of the calling stack that belongs to neither torch nor gradlint."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_internal):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return Site("<unknown>", 0)
    return Site(frame.f_code.co_filename, frame.f_lineno)
