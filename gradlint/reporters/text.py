"""Human-readable formats: ``concise``, ``full`` and ``--statistics``, via rich."""

from __future__ import annotations

import difflib
import json
from typing import TextIO

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from gradlint.diagnostics import Applicability, Diagnostic, Severity
from gradlint.fixer import applicable, apply_fixes
from gradlint.reporters.model import Report, ReportOptions, location
from gradlint.reporters.sources import SourceLines

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "bold yellow", Severity.INFO: "bold cyan"}
_CONTEXT = 2  # source lines shown above and below a finding
_FIX_LABEL = {
    Applicability.SAFE: "fix (safe, applied by --fix)",
    Applicability.UNSAFE: "fix (unsafe, applied by --fix --unsafe-fixes)",
}


def console_for(out: TextIO, color: bool) -> Console:
    """A rich console on ``out`` that emits colour codes exactly when ``color`` is set."""
    return Console(file=out, force_terminal=color, no_color=not color, color_system="standard" if color else None,
                   highlight=False, markup=False, emoji=False, soft_wrap=True)


def summary(diagnostics: list[Diagnostic], files_checked: int, fixed: int = 0) -> str:
    """``Found N problems in M files.`` or ``All checks passed! (M files checked)``; after
    ``--fix`` fixed some, ``Found N problems (F fixed, R remaining).``"""
    if fixed:
        total = fixed + len(diagnostics)
        return f"Found {total} {'problem' if total == 1 else 'problems'} ({fixed} fixed, {len(diagnostics)} remaining)."
    if not diagnostics:
        noun = "file" if files_checked == 1 else "files"
        return f"All checks passed! ({files_checked} {noun} checked)"
    files = len({d.path for d in diagnostics})
    problems = "problem" if len(diagnostics) == 1 else "problems"
    noun = "file" if files == 1 else "files"
    return f"Found {len(diagnostics)} {problems} in {files} {noun}."


def fixable_hint(diagnostics: list[Diagnostic], unsafe: bool) -> str | None:
    """``[*] 2 fixable with the --fix option (1 hidden fix can be enabled with the
    --unsafe-fixes option).``, or None when nothing is fixable."""
    fixable = sum(applicable(d.fix, unsafe) for d in diagnostics)
    hidden = 0 if unsafe else sum(applicable(d.fix, True) and not applicable(d.fix, False) for d in diagnostics)
    if not fixable and not hidden:
        return None
    text = f"[*] {fixable} fixable with the --fix option" if fixable else "No fixes available"
    if hidden:
        text += f" ({hidden} hidden {'fix' if hidden == 1 else 'fixes'} can be enabled with the --unsafe-fixes option)"
    return text + "."


def _closing(report: Report, options: ReportOptions) -> list[str]:
    """The summary line, then the fixable hint."""
    hint = fixable_hint(report.diagnostics, options.unsafe_fixes)
    return [summary(report.diagnostics, report.files_checked, report.fixed), *([hint] if hint else [])]


def _headline(diagnostic: Diagnostic, options: ReportOptions | None) -> Text:
    """``location: CODE message``; with ``options``, ``[*]`` marks a fix ``--fix`` would apply."""
    line = Text()
    line.append(f"{location(diagnostic)}: ", style="bold")
    line.append(diagnostic.code, style=_STYLE[diagnostic.severity])
    if options is not None and applicable(diagnostic.fix, options.unsafe_fixes):
        line.append(" [*]")
    line.append(f" {diagnostic.message}")
    return line


def render_text(report: Report, out: TextIO, options: ReportOptions) -> None:
    """The original ``text`` format, kept stable for scripts: ``path:line:col: CODE message``
    lines and the summary line, without fix markers or hints."""
    console = console_for(out, options.color)
    for diagnostic in report.diagnostics:
        console.print(_headline(diagnostic, None))
    if not options.quiet:
        console.print(summary(report.diagnostics, report.files_checked, report.fixed))


def render_concise(report: Report, out: TextIO, options: ReportOptions) -> None:
    """``path:line:col: CODE message`` lines (``path:cell N:line:col`` in notebooks), then a summary."""
    console = console_for(out, options.color)
    for diagnostic in report.diagnostics:
        console.print(_headline(diagnostic, options))
    if not options.quiet:
        for line in _closing(report, options):
            console.print(line)


