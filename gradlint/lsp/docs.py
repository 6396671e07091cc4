"""Rule documents for the editor: a link target and the Markdown shown on hover."""

from __future__ import annotations

from pathlib import Path

from gradlint.rule_docs import docs_dir, load_doc


def rule_doc_path(code: str) -> Path | None:
    """The installed (or checked-out) Markdown document of rule ``code``, if there is one."""
    folder = docs_dir()
    path = folder / f"{code.upper()}.md" if folder else None
    return path if path is not None and path.is_file() else None


def rule_doc(code: str) -> str | None:
    """The Markdown of rule ``code``'s document, or None."""
    try:
        doc = load_doc(code.upper())
    except (OSError, ValueError):
        return None
    return doc.markdown if doc else None
