"""The rule documents (``rules/GLxxx.md``): where they are installed and what they say.

A wheel ships them as ``gradlint/docs/GLxxx.md`` (hatch ``force-include``); a source
checkout or an editable install reads them from the repository's ``rules/`` folder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from gradlint.catalogue import CATALOGUE, RuleInfo

_PACKAGE = Path(__file__).resolve().parent
_HEADING = re.compile(r"^# (?P<code>GL\d{3}): (?P<name>[a-z0-9-]+)[ \t]*$", re.MULTILINE)
_SECTION = re.compile(r"^## (?P<title>.+?)[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class RuleDoc:
    """One rule document: its heading, its severity / fix table and its sections."""

    code: str
    name: str
    severity: str
    fix: str
    markdown: str
    sections: tuple[tuple[str, str], ...]

    def section(self, title: str) -> str:
        """The text of the ``## title`` section ("" when absent)."""
        return dict(self.sections).get(title, "")


def docs_dir() -> Path | None:
    """The folder holding the rule documents, installed or in the source tree."""
    for candidate in (_PACKAGE / "docs", _PACKAGE.parent / "rules"):
        if candidate.is_dir():
            return candidate
    return None


def parse_doc(markdown: str) -> RuleDoc:
    """Read the heading, the ``| severity | fix |`` table and the sections of a document.

    Raises ``ValueError`` when the heading or the table is missing.
    """
    heading = _HEADING.search(markdown)
    if heading is None:
        raise ValueError("no '# GLxxx: name' heading")
    table = _table(markdown[heading.end():])
    if "severity" not in table or "fix" not in table:
        raise ValueError("no '| severity | fix |' table after the heading")
    titles = list(_SECTION.finditer(markdown))
    sections = tuple(
        (m.group("title"), markdown[m.end(): titles[i + 1].start() if i + 1 < len(titles) else len(markdown)].strip())
        for i, m in enumerate(titles)
    )
    return RuleDoc(heading.group("code"), heading.group("name"), table["severity"], table["fix"],
                   markdown, sections)


def _table(text: str) -> dict[str, str]:
    rows = [line.strip() for line in text.strip().splitlines()]
    rows = rows[: next((i for i, row in enumerate(rows) if not row.startswith("|")), len(rows))]
    if len(rows) < 3:
        return {}
    header, values = (_cells(rows[0]), _cells(rows[2]))
    return dict(zip(header, values, strict=False))


def _cells(row: str) -> list[str]:
    return [cell.strip().lower() for cell in row.strip("|").split("|")]


def doc_path(code: str) -> Path | None:
    """The installed (or checked-out) document of the catalogued rule ``code``, if there is one."""
    folder = docs_dir()
    info = CATALOGUE.get(code)
    path = folder / info.doc if folder and info else None
    return path if path is not None and path.is_file() else None


@cache
def load_doc(code: str) -> RuleDoc | None:
    """The document of rule ``code``, or None when it is not installed."""
    path = doc_path(code)
    if path is None:
        return None
    return parse_doc(path.read_text(encoding="utf-8"))


def rule_record(info: RuleInfo, with_doc: bool = False) -> dict[str, Any]:
    """A rule's catalogue entry as JSON data (``explanation``: its document, when asked for)."""
    record: dict[str, Any] = {
        "code": info.code,
        "name": info.name,
        "severity": info.severity.value,
        "fix": info.fix.value if info.fix else "none",
        "default": info.default,
        "summary": info.summary,
    }
    if with_doc:
        doc = load_doc(info.code)
        record["explanation"] = doc.markdown if doc else None
    return record
