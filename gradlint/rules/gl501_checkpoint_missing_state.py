"""GL501 checkpoint-missing-state: a checkpoint (or a resume) that keeps the optimizer but not
the scheduler or GradScaler the same training code steps."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from gradlint.catalogue import CATALOGUE
from gradlint.fixes import primitives as edit
from gradlint.model.events import TrainingLoop
from gradlint.model.training_state import Save, load_calls, mentions, optimizers_stepped, saves, stepped_state
from gradlint.rules.base import Change, Finding, Invalid, Rule


class CheckpointMissingState(Rule):
    info = CATALOGUE["GL501"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        optimizers = optimizers_stepped(loop)
        state = stepped_state(loop)
        if not optimizers or not state:
            return
        for save in saves(loop):
            text = loop.unit.text_of(save.state)
            if not any(mentions(text, f"{o}.state_dict") for o in optimizers):
                continue  # no optimizer state: a weights-only export
            missing = [(name, what) for name, what in state if not mentions(text, name)]
            if missing:
                names = " and ".join(f"{name}.state_dict()" for name, _ in missing)
                yield Finding(loop.unit.span(save.call),
                              f"this checkpoint saves the optimizer's state but not {names}",
                              self.fix(_add_entries, loop, save, missing),
                              detail=f"The training loop steps {' and '.join(n for n, _ in missing)}: a resumed run "
                              f"restarts its {_restarts(missing)}.")
        loads = load_calls(loop)
        restored = {receiver for _, receiver in loads}
        for call, receiver in loads:
            if receiver not in optimizers:
                continue
            missing = [(name, what) for name, what in state if what == "scheduler" and name not in restored]
            if missing:
                names = " and ".join(f"{name}.load_state_dict(...)" for name, _ in missing)
                yield Finding(loop.unit.span(call),
                              f"the resume restores the optimizer but not the scheduler (no {names})",
                              detail="The scheduler's warmup and decay restart from their first step.")

    VALID = (
        """\
def train(model, loader, optimizer, scheduler, path):
    for x, y in loader:
        model(x, y).backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict()}, path)
""",
        """\
def train(model, loader, optimizer, scheduler, path):
    for x, y in loader:
        model(x, y).backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
    torch.save(model.state_dict(), path)
""",
    )
    INVALID = (
        Invalid("""\
def train(model, loader, optimizer, scheduler, path):
    for x, y in loader:
        model(x, y).backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
""", ((7, "GL501"),), fixed="""\
def train(model, loader, optimizer, scheduler, path):
    for x, y in loader:
        model(x, y).backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, path)
"""),
        Invalid("""\
def train(model, loader, optimizer, scheduler, ckpt):
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    for x, y in loader:
        model(x, y).backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
""", ((3, "GL501"),)),
    )


def _restarts(missing: list[tuple[str, str]]) -> str:
    kinds = {what for _, what in missing}
    parts = (["LR warmup and decay"] if "scheduler" in kinds else []) + (["loss scale"] if "scaler" in kinds else [])
    return " and ".join(parts)


def _add_entries(loop: TrainingLoop, save: Save, missing: list[tuple[str, str]]) -> Change | None:
    """Append ``"scheduler": scheduler.state_dict()`` entries to the saved dict literal (whose
    keys are all strings, so the new keys can be told apart)."""
    elements = save.state.elements
    if not elements or not all(isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
                               for e in elements):
        return None
    keys = {loop.unit.text_of(e.key).strip()[1:-1] for e in elements if isinstance(e, cst.DictElement)}
    quote = loop.unit.text_of(elements[0].key).strip()[0] if isinstance(elements[0], cst.DictElement) else '"'
    entries = []
    for name, _ in missing:
        key = name.rsplit(".", 1)[-1]
        if key in keys:
            return None  # the key is taken (by something else under that name)
        keys.add(key)
        entries.append(f"{quote}{key}{quote}: {name}.state_dict()")
    value = elements[-1].value  # the new entries follow the last value, before its comma (if any)
    new = loop.unit.text_of(value).strip() + ", " + ", ".join(entries)
    return Change("Save " + " and ".join(f"`{name}.state_dict()`" for name, _ in missing) + " too",
                  edit.replace(loop, value, new))
