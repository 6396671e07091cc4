"""``gradlint explain``: how gradlint reads each training loop of a file.

For each loop: where it is, its shape, the gate and the N it read, whether the gate has a
final-window branch, every training call with where it runs (once per micro-batch, at the update
boundary, on every iteration), and the findings inside the loop. The same view as data for
``--format json``, and for the language server's inlay hints and hovers.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gradlint.diagnostics import Diagnostic, Span
from gradlint.settings import Settings, SettingsError

if TYPE_CHECKING:
    from libcst import CSTNode

    from gradlint.model.events import TrainingLoop
    from gradlint.model.unit import UnitModel

SHAPES = {
    "plain": "plain loop (backward and step on every iteration)",
    "nested": "nested micro-batch loop (the update after it)",
    "gated": "counted gate (the update inside the gate)",
    "accelerate": "accelerator.accumulate() (Accelerate owns the boundary)",
    "framework": "a micro-batch body the framework calls (it owns the boundary)",
}
PLACES = {"micro-batch body": "micro", "update boundary": "update", "every iteration": "every"}
WHEN = {
    "micro": "runs once per micro-batch of the window",
    "update": "runs once per update, at the boundary",
    "every": "runs on every iteration (a plain loop: one update per iteration)",
}


@dataclass(frozen=True)
class CallView:
    """One training call of a loop: where it is written, its role, and how often it runs."""

    line: int
    column: int
    end_line: int
    end_column: int
    role: str
    place: str  # "micro", "update" or "every"
    code: str
    in_helper: bool  # written in a function the loop calls
    deferred: bool  # called every micro-batch, but Accelerate makes it act at the boundary only


@dataclass(frozen=True)
class LoopView:
    """One training loop as gradlint reads it."""

    line: int
    end_line: int
    function: str
    shape: str
    n: str | None
    gate_line: int | None
    gate: str | None
    final_window: bool | None
    calls: tuple[CallView, ...]
    findings: tuple[Diagnostic, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON form (findings as the CLI's JSON objects)."""
        data = asdict(self)
        data["findings"] = [finding.to_dict() for finding in self.findings]
        return data

    def hint(self, call: CallView) -> str:
        """The hover text of one of this loop's calls."""
        if call.deferred:
            return "runs on every micro-batch; Accelerate makes it act only at the update boundary"
        where = WHEN[call.place]
        if call.place == "micro" and self.gate_line is not None:
            where += f" gated at line {self.gate_line}"
        return f"{where}, N = `{self.n}`" if self.n and call.place != "every" else where


def explain_source(source: str, path: str, settings: Settings) -> list[LoopView]:
    """Every training loop of ``source`` as gradlint reads it, in source order."""
    from gradlint.engine import lint_source, training_loops

    scan = training_loops(source, path, settings, full=True)
    diagnostics = lint_source(source, path, settings)
    views = [_view(loop, diagnostics) for loop in scan.loops]
    return sorted(views, key=lambda view: (view.line, view.end_line))


def _view(loop: TrainingLoop, diagnostics: list[Diagnostic]) -> LoopView:
    span: Span = loop.span
    gate = loop.primary_gate
    if gate is not None:
        final = None if loop.shape.value == "accelerate" else gate.final_branch  # Accelerate flushes the last window
        owner = _unit_of(loop, gate.node)
        gate_line, gate_text = gate.span.line, owner.text_of(gate.node.test) if owner is not None else None
    elif loop.micro_loops and (owner := _unit_of(loop, loop.micro_loops[0])) is not None:
        micro = loop.micro_loops[0]
        gate_line, gate_text, final = owner.span(micro).line, _header(owner.text_of(micro)), None
    else:
        gate_line, gate_text, final = None, None, None
    calls = tuple(CallView(e.span.line, e.span.column, e.span.end_line, e.span.end_column, e.role.value,
                           PLACES[e.place.value], e.unit.text_of(e.node), e.unit is not loop.unit,
                           loop.accelerate_skips(e))
                  for e in loop.events)
    inside = tuple(d for d in diagnostics if span.line <= d.line <= span.end_line
                   or any(c.in_helper and c.line == d.line for c in calls))
    unit = loop.unit.unit
    function = unit.name if unit.class_name is None else f"{unit.class_name}.{unit.name}"
    return LoopView(span.line, span.end_line, function, loop.shape.value, loop.factor_code(), gate_line,
                    gate_text, final, calls, inside)


