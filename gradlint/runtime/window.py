"""One optimizer's accumulation window as ``watch`` sees it: the events between two updates and the
checks they settle. Pure bookkeeping: no torch here, the watch feeds the events in.

Counting: a backward call is counted per parameter (its gradient hook fires once per backward that
reaches it), and the window's backward count is the largest count of any parameter, so a backward
that reaches only part of the model still counts once. ``hooks`` counts every hook call and answers
"did any backward run since then?".

When a check is settled:

- GL102 (step after fewer than N backward calls) waits for the next update: a short window is
  reported only when the next update also comes after fewer than N backward calls (two short
  windows in a row, the signature of a step inside the window). An isolated short window, the
  final partial window of a loader (of every epoch, when one watch spans several), is never
  reported. A loader shorter than N makes every window short: call ``epoch_end()`` when a loader
  is exhausted, and the window just stepped counts as that loader's last.
- GL103 / GL305 (zeroing that discards gradients), GL101 (clip before the window is complete),
  GL302 (scheduler between the window's backward calls and its step, or before the first step)
  and GL304 (stale gradients)
  are settled at the step, when the window's shape is known.
- GL101 (second clip), GL301 (clip after the step), GL303 (clip before unscale), GL104 (second
  scheduler step in one update) and the scheduler step on a skipped update are settled at the call
  itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gradlint.runtime.errors import Finding, Site

CHECKS: dict[str, str] = {
    "clip-inside-window": "GL101",
    "clip-twice": "GL101",
    "step-inside-window": "GL102",
    "zero-inside-window": "GL103",
    "scheduler-twice": "GL104",
    "clip-after-step": "GL301",
    "scheduler-before-first-step": "GL302",
    "scheduler-before-step": "GL302",
    "scheduler-on-skipped-step": "GL302",
    "clip-before-unscale": "GL303",
    "never-zeroed": "GL304",
    "zero-before-step": "GL305",
}
"""Each runtime check by name, and the code of the static rule that describes the same defect."""


def _finding(check: str, site: Site, message: str, warning_only: bool = False) -> Finding:
    return Finding(CHECKS[check], check, site, message, warning_only)


@dataclass(frozen=True)
class _Zero:
    site: Site
    hooks: int
    discarded: bool


@dataclass(frozen=True)
class _Clip:
    site: Site
    backwards: int
    hooks: int
    params: frozenset[int]


@dataclass(frozen=True)
class _SchedulerStep:
    site: Site
    hooks: int
    first: bool


@dataclass
class Window:
    """The events of one optimizer since its last update, and the checks over them."""

    name: str
    accumulation_steps: int
    params: frozenset[int]
    backwards: int = 0
    hooks: int = 0
    updates: int = 0
    in_step: bool = False
    unscaled: bool = False
    last_update_skipped: bool = False
    zeroed_since_update: bool = False
    counts: dict[int, int] = field(default_factory=dict)
    fresh: set[int] = field(default_factory=set)
    stale: set[int] = field(default_factory=set)
    _hooks_at_zero: int = 0
    _zeros: list[_Zero] = field(default_factory=list)
    _clips: list[_Clip] = field(default_factory=list)
    _scheduler_steps: dict[int, list[_SchedulerStep]] = field(default_factory=dict)
    _short: tuple[Site, int] | None = None

    # -- gradients ---------------------------------------------------------------------------

    def on_accumulated(self, key: int) -> None:
        """A backward call accumulated the gradient of parameter ``key``."""
        if self.in_step:
            return
        self.hooks += 1
        count = self.counts.get(key, 0) + 1
        self.counts[key] = count
        if count > self.backwards:
            self.backwards = count

    def wants_stale_check(self, key: int) -> bool:
        """Whether the gradient ``key`` holds before this accumulation must be inspected (GL304).

        Only after an update, with no ``zero_grad`` of this optimizer since, and until the
        parameter was seen to start from no (or a zero) gradient. (The watch installs the probe
        that asks only once a window went by without the optimizer's ``zero_grad``.)"""
        return self.updates > 0 and not self.in_step and not self.zeroed_since_update and key not in self.fresh

    def saw_previous_gradient(self, key: int, stale: bool) -> None:
        """Record whether parameter ``key`` still held the previous update's gradient."""
        if stale:
            self.stale.add(key)
        else:
            self.stale.discard(key)
            self.fresh.add(key)

    # -- calls -------------------------------------------------------------------------------

    def on_zero(self, site: Site) -> None:
        """``optimizer.zero_grad()`` was called at ``site``."""
        if self.in_step:
            return
        self._zeros.append(_Zero(site, self.hooks, discarded=self.hooks > self._hooks_at_zero))
        self._hooks_at_zero = self.hooks
        self.zeroed_since_update = True
        self.stale.clear()

    def on_unscale(self) -> None:
        """``scaler.unscale_(optimizer)`` was called."""
        self.unscaled = True

    def on_clip(self, site: Site, params: frozenset[int], scaled: bool, enabled: bool = True) -> list[Finding]:
        """A clip of ``params`` (parameter keys of this optimizer) at ``site``; ``scaled``: a scaler is in use
        (``enabled``: and it scales in this run)."""
        if self.in_step:
            return []
        found = []
        if self.backwards == 0 and self.updates > 0:
            found.append(_finding("clip-after-step", site, (
                f"gradients were clipped after {self.name} stepped and before the next backward call: the step has "
                "already used them; clip just before the step")))
        elif any(clip.params & params for clip in self._clips):
            found.append(_finding("clip-twice", site, (
                f"gradients of {self.name} were clipped a second time in one update: clip once, on the accumulated "
                "gradient, just before the step")))
        if scaled and not self.unscaled and self.backwards > 0:
            found.append(_finding("clip-before-unscale", site, (
                f"gradients were clipped before scaler.unscale_({self.name}): "
                + ("they are still multiplied by the loss scale" if enabled else
                   "the scaler is disabled in this run, but once enabled they are still multiplied by the loss scale")
                + "; call scaler.unscale_(optimizer) before the clip")))
        self._clips.append(_Clip(site, self.backwards, self.hooks, params))
        return found

    def on_scheduler(self, key: int, site: Site, never_stepped: bool) -> list[Finding]:
        """Scheduler ``key`` advanced at ``site``; ``never_stepped``: torch says the optimizer never stepped."""
        steps = self._scheduler_steps.setdefault(key, [])
        found = []
        if steps:
            found.append(_finding("scheduler-twice", site, (
                f"the scheduler advanced {len(steps) + 1} times in one update of {self.name}: advance it once per "
                "update, after the optimizer step")))
        elif self.last_update_skipped:
            found.append(_finding("scheduler-on-skipped-step", site, (
                f"the scheduler advanced on an update of {self.name} that the GradScaler skipped (inf/NaN "
                "gradients): the schedule runs one step ahead of the optimizer; make this a recorded choice, or "
                "advance it only when the step was taken"), warning_only=True))
        steps.append(_SchedulerStep(site, self.hooks, first=self.updates == 0 and never_stepped))
        return found

    def epoch_end(self) -> None:
        """The loader is exhausted: a short window just stepped was its final partial window."""
        self._short = None

    # -- the update --------------------------------------------------------------------------

    def before_step(self, site: Site) -> list[Finding]:
        """The checks settled by an update (a step, or a step the scaler skipped) made at ``site``."""
        if self.backwards == 0:
            return []  # a closure step, or a step with no backward since the last: nothing to judge
        found = []
        last_zero = self._zeros[-1] if self._zeros else None
        if last_zero is not None and last_zero.hooks == self.hooks:
            found.append(_finding("zero-before-step", last_zero.site, (
                f"{self.name}'s gradients were zeroed after the last backward call and before the step: the step "
                "sees zero gradients; zero after the step")))
        elif self.backwards <= self.accumulation_steps and any(zero.discarded for zero in self._zeros):
            zero = next(zero for zero in self._zeros if zero.discarded)
            found.append(_finding("zero-inside-window", zero.site, (
                f"{self.name}'s gradients were zeroed inside an accumulation window of {self.accumulation_steps} "
                "backward calls: the update keeps only the micro-batches after the zeroing; zero once per update, "
                "after the step")))
        early = next((clip for clip in self._clips if clip.hooks < self.hooks and clip.backwards < self.backwards), None)
        if early is not None:
            found.append(_finding("clip-inside-window", early.site, (
                f"gradients were clipped after {early.backwards} of the window's {self.backwards} backward calls: "
                "clip once the window is complete, just before the step")))
        for steps in self._scheduler_steps.values():
            if len(steps) == 1 and steps[0].hooks == self.hooks:
                found.append(_finding("scheduler-before-step", steps[0].site, (
                    f"the scheduler advanced after the window's backward calls and before {self.name} stepped: "
                    "advance it after the optimizer step")))
            elif len(steps) == 1 and steps[0].first:
                found.append(_finding("scheduler-before-first-step", steps[0].site, (
                    f"the scheduler advanced before {self.name}'s first step: the first value of the schedule is "
                    "skipped; advance it after the optimizer step")))
        short = self.backwards < self.accumulation_steps
        if self._short is not None and short:
            short_site, short_count = self._short
            found.append(_finding("step-inside-window", short_site, (
                f"{self.name} stepped after {short_count} of {self.accumulation_steps} backward calls, and the next "
                f"update after {self.backwards}: the step runs inside the accumulation window; step once per "
                "window (a final partial window is fine)")))
        elif self.stale:  # a step inside the window also leaves gradients to the next step: that is GL102's
            found.append(_finding("never-zeroed", site, (
                f"{self.name} stepped on gradients left over from the previous update: nothing zeroed them after "
                "the last step; call optimizer.zero_grad() after each step")))
        self._short = (site, self.backwards) if short else None
        return found

    def after_update(self, skipped: bool) -> None:
        """The update is over (``skipped``: the scaler did not step): a new window starts."""
        self.updates += 1
        self.last_update_skipped = skipped
        self.backwards = 0
        self.counts.clear()
        self.fresh.clear()
        self.stale.clear()
        self._hooks_at_zero = self.hooks
        self.zeroed_since_update = False
        self.unscaled = False
        self._zeros.clear()
        self._clips.clear()
        self._scheduler_steps.clear()
