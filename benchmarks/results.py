"""benchmarks/RESULTS.md is written by several scripts: each owns a section between
``<!-- NAME:begin -->`` and ``<!-- NAME:end -->`` markers and rewrites only that; ``bench.py``,
which writes the timing part, keeps every other script's section as it was."""

from __future__ import annotations

import re
from pathlib import Path

RESULTS = Path(__file__).resolve().with_name("RESULTS.md")
_ANY = re.compile(r"<!-- (?P<name>[\w-]+):begin -->.*?<!-- (?P=name):end -->", re.DOTALL)


def marked(name: str, body: str) -> str:
    """``body`` between the markers of section ``name``."""
    return f"<!-- {name}:begin -->\n{body.strip()}\n<!-- {name}:end -->"


def with_section(text: str, name: str, body: str) -> str:
    """``text`` with section ``name`` replaced by ``body`` (appended when absent)."""
    section = marked(name, body)
    pattern = re.compile(re.escape(f"<!-- {name}:begin -->") + ".*?" + re.escape(f"<!-- {name}:end -->"), re.DOTALL)
    if pattern.search(text):
        return pattern.sub(lambda _: section, text, count=1)
    return f"{text.rstrip()}\n\n{section}\n" if text.strip() else f"{section}\n"


def sections(text: str) -> list[str]:
    """Every marked section of ``text``, markers included, in order."""
    return [found.group(0) for found in _ANY.finditer(text)]


def keeping_sections(new: str, old: str) -> str:
    """``new`` followed by the marked sections of ``old`` that ``new`` does not have."""
    have = {found.group("name") for found in _ANY.finditer(new)}
    kept = [found.group(0) for found in _ANY.finditer(old) if found.group("name") not in have]
    return "\n\n".join([new.rstrip(), *kept]) + "\n" if kept else new


def write_section(name: str, body: str, path: Path = RESULTS) -> None:
    """Rewrite section ``name`` of ``path`` (RESULTS.md)."""
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    path.write_text(with_section(current, name, body), encoding="utf-8")
