"""What a folder listing says a folder holds, so a walk looks up a file only where it may be."""

from __future__ import annotations

from collections.abc import Iterable


class Listing:
    """The entry names of one folder, as ``os.scandir`` read them.

    A walk asks of every folder whether it holds a configuration file, a ``.gitignore``,
    ``.git`` or ``pyvenv.cfg``; a name the listing lacks is not there, and only a name it
    has is looked at on disk (which decides: a folder called ``pyvenv.cfg`` is no file).
    Names are compared case-folded, so a case-insensitive file system's answer is never lost.
    """

    __slots__ = ("_folded",)

    def __init__(self, names: Iterable[str]) -> None:
        self._folded = frozenset(name.casefold() for name in names)

    def may_hold(self, name: str) -> bool:
        """Whether ``name`` may be in the folder (False: it is not)."""
        return name.casefold() in self._folded
