"""gradlint: a static analyzer for PyTorch training loops.

The public API: :func:`lint_source` (text in, diagnostics out), the :class:`Diagnostic` it
returns with its :class:`Span`, :class:`Severity` and :class:`Fix`, and the :class:`Settings` it
takes (:func:`default_settings` for every rule that is on by default). Importing ``gradlint``
loads none of the analysis (libcst); the first call of :func:`lint_source` does.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gradlint.diagnostics import Applicability, Diagnostic, Edit, Fix, Severity, Span
    from gradlint.settings import Settings, SettingsError, default_settings

__version__ = "0.1.0"

_HOMES = {**dict.fromkeys(("Applicability", "Diagnostic", "Edit", "Fix", "Severity", "Span"), "gradlint.diagnostics"),
          **dict.fromkeys(("Settings", "SettingsError", "default_settings"), "gradlint.settings")}


def __getattr__(name: str) -> Any:
    """The API's classes, loaded on first use: ``import gradlint`` (the first thing the command
    does, before it handles Ctrl-C) loads nothing else."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'gradlint' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def lint_source(source: str, path: str = "<string>", settings: Settings | None = None) -> list[Diagnostic]:
    """Every diagnostic for one module's text (``path`` names it in the diagnostics), suppression
    comments applied, sorted by line, column and code; ``settings`` default to
    :func:`default_settings`."""
    from gradlint import engine
    from gradlint.settings import default_settings

    return engine.lint_source(source, path, settings if settings is not None else default_settings())


__all__ = [
    "Applicability",
    "Diagnostic",
    "Edit",
    "Fix",
    "Settings",
    "SettingsError",
    "Severity",
    "Span",
    "__version__",
    "default_settings",
    "lint_source",
]