def _unit_of(loop: TrainingLoop, node: CSTNode) -> UnitModel | None:
    """The unit ``node`` is written in: the loop's own, or that of a helper it follows."""
    units = [loop.unit, *(e.unit for e in loop.events)]
    return next((unit for unit in units if node in unit.positions), None)


def _header(code: str) -> str:
    """The first line of a compound statement, without its colon."""
    return code.split("\n", 1)[0].rstrip().rstrip(":")


def render_text(path: str, source: str, views: list[LoopView], only_line: int | None = None) -> str:
    """The loops of one file: a heading per loop, its source with a gutter, its findings."""
    lines = source.splitlines()
    chosen = [v for v in views if only_line is None or v.line <= only_line <= v.end_line]
    if not chosen:
        where = f"{path}:{only_line}" if only_line is not None else path
        return f"{where}: no training loop found\n"
    out: list[str] = []
    for view in chosen:
        out.append(f"{path}:{view.line}: {view.function}(): {SHAPES[view.shape]}")
        if view.n:
            out.append(f"  N = {view.n}")
        if view.gate is not None:
            out.append(f"  boundary: line {view.gate_line}: {view.gate}")
        if view.final_window is not None:
            out.append("  final window: " + ("flushed by the gate's final-window branch" if view.final_window
                                             else "no final-window branch"))
        marks: dict[int, str] = {}
        for call in view.calls:
            if not call.in_helper:
                marks.setdefault(call.line, "micro*" if call.deferred else call.place)
        width = len(str(view.end_line))
        for number in range(view.line, view.end_line + 1):
            text = lines[number - 1] if number <= len(lines) else ""
            out.append(f"  {number:>{width}} {marks.get(number, ''):<6} | {text}")
        if any(c.deferred for c in view.calls):
            out.append("  micro*: runs on every micro-batch; Accelerate makes it act only at the update boundary")
        helpers = [c for c in view.calls if c.in_helper]
        for call in helpers:
            out.append(f"  via a helper: line {call.line}: {call.code}  [{call.place}]")
        if view.findings:
            out.append("  findings:")
            out.extend(f"    {d.line}:{d.column}: {d.code} {d.message}" for d in view.findings)
        else:
            out.append("  findings: none")
        out.append("")
    return "\n".join(out)


def explain_target(target: str, output_format: str) -> str:
    """The report for ``PATH`` or ``PATH:LINE`` (the loop around that line); raises
    :class:`SettingsError` for a path that cannot be explained."""
    from gradlint.config import settings_for
    from gradlint.source import SourceError, decode, read_source_file

    path_text, _, line_text = target.rpartition(":")
    if not path_text or not line_text.isdigit():
        path_text, line_text = target, ""
    path = Path(path_text)
    if path.suffix == ".ipynb":
        raise SettingsError(f"{path_text}: explain reads Python files, not notebooks")
    try:
        source = decode(read_source_file(path)).text
    except OSError as exc:
        raise SettingsError(f"{path_text}: cannot read file: {exc.strerror or exc}") from None
    except SourceError as exc:
        raise SettingsError(f"{path_text}: {exc.message}") from None
    views = explain_source(source, path_text, settings_for(path))
    line = int(line_text) if line_text else None
    if output_format == "json":
        chosen = [v for v in views if line is None or v.line <= line <= v.end_line]
        return json.dumps([v.to_dict() for v in chosen], indent=2) + "\n"
    return render_text(path_text, source, views, line)
