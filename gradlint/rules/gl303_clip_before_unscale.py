"""GL303 clip-before-unscale: under a GradScaler, gradients clipped while still scaled."""

from __future__ import annotations

from collections.abc import Iterator

from gradlint.catalogue import CATALOGUE
from gradlint.fixes import primitives as edit
from gradlint.model.events import Event, Place, Role, TrainingLoop
from gradlint.names import Kind
from gradlint.rules.base import Change, Finding, Invalid, Rule
from gradlint.rules.readers import call_text, last_backwards, on_engine_path, quoted, scaler_unscale, steps_of


class ClipBeforeUnscale(Rule):
    info = CATALOGUE["GL303"]
    reads_update_scopes = True  # a function that only updates: a clip before its own unscale_

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        unscaling = [e for e in loop.of(Role.UNSCALE, Role.STEP) if e.role is Role.UNSCALE or e.kind is Kind.SCALER]
        for clip in loop.of(Role.CLIP):
            if clip.framework != "torch" or on_engine_path(loop, clip):
                continue  # accelerator / fabric / Lightning clipping unscales first; DeepSpeed owns it
            if loop.update_only:
                yield from self._before_own_unscale(loop, clip, unscaling)
                continue
            for backward in last_backwards(loop, clip):
                if not _scaled(loop, backward):
                    continue
                if any(loop.flows(backward, u) and loop.flows(u, clip) for u in unscaling):
                    continue  # unscale_(), or scaler.step() which unscales (a clip after it is GL301's)
                step = next((s for s in unscaling if s.role is Role.STEP and loop.flows(clip, s)), None)
                unscale = scaler_unscale(loop, step) if step is not None else None
                late = next((u for u in unscaling if u.role is Role.UNSCALE and loop.flows(clip, u)), None)
                unscale = unscale or (call_text(loop, late) if late is not None else "scaler.unscale_(optimizer)")
                yield Finding(clip.span, f"{call_text(loop, clip)} clips scaled gradients; call "
                              f"{unscale} first", self.fix(_unscale_first, loop, clip),
                              detail="The gradients are still multiplied by the GradScaler's loss scale, so the "
                              "clipping threshold means nothing; unscale them first, in the same update.")
                break

    def _before_own_unscale(self, loop: TrainingLoop, clip: Event, unscaling: list[Event]) -> Iterator[Finding]:
        """In a function that only updates (its caller backpropagates): a clip followed by the
        scaler's ``unscale_`` on its path, with none before it, clipped scaled gradients (a
        second ``unscale_`` after the caller's own would raise)."""
        if any(loop.flows(u, clip) for u in unscaling):
            return
        unscale = next((u for u in loop.of(Role.UNSCALE) if loop.flows(clip, u)), None)
        if unscale is not None:
            yield Finding(clip.span, f"{call_text(loop, clip)} clips scaled gradients; call "
                          f"{call_text(loop, unscale)} first", self.fix(_unscale_first, loop, clip),
                          detail="The gradients are still multiplied by the GradScaler's loss scale until the "
                          "unscale_ that follows, so the clipping threshold means nothing; unscale them first.")

    VALID = (
        """\
def train(model, loader, optimizer, scaler):
    for x, y in loader:
        scaler.scale(model(x, y)).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
""",
        """\
def train(model, loader, optimizer, loss_scaler):
    for x, y in loader:
        optimizer.zero_grad()
        (model(x, y) * loss_scaler.loss_scale).backward()
        for param in model.parameters():
            param.grad.div_(loss_scaler.loss_scale)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
""",
        """\
def step_optimizer(optimizer, scaler, parameters):
    torch.nn.utils.clip_grad_norm_(parameters, 1.0)
    scaler.step(optimizer)
    scaler.update()
""",
    )
    INVALID = (
        Invalid("""\
def train(model, loader, optimizer, scaler):
    for x, y in loader:
        scaler.scale(model(x, y)).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
""", ((4, "GL303"),), fixed="""\
def train(model, loader, optimizer, scaler):
    for x, y in loader:
        scaler.scale(model(x, y)).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
"""),
        Invalid("""\
def train(model, loader, optimizer, loss_scaler):
    for x, y in loader:
        optimizer.zero_grad()
        (model(x, y) * loss_scaler.loss_scale).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        for param in model.parameters():
            param.grad.data.div_(loss_scaler.loss_scale)
        optimizer.step()
""", ((5, "GL303"),)),
        Invalid("""\
def step_optimizer(optimizer, scaler, parameters):
    torch.nn.utils.clip_grad_norm_(parameters, 1.0)
    scaler.unscale_(optimizer)
    scaler.step(optimizer)
    scaler.update()
""", ((2, "GL303"),), fixed="""\
def step_optimizer(optimizer, scaler, parameters):
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(parameters, 1.0)
    scaler.step(optimizer)
    scaler.update()
"""),
    )


def _scaled(loop: TrainingLoop, backward: Event) -> bool:
    """AMP on this backward's path: its loss goes through a ``scale(...)`` call, or a
    GradScaler call runs on the same path."""
    return backward.amp_scaled or any(e.kind is Kind.SCALER and not loop.exclusive(e, backward) for e in loop.events)


def _unscale_first(loop: TrainingLoop, clip: Event) -> Change | None:
    """Unscale just before the clip: move a later ``unscale_`` of the same update there (never
    out of its gate or guard), else insert ``scaler.unscale_(optimizer)`` under the guards of
    the scaler's step."""
    if clip.place is Place.MICRO:
        return None  # unscaling per micro-batch raises; GL101's fix unscales at the boundary
    if any(e.order < clip.order and not e.closure for e in loop.of(Role.STEP)
           if not any(e.order < b.order < clip.order for b in loop.of(Role.BACKWARD))):
        return None  # the clip runs after the step: GL301's fix moves it and unscales
    step = next((e for e in steps_of(loop) if e.order > clip.order and e.kind is Kind.SCALER), None)
    unscale = scaler_unscale(loop, step) if step is not None else None
    spot = edit.next_to(loop, clip, "before")
    if step is None or unscale is None or spot is None:
        return None
    later = [e for e in loop.of(Role.UNSCALE) if e.order > clip.order]
    if later:
        return Change(f"Move `{unscale}` before {quoted(loop, clip)}", edit.move(loop, later[:1], spot))
    lines = edit.guarded_code(loop, step, spot, unscale)  # `scaler` may be None where the step is guarded
    return Change(f"Insert `{unscale}` before {quoted(loop, clip)}", edit.insert(loop, spot, lines) if lines else None)
