"""The rule interface: catalogue metadata, a check over one training loop, and examples."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Concatenate, ParamSpec

from gradlint.catalogue import RuleInfo
from gradlint.diagnostics import Edit, Fix, Span
from gradlint.model.events import TrainingLoop
from gradlint.project.context import ProjectContext

P = ParamSpec("P")


@dataclass(frozen=True)
class Finding:
    """What a rule reports: where, a one-line message (what is wrong and what to do, at most
    about 120 characters), perhaps a fix, and the longer explanation (``detail``)."""

    span: Span
    message: str
    fix: Fix | None = None
    detail: str | None = None
    home: tuple[Path, int] | None = None  # a module rule's finding at ``span`` of another project module, and
    # the line of the linted module's training loop it is reported for


@dataclass(frozen=True)
class Change:
    """What a fix builder proposes: a message and its edits (the rule's catalogue entry
    gives the applicability)."""

    message: str
    edits: tuple[Edit, ...] | None  # None: the edit cannot be made without guessing


@dataclass(frozen=True)
class Invalid:
    """An example a rule reports: the source, the (line, code) findings it must give, and
    where the rule fixes it, the text after its fix."""

    source: str
    expected: tuple[tuple[int, str], ...]
    fixed: str | None = None


class Rule:
    """A rule reads the loop model and yields findings; it never walks syntax itself."""

    info: ClassVar[RuleInfo]
    reads_update_scopes: ClassVar[bool] = False
    """Whether the rule also reads update scopes, functions that update but run no backward
    (:mod:`gradlint.model.update_scope`)."""
    VALID: ClassVar[tuple[str, ...]] = ()
    INVALID: ClassVar[tuple[Invalid, ...]] = ()

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        """Findings for one training loop."""
        raise NotImplementedError

    def fix(self, build: Callable[Concatenate[TrainingLoop, P], Change | None], loop: TrainingLoop,
            *args: P.args, **kwargs: P.kwargs) -> Fix | None:
        """The fix ``build(loop, *args)`` proposes, with this rule's catalogued applicability. Edits are made
        in the loop's own unit: a loop that trains through a helper it calls (events in
        another function) gets no fix rather than a cross-function move."""
        applicability = self.info.fix
        if applicability is None or not loop.single_unit:
            return None
        change = build(loop, *args, **kwargs)
        return Fix(applicability, change.message, change.edits) if change is not None and change.edits else None


class ModuleRule(Rule):
    """A rule over a whole module rather than its training loops (a framework owns the loop,
    or the defect is in a loss helper). It runs on a module whose text holds one of ``words``."""

    words: ClassVar[tuple[str, ...]]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        return iter(())

    def check_module(self, tree: ast.Module, lines: list[str], loops: Sequence[TrainingLoop] = (),
                     project: ProjectContext | None = None) -> Iterator[Finding]:
        """Findings for one module's syntax tree (``lines``: its text, numbered like the tree;
        ``loops``: the module's training loops; ``project``: the project it is read in, when
        there is one)."""
        raise NotImplementedError


def span_of(node: ast.expr | ast.stmt | ast.keyword, lines: list[str]) -> Span:
    """The file span of an ``ast`` node, in characters (``ast`` counts UTF-8 bytes)."""
    end_line = node.end_lineno or node.lineno
    end_col = node.end_col_offset if node.end_col_offset is not None else node.col_offset
    return Span(node.lineno, _chars(lines, node.lineno, node.col_offset) + 1,
                end_line, _chars(lines, end_line, end_col) + 1)


def _chars(lines: list[str], line: int, offset: int) -> int:
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return len(text.encode("utf-8", "surrogatepass")[:offset].decode("utf-8", "replace"))
