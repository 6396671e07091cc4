"""What ``watch`` reports: a finding, and the error and warning that carry it to the user."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Site:
    """A line of the user's code: where the offending call was made."""

    filename: str
    lineno: int

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}"


@dataclass(frozen=True)
class Finding:
    """One defect seen at run time: the static rule's code, a short check name, the call site and the text."""

    code: str
    check: str
    site: Site
    message: str
    warning_only: bool = False

    def __str__(self) -> str:
        return f"{self.site}: {self.code} {self.message}"


class _Reported(Exception):
    """What an error and a warning of ``watch`` both carry: the finding and its parts."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(str(finding))
        self.finding = finding
        self.code = finding.code
        self.check = finding.check
        self.filename = finding.site.filename
        self.lineno = finding.site.lineno


class TrainingLoopError(_Reported, RuntimeError):
    """Raised by ``watch(..., on_violation="raise")``; ``.code`` is the GL code, ``.filename`` / ``.lineno`` the call."""


class TrainingLoopWarning(_Reported, UserWarning):
    """Issued by ``watch(..., on_violation="warn")`` (and for policy findings in either mode); carries ``.code``."""
