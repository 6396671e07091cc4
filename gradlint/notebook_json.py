"""A notebook's JSON text edited in place: where each cell's ``source`` value is, and the
text of a new value written in the style of the file.

Rewriting a cell replaces the characters of its ``source`` value and nothing else, so the
rest of the file (indentation, key order, separators, escaping, trailing newline) stays
byte for byte what it was, whichever tool wrote it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]  # public, missing from typeshed

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")
_LINE = re.compile(r"[^\n]*\n|[^\n]+")  # lines as Jupyter stores them: split after each \n only


@dataclass(frozen=True)
class SourceValue:
    """The ``source`` value of one cell: its place in the text ``[start, end)``, and the
    whitespace that sits before the ``"source"`` key (the cell's key indentation)."""

    start: int
    end: int
    key_space: str


def source_values(raw: str) -> dict[int, SourceValue]:
    """Cell number (from 1, over all cells) -> its ``source`` value in ``raw``, for the
    cells that have one. ``raw`` must be valid JSON (it was parsed before); for a key given
    twice the last one counts, as it does for ``json.loads``."""
    found: dict[int, SourceValue] = {}
    for key, _space, start in _members(raw, _skip(raw, 0)):
        if key != "cells":
            continue
        found = {}
        for number, item in enumerate(_items(raw, start), start=1):
            if raw.startswith("{", item):
                for cell_key, space, value in _members(raw, item):
                    if cell_key == "source":
                        found[number] = SourceValue(value, _value_end(raw, value), space)
    return found


def _skip(raw: str, at: int) -> int:
    match = _SPACE.match(raw, at)
    return match.end() if match else at


def _value_end(raw: str, at: int) -> int:
    return _DECODER.raw_decode(raw, at)[1]


def _members(raw: str, at: int) -> list[tuple[str, str, int]]:
    """(key, whitespace before the key, start of its value) for the object at ``at``."""
    if not raw.startswith("{", at):
        return []
    members: list[tuple[str, str, int]] = []
    at += 1
    while True:
        key_at = _skip(raw, at)
        if raw.startswith("}", key_at):
            return members
        key, after = scanstring(raw, key_at + 1)
        value = _skip(raw, _skip(raw, after) + 1)  # past the colon
        members.append((key, raw[at:key_at], value))
        at = _skip(raw, _value_end(raw, value))
        if raw.startswith("}", at):
            return members
        at += 1  # past the comma


def _items(raw: str, at: int) -> list[int]:
    """The start of each item of the array at ``at``."""
    if not raw.startswith("[", at):
        return []
    starts: list[int] = []
    at = _skip(raw, at + 1)
    while not raw.startswith("]", at):
        starts.append(at)
        at = _skip(raw, _value_end(raw, at))
        if not raw.startswith(",", at):
            break
        at = _skip(raw, at + 1)
    return starts


def ensure_ascii(raw: str) -> bool:
    """Whether the file escapes non-ASCII characters (it has ``\\u`` escapes of them and no
    literal ones); a file with neither gets them literally, as Jupyter writes them."""
    if any(ord(char) > 0x7F for char in raw):
        return False
    return re.search(r"\\u(?!00[0-7])[0-9a-fA-F]{4}", raw) is not None


def source_text(raw: str, value: SourceValue, text: str, indent_unit: str) -> str:
    """The JSON text of the new ``source`` ``text`` in place of ``value``: a string stays a
    string; a list stays a list of lines laid out like the old one (an empty one like a list
    one indentation unit deeper than the cell's keys)."""
    old = raw[value.start:value.end]
    escape = ensure_ascii(raw)
    if not old.startswith("["):
        return json.dumps(text, ensure_ascii=escape)
    lines = [json.dumps(line, ensure_ascii=escape) for line in _LINE.findall(text)]
    if not lines:
        return "[]"
    items = _items(old, 0)
    if items:
        opening = old[1:items[0]]
        closing = old[len(old[:-1].rstrip(" \t\n\r")):-1]
    elif "\n" in value.key_space:
        opening, closing = value.key_space + indent_unit, value.key_space
    else:
        opening = closing = ""
    if len(items) > 1:
        between = old[_value_end(old, items[0]):items[1]]
    elif opening:
        between = "," + opening
    else:
        between = ", " if re.search(r"[,:] ", raw) else ","
    return "[" + opening + between.join(lines) + closing + "]"


def indent_unit(raw: str) -> str:
    """One level of the file's indentation: the whitespace before its first key after the
    line break (empty for JSON on one line)."""
    match = re.match(r"\{[ \t]*\r?\n([ \t]*)\"", raw)
    return match.group(1) if match else ""
