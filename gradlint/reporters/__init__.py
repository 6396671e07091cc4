"""Reporters: every output format of ``gradlint check``, chosen by name.

``text`` prints ``path:line:col: CODE message`` lines and a summary line (the original,
stable format); ``concise`` adds ruff's ``[*]`` marks on fixable findings and a fixable hint;
``full`` (the default) adds the source around each finding and its fix as a diff; ``json``,
``json-lines``, ``sarif``, ``github``, ``gitlab`` and ``junit`` are for tools. Every format
lists diagnostics in the order of :meth:`~gradlint.diagnostics.Diagnostic.sort_key`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TextIO

from gradlint.reporters.machine import render_json, render_json_lines
from gradlint.reporters.model import Report, ReportOptions

Renderer = Callable[[Report, TextIO, ReportOptions], None]


def _text(name: str) -> Renderer:
    """A renderer of :mod:`gradlint.reporters.text`, imported when used: it needs rich,
    which the machine formats do not."""
    def render_text_format(report: Report, out: TextIO, options: ReportOptions) -> None:
        from gradlint.reporters import text

        getattr(text, name)(report, out, options)
    return render_text_format


def _of_diagnostics(module: str, name: str) -> Renderer:
    """The renderer ``name`` (of the diagnostics alone) of ``gradlint.reporters.<module>``,
    imported when used: a run prints one format (JUnit needs an XML writer, SARIF the rule
    documents)."""
    def render_format(report: Report, out: TextIO, options: ReportOptions) -> None:
        getattr(importlib.import_module(f"gradlint.reporters.{module}"), name)(report.diagnostics, out)
    return render_format


FORMATS: dict[str, Renderer] = {
    "full": _text("render_full"),
    "concise": _text("render_concise"),
    "text": _text("render_text"),
    "json": lambda report, out, options: render_json(report.diagnostics, out),
    "json-lines": lambda report, out, options: render_json_lines(report.diagnostics, out),
    "sarif": _of_diagnostics("sarif", "render_sarif"),
    "github": _of_diagnostics("ci", "render_github"),
    "gitlab": _of_diagnostics("ci", "render_gitlab"),
    "junit": _of_diagnostics("junit", "render_junit"),
}
DEFAULT_FORMAT = "full"


def render(report: Report, output_format: str, out: TextIO, options: ReportOptions) -> None:
    """Write ``report`` to ``out`` in ``output_format`` (``--statistics`` replaces the list)."""
    if options.statistics:
        from gradlint.reporters.text import render_statistics

        render_statistics(report, out, options, as_json=output_format in ("json", "json-lines"))
        return
    FORMATS[output_format](report, out, options)


__all__ = ["DEFAULT_FORMAT", "FORMATS", "Report", "ReportOptions", "render", "render_json"]
