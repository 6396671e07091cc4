"""Rule documents for the editor: a link target and the Markdown shown on hover."""

from __future__ import annotations

from pathlib import Path

from gradlint.rule_docs import doc_path, load_doc


def rule_doc_path(code: str) -> Path | None:
    """The installed (or checked-out) Markdown document of rule ``code``, if there is one."""
    return doc_path(code.upper())


def rule_doc(code: str) -> str | None:
    """The Markdown of rule ``code``'s document, or None."""
    try:
        doc = load_doc(code.upper())
    except (OSError, ValueError):
        return None
    return doc.markdown if doc else None
