"""gradlint's runtime companion: ``watch`` the real training loop (torch is imported only when a watch starts)."""

from gradlint.runtime.errors import Finding, Site, TrainingLoopError, TrainingLoopWarning
from gradlint.runtime.watch import Watch, watch
from gradlint.runtime.window import CHECKS

__all__ = ["CHECKS", "Finding", "Site", "TrainingLoopError", "TrainingLoopWarning", "Watch", "watch"]
