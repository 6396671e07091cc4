"""Where the rule documents (``GLxxx.md``) are: inside the package, or the checkout's ``rules/``."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
CANDIDATES = (PACKAGE / "rules" / "docs", PACKAGE / "docs" / "rules", PACKAGE.parent / "rules")


def rule_doc_path(code: str) -> Path | None:
    """The Markdown document of rule ``code``, if one is installed or checked out."""
    for folder in CANDIDATES:
        path = folder / f"{code.upper()}.md"
        if path.is_file():
            return path
    return None


@lru_cache(maxsize=64)
def rule_doc(code: str) -> str | None:
    """The text of rule ``code``'s document, or None."""
    path = rule_doc_path(code)
    try:
        return path.read_text(encoding="utf-8") if path else None
    except OSError:
        return None
