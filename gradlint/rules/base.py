"""The rule interface: metadata plus a check over one training loop."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from gradlint.diagnostics import Applicability, Fix, Severity, Span

if TYPE_CHECKING:  # the loop model needs libcst; the catalogue (RuleInfo) must load without it
    from gradlint.model.events import TrainingLoop


@dataclass(frozen=True)
class Finding:
    """What a rule reports: where, the message, and perhaps a fix."""

    span: Span
    message: str
    fix: Fix | None = None


@dataclass(frozen=True)
class RuleInfo:
    """A rule's catalogue entry (code, name, severity, summary, fix applicability)."""

    code: str
    name: str
    severity: Severity
    summary: str
    fix: Applicability | None = None
    default: bool = True


class Rule:
    """A rule reads the loop model and yields findings; it never walks syntax itself."""

    info: ClassVar[RuleInfo]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        """Findings for one training loop."""
        raise NotImplementedError
