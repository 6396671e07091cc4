"""GL302-GL305: the order of the update's own steps (scheduler, unscale, zero_grad)."""

from __future__ import annotations

from collections.abc import Iterator

from gradlint.catalogue import CATALOGUE
from gradlint.fixes import scheduler_after_step, unscale_before_clip, zero_grad_after_step
from gradlint.model.events import Event, Role, Shape, TrainingLoop
from gradlint.names import Kind
from gradlint.rules.base import Finding, Rule
from gradlint.rules.helpers import backward_before, call_text, engine_loop, last_backwards


def _steps(loop: TrainingLoop) -> list[Event]:
    return [e for e in loop.of(Role.STEP) if not e.closure and not e.engine_owned]


def _backward_between(loop: TrainingLoop, first: Event, second: Event) -> bool:
    return any(first.order < b.order < second.order for b in loop.of(Role.BACKWARD))


class SchedulerBeforeOptimizer(Rule):
    info = CATALOGUE["GL302"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        for sched in loop.of(Role.SCHEDULER_STEP):
            if sched.metric:
                continue
            later = [s for s in _steps(loop) if s.place is sched.place and loop.flows(sched, s)
                     and not _backward_between(loop, sched, s)]
            if later:
                step = call_text(loop, later[0])
                yield Finding(sched.span, f"{call_text(loop, sched)} runs before {step} in the same update, so "
                              f"the first learning-rate value of the schedule is skipped; call it after {step}",
                              scheduler_after_step(loop, sched))


def scaled_backward(loop: TrainingLoop, backward: Event) -> bool:
    """AMP on this backward's path: its loss goes through ``scaler.scale(...)``, or a
    GradScaler call runs on the same path."""
    if backward.loss is not None and "scale(" in loop.unit.code(backward.loss):
        return True
    return any(e.kind is Kind.SCALER and not loop.exclusive(e, backward) for e in loop.events)


class ClipBeforeUnscale(Rule):
    info = CATALOGUE["GL303"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        if engine_loop(loop):
            return
        unscaling = [e for e in loop.of(Role.UNSCALE, Role.STEP) if e.role is Role.UNSCALE or e.kind is Kind.SCALER]
        for clip in loop.of(Role.CLIP):
            if clip.framework != "torch":
                continue  # accelerator / fabric / Lightning clipping unscales first
            for backward in last_backwards(loop, clip):
                if not scaled_backward(loop, backward):
                    continue
                if any(loop.flows(backward, u) and loop.flows(u, clip) for u in unscaling):
                    continue  # unscale_(), or scaler.step() which unscales (a clip after it is GL301's)
                yield Finding(clip.span, f"{call_text(loop, clip)} clips gradients that the GradScaler still "
                              "multiplies by the loss scale, so the threshold means nothing; call "
                              "scaler.unscale_(optimizer) first, in the same update", unscale_before_clip(loop, clip))
                break


class MissingZeroGrad(Rule):
    info = CATALOGUE["GL304"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        steps = _steps(loop)
        if not steps or engine_loop(loop) or not loop.of(Role.BACKWARD) or loop.of(Role.ZERO_GRAD):
            return
        if loop.shape is Shape.PLAIN and loop.root is loop.unit.root:
            return  # a per-batch function: the caller may zero the gradients
        facts = loop.unit.facts
        if any("zero" in name or name in facts.zeroing_functions for name in loop.callees):
            return
        yield Finding(steps[0].span, f"{call_text(loop, steps[0])} runs every update but gradients are never "
                      "zeroed in this loop, so each update adds all previous gradients again; call "
                      "optimizer.zero_grad() once per update, after the step")


class ZeroGradBeforeStep(Rule):
    info = CATALOGUE["GL305"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        if engine_loop(loop):
            return
        steps = _steps(loop)
        targets = {s.target for s in steps}
        for step in steps:
            backward = backward_before(loop, step)
            if backward is None:
                continue
            for zero in loop.of(Role.ZERO_GRAD):
                if zero.place is not step.place or not (loop.flows(backward, zero) and loop.flows(zero, step)):
                    continue
                if zero.kind is Kind.OPTIMIZER and zero.receiver != step.target and step.target is not None:
                    continue  # another optimizer's gradients (GANs, actor-critic)
                if zero.kind is not Kind.OPTIMIZER and len(targets) > 1:
                    continue
                yield Finding(zero.span, f"{call_text(loop, zero)} runs after the last backward and before "
                              f"{call_text(loop, step)}, so the step sees zero gradients; zero after the step",
                              zero_grad_after_step(loop, zero))
