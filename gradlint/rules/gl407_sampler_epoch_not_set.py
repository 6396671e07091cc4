"""GL407 sampler-epoch-not-set: a ``DistributedSampler`` whose epoch is never set."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from gradlint.catalogue import CATALOGUE
from gradlint.diagnostics import Span
from gradlint.fixes import primitives as edit
from gradlint.fixes.layout import layout_of
from gradlint.fixes.regions import before
from gradlint.model.events import TrainingLoop
from gradlint.model.syntax import dotted
from gradlint.rules.base import Change, Finding, Invalid, Rule
from gradlint.rules.readers import loader_of

_READS = frozenset({"enumerate", "len", "iter", "next", "zip", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "print"})
"""Calls that only read a loader (never set its sampler's epoch)."""


class SamplerEpochNotSet(Rule):
    info = CATALOGUE["GL407"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        facts = loop.unit.facts
        if facts.sets_epoch or not isinstance(loop.root, cst.For):
            return
        loader = loader_of(loop, loop.root)
        epochs = epoch_loop(loop)
        if loader is None or loader not in facts.distributed_loaders or epochs is None:
            return
        sampler = facts.distributed_loaders[loader]
        if any(e.unit.facts.sets_epoch for e in loop.events) or _handed_on(loop, epochs, {loader, sampler}):
            return
        start, end = loop.unit.span(epochs), loop.unit.span(epochs.iter)
        yield Finding(Span(start.line, start.column, end.end_line, end.end_column),
                      f"`{loader}`'s DistributedSampler never gets its epoch; call "
                      f"`{sampler or loader + '.sampler'}.set_epoch(epoch)` each epoch",
                      self.fix(_set_epoch, loop, epochs, sampler),
                      detail="This loop never sets the sampler's epoch, so every epoch sees the same sample order; "
                      "set it at the top of each epoch.")

    VALID = (
        """\
def train(model, dataset, optimizer, epochs):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            model(x, y).backward()
            optimizer.step()
            optimizer.zero_grad()
""",
        """\
def train(model, dataset, optimizer, epochs):
    loader = DataLoader(dataset, sampler=DistributedSampler(dataset, shuffle=False))
    for epoch in range(epochs):
        for x, y in loader:
            model(x, y).backward()
            optimizer.step()
            optimizer.zero_grad()
""",
    )
    INVALID = (
        Invalid("""\
def train(model, dataset, optimizer, epochs):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, sampler=sampler)
    for epoch in range(epochs):
        for x, y in loader:
            model(x, y).backward()
            optimizer.step()
            optimizer.zero_grad()
""", ((4, "GL407"),), fixed="""\
def train(model, dataset, optimizer, epochs):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            model(x, y).backward()
            optimizer.step()
            optimizer.zero_grad()
"""),
        Invalid("""\
def train(model, dataset, optimizer, epochs):
    loader = DataLoader(dataset, sampler=DistributedSampler(dataset))
    for epoch in range(epochs):
        for x, y in loader:
            model(x, y).backward()
            optimizer.step()
            optimizer.zero_grad()
""", ((3, "GL407"),)),
    )


def epoch_loop(loop: TrainingLoop) -> cst.For | None:
    """The ``for`` of the loop's own unit that directly encloses the training loop (the epoch loop)."""
    if not loop.events:
        return None
    ancestors = loop.events[0].ancestors
    index = next((i for i, a in enumerate(ancestors) if a is loop.root), None)
    outer = [a for a in ancestors[:index] if isinstance(a, (cst.For, cst.While, cst.FunctionDef))] if index else []
    return outer[-1] if outer and isinstance(outer[-1], cst.For) else None


def _handed_on(loop: TrainingLoop, epochs: cst.For, names: set[str | None]) -> bool:
    """Whether the epoch loop passes the loader or its sampler to a call gradlint does not
    follow (``start_epoch(loader, epoch)``, ``hooks.before_epoch(train_loader)``): that call
    may set the epoch."""
    followed = {id(a) for e in loop.events for a in e.ancestors if isinstance(a, cst.Call)}
    names = names - {None}
    found = False

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            nonlocal found
            callee = dotted(call.func)
            if id(call) in followed or callee in _READS:
                return
            if any(dotted(arg.value) in names for arg in call.args):
                found = True

    epochs.body.visit(_Calls())
    return found


def _set_epoch(loop: TrainingLoop, epochs: cst.For, sampler: str | None) -> Change | None:
    """Insert ``sampler.set_epoch(epoch)`` as the epoch loop's first statement (safe: the
    sampler is a name the loop can read and the epoch is the loop's own variable)."""
    if sampler is None or not isinstance(epochs.target, cst.Name) or not isinstance(epochs.body, cst.IndentedBlock):
        return None
    unit = loop.unit.unit
    in_scope = sampler in loop.unit.assignments or ("." not in sampler and unit.name == "<module>") or (
        sampler.startswith("self.") and sampler.count(".") == 1 and unit.class_name is not None)
    if not in_scope or not epochs.body.body:
        return None
    code = f"{sampler}.set_epoch({epochs.target.value})"
    spot = before(layout_of(loop.unit), epochs.body.body[0], epochs.body)
    return Change(f"Insert `{code}` at the top of the epoch loop", edit.insert(loop, spot, code))