def render_full(report: Report, out: TextIO, options: ReportOptions) -> None:
    """Each finding with the source around it, the call underlined, the longer explanation
    (``= note:``) and its fix as a diff."""
    console = console_for(out, options.color)
    sources = SourceLines(report.sources)
    for diagnostic in report.diagnostics:
        console.print(_headline(diagnostic, options))
        lines = sources.lines(diagnostic.path, diagnostic.cell)
        if lines is not None:
            for row in _snippet(diagnostic, lines):
                console.print(row)
        if diagnostic.detail:
            console.print(Text(f"  = note: {diagnostic.detail}"))
        if lines is not None and diagnostic.fix is not None and diagnostic.fix.edits:
            for row in _fix_diff(diagnostic, sources.text(diagnostic.path, diagnostic.cell) or ""):
                console.print(row)
        console.print()
    if not options.quiet:
        for line in _closing(report, options):
            console.print(line)


def _snippet(diagnostic: Diagnostic, lines: list[str]) -> list[Text]:
    span = diagnostic.span
    first = max(1, span.line - _CONTEXT)
    last = min(len(lines), span.line + _CONTEXT)
    width = len(str(last))
    gutter = " " * width + " |"
    rows = [Text(gutter, style="blue")]
    for number in range(first, last + 1):
        source = lines[number - 1].expandtabs(4)
        row = Text()
        row.append(f"{number:>{width}} | ", style="blue")
        row.append(source)
        rows.append(row)
        if number == span.line:
            rows.append(_underline(diagnostic, lines[number - 1], gutter))
    rows.append(Text(gutter, style="blue"))
    return rows


def _underline(diagnostic: Diagnostic, raw: str, gutter: str) -> Text:
    span = diagnostic.span
    start = max(span.column - 1, 0)
    end = span.end_column - 1 if span.end_line == span.line else len(raw.rstrip())
    end = max(end, start + 1)
    indent = cell_len(raw[:start].expandtabs(4))
    marks = max(cell_len(raw[start:end].expandtabs(4)), 1)
    row = Text(gutter + " ", style="blue")
    row.append(" " * indent + "^" * marks + " " + diagnostic.code, style=_STYLE[diagnostic.severity])
    return row


def _fix_diff(diagnostic: Diagnostic, text: str) -> list[Text]:
    fix = diagnostic.fix
    if fix is None:
        return []
    rows = [Text(f"  = {_FIX_LABEL[fix.applicability]}: {fix.message}", style="bold")]
    fixed = apply_fixes(text, [fix])
    diff = difflib.unified_diff(text.splitlines(), fixed.splitlines(), n=1, lineterm="")
    for line in list(diff)[2:]:
        style = {"+": "green", "-": "red", "@": "cyan"}.get(line[:1], "")
        rows.append(Text("    " + line.expandtabs(4), style=style))
    return rows


def render_statistics(report: Report, out: TextIO, options: ReportOptions, as_json: bool) -> None:
    """How many findings each rule has, most first: ``count  code  [*] name`` or JSON; ``[*]``
    marks a rule with a finding ``--fix`` would fix (with ``--unsafe-fixes``: unsafe fixes too),
    as in the other formats."""
    counts: dict[str, list[Diagnostic]] = {}
    for diagnostic in report.diagnostics:
        counts.setdefault(diagnostic.code, []).append(diagnostic)
    rows = sorted(counts.items(), key=lambda item: (-len(item[1]), item[0]))
    if as_json:
        data = [{"code": code, "name": found[0].name, "count": len(found),
                 "fixable": any(applicable(d.fix, options.unsafe_fixes) for d in found),
                 "fixable_count": sum(applicable(d.fix, options.unsafe_fixes) for d in found)}
                for code, found in rows]
        json.dump(data, out, indent=2)
        out.write("\n")
        return
    console = console_for(out, options.color)
    width = max((len(str(len(found))) for _, found in rows), default=1)
    for code, found in rows:
        row = Text(f"{len(found):>{width}}  ")
        row.append(code, style=_STYLE[found[0].severity])
        fixable = any(applicable(d.fix, options.unsafe_fixes) for d in found)
        row.append(f"  {'[*]' if fixable else '   '} {found[0].name}")
        console.print(row)
    if not options.quiet:
        for line in _closing(report, options):
            console.print(line)

