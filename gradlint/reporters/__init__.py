"""Reporters: every output format of ``gradlint check``, chosen by name.

``text`` prints ``path:line:col: CODE message`` lines and a summary line (the original,
stable format); ``concise`` adds ruff's ``[*]`` marks on fixable findings and a fixable hint;
``full`` (the default) adds the source around each finding and its fix as a diff; ``json``,
``json-lines``, ``sarif``, ``github``, ``gitlab`` and ``junit`` are for tools. Every format
lists diagnostics in the order of :meth:`~gradlint.diagnostics.Diagnostic.sort_key`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from gradlint.reporters.ci import render_github, render_gitlab
from gradlint.reporters.junit import render_junit
from gradlint.reporters.machine import render_json, render_json_lines
from gradlint.reporters.model import Report, ReportOptions
from gradlint.reporters.sarif import render_sarif

Renderer = Callable[[Report, TextIO, ReportOptions], None]


def _text(name: str) -> Renderer:
    """A renderer of :mod:`gradlint.reporters.text`, imported when used: it needs rich,
    which the machine formats do not."""
    def render_text_format(report: Report, out: TextIO, options: ReportOptions) -> None:
        from gradlint.reporters import text

        getattr(text, name)(report, out, options)
    return render_text_format


FORMATS: dict[str, Renderer] = {
    "full": _text("render_full"),
    "concise": _text("render_concise"),
    "text": _text("render_text"),
    "json": lambda report, out, options: render_json(report.diagnostics, out),
    "json-lines": lambda report, out, options: render_json_lines(report.diagnostics, out),
    "sarif": lambda report, out, options: render_sarif(report.diagnostics, out),
    "github": lambda report, out, options: render_github(report.diagnostics, out),
    "gitlab": lambda report, out, options: render_gitlab(report.diagnostics, out),
    "junit": lambda report, out, options: render_junit(report.diagnostics, out),
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
