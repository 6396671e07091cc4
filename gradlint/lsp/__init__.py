"""The gradlint language server (``gradlint lsp``); needs the ``lsp`` extra (pygls, lsprotocol).

Nothing here imports pygls, so the command line works without the extra.
"""

from __future__ import annotations

from importlib.util import find_spec

REQUIREMENTS = ("pygls", "lsprotocol")


def missing_requirements() -> list[str]:
    """The packages the language server needs that are not installed."""
    return [name for name in REQUIREMENTS if find_spec(name) is None]


def serve() -> None:
    """Run the language server over stdio."""
    from gradlint.lsp.server import serve as run

    run()
