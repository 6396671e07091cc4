"""A candidate unit (function or top-level statement) parsed with libcst, with positions.

Only the unit's own lines are parsed, so libcst and its position metadata cost in
proportion to the training code, not to the file. A nested unit is wrapped in ``if 1:`` so
its original indentation, and so every column, stays as in the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from gradlint.diagnostics import Span
from gradlint.screen import ModuleFacts, Unit

_HEADER = "if 1:\n"


@dataclass(eq=False)
class UnitModel:
    """A libcst view of one unit plus the module's facts."""

    unit: Unit
    module: cst.Module
    root: cst.CSTNode
    positions: Mapping[cst.CSTNode, CodeRange]
    line_offset: int
    facts: ModuleFacts
    assignments: dict[str, list[tuple[int, cst.CSTNode]]] = field(default_factory=dict)

    def span(self, node: cst.CSTNode) -> Span:
        """The file span of ``node`` (1-based lines and columns, end exclusive)."""
        rng = self.positions[node]
        return Span(
            rng.start.line + self.line_offset,
            rng.start.column + 1,
            rng.end.line + self.line_offset,
            rng.end.column + 1,
        )

    def code(self, node: cst.CSTNode) -> str:
        """Source text of ``node`` as written."""
        return self.module.code_for_node(node)

    def bound_values(self, name: str, before_line: int | None = None) -> list[cst.CSTNode]:
        """Values assigned to ``name`` in this unit (optionally only above a line)."""
        found = self.assignments.get(name, [])
        return [v for line, v in found if before_line is None or line <= before_line]


def parse_unit(lines: list[str], unit: Unit, facts: ModuleFacts) -> UnitModel:
    """Parse the unit's lines with libcst and resolve positions for them only."""
    body = "".join(lines[unit.start_line - 1 : unit.end_line])
    if not body.endswith("\n"):
        body += "\n"
    nested = unit.indent > 0
    module = cst.parse_module(_HEADER + body if nested else body)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    first = module.body[0]
    root = first.body.body[0] if nested and isinstance(first, cst.If) else first
    offset = unit.start_line - 1 - (1 if nested else 0)
    return UnitModel(unit=unit, module=module, root=root, positions=positions,
                     line_offset=offset, facts=facts)
