"""GL501 checkpoint-missing-state: a checkpoint (or a resume) that keeps the optimizer but not
the scheduler or GradScaler the same training code steps."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from pathlib import Path

from gradlint.catalogue import CATALOGUE
from gradlint.diagnostics import Edit, Fix
from gradlint.model.checkpoints import (
    Checkpoint,
    HelperSaves,
    Scope,
    aliases_in,
    aliases_of,
    checkpoints,
    dict_values,
    optimizer_state,
    restores,
    scopes_of,
    state_dict_reads,
)
from gradlint.model.events import TrainingLoop
from gradlint.model.training_state import mentions, optimizers_stepped, stepped_state, update_counters
from gradlint.project.context import ProjectContext
from gradlint.rules.base import Finding, Invalid, ModuleRule, span_of


class CheckpointMissingState(ModuleRule):
    info = CATALOGUE["GL501"]
    words = ("state_dict", "save")  # "save": a helper of another module may write the state

    def check_module(self, tree: ast.Module, lines: list[str], loops: Sequence[TrainingLoop] = (),
                     project: ProjectContext | None = None) -> Iterator[Finding]:
        aliases = aliases_of(tree)
        reported: set[tuple[Path | None, int, int]] = set()
        for loop in loops:
            unit = loop.unit.unit
            scopes = scopes_of(tree, unit.name, unit.class_name, unit.start_line, unit.end_line)
            own = next((s for s in scopes if s.own), None)
            if own is None:
                continue
            renamed = aliases_in(own.node)
            optimizers = {renamed.get(o, o) for o in optimizers_stepped(loop)}
            state = [(renamed.get(name, name), what) for name, what in stepped_state(loop)]
            counters = [(renamed.get(name, name), "counter") for name in update_counters(loop)]
            if not optimizers or not (state or counters):
                continue
            helpers = HelperSaves(tree, aliases, project, unit.class_name)
            apart = set().union(*(state_dict_reads(s.node) | dict_values(s.node) for s in scopes))
            for finding in self._saves(scopes, optimizers, state + counters, apart, aliases, helpers, lines,
                                       loop.span.line):
                key = (finding.home[0] if finding.home else None, finding.span.line, finding.span.column)
                if key not in reported:
                    reported.add(key)
                    yield finding
            for finding in _resumes(scopes, optimizers, state, lines):
                key = (finding.home[0] if finding.home else None, finding.span.line, finding.span.column)
                if key not in reported:
                    reported.add(key)
                    yield finding

    def _saves(self, scopes: list[Scope], optimizers: set[str], state: list[tuple[str, str]], apart: set[str],
               aliases: dict[str, str], helpers: HelperSaves, lines: list[str], loop_line: int) -> Iterator[Finding]:
        """Checkpoints of each scope that hold an optimizer's state but not the stepped state (or
        an update counter: one named anywhere in the save call counts, a step in the file name);
        a state whose ``state_dict()`` the class or function reads anywhere is saved apart."""
        for scope in scopes:
            names = _visible(scope, optimizers)
            wanted = [(name, what) for name, what in state if _visible(scope, {name}) and name not in apart]
            for checkpoint in checkpoints(scope.node, aliases, helpers):
                if not any(optimizer_state(checkpoint.content, o) for o in names):
                    continue  # no optimizer state: a weights-only export
                call = ast.unparse(checkpoint.call)
                missing = [(name, what) for name, what in wanted if not mentions(checkpoint.content, name)
                           and not (what == "counter" and _counter_kept(name, checkpoint.content, call))
                           and not (checkpoint.stored.extended and name.startswith("self."))]
                if not missing:
                    continue
                message = f"this checkpoint saves the optimizer's state but not " \
                          f"{' and '.join(_entry(name, what) for name, what in missing)}"
                detail = f"The training loop {_uses(missing)}: a resumed run restarts its {_restarts(missing)}."
                site = checkpoint.stored.site
                if site is not None:  # a helper of another module writes it: reported at its save, no fix
                    yield Finding(span_of(site.call, site.lines), message, detail=detail, home=(site.path, loop_line))
                else:
                    yield Finding(span_of(checkpoint.call, lines), message,
                                  self._add_entries(checkpoint, missing, lines), detail=detail)

    def _add_entries(self, checkpoint: Checkpoint, missing: list[tuple[str, str]], lines: list[str]) -> Fix | None:
        """Append ``"scheduler": scheduler.state_dict()`` entries to the dict literal written in
        the save call (whose keys are all strings, so the new keys can be told apart)."""
        literal, applicability = checkpoint.literal, self.info.fix
        if literal is None or applicability is None or not literal.keys or not all(
                isinstance(k, ast.Constant) and isinstance(k.value, str) for k in literal.keys):
            return None
        keys = {k.value for k in literal.keys if isinstance(k, ast.Constant)}
        first = span_of(literal.keys[0], lines)  # type: ignore[arg-type]  # str constants, checked above
        quote = lines[first.line - 1][first.column - 1]
        entries = []
        for name, what in missing:
            key = name.rsplit(".", 1)[-1].lstrip("_") or name  # `self._schedule` is saved as "schedule"
            if key in keys:
                return None  # the key is taken (by something else under that name)
            keys.add(key)
            entries.append(f"{quote}{key}{quote}: {_entry(name, what)}")
        value = literal.values[-1]  # the new entries follow the last value, before its comma (if any)
        span = span_of(value, lines)
        text = "\n".join(lines[span.line - 1:span.end_line])
        start = span.column - 1
        end = len(text) - len(lines[span.end_line - 1]) + span.end_column - 1
        new = text[start:end] + ", " + ", ".join(entries)
        return Fix(applicability, "Save " + " and ".join(f"`{_entry(name, what)}`" for name, what in missing) + " too",
                   (Edit(span, new),))

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


def _visible(scope: Scope, names: set[str]) -> set[str]:
    """The names that mean the loop's objects in ``scope``: all in its own function, ``self``
    attributes in the class's other methods."""
    return names if scope.own else {n for n in names if n.startswith("self.")}


def _resumes(scopes: list[Scope], optimizers: set[str], state: list[tuple[str, str]],
             lines: list[str]) -> Iterator[Finding]:
    """Restores of an optimizer in a scope when no scope restores the stepped scheduler."""
    loads = [(scope, call, receiver) for scope in scopes for call, receiver in restores(scope.node)]
    restored = {receiver for _, _, receiver in loads}
    for scope, call, receiver in loads:
        if receiver not in _visible(scope, optimizers):
            continue
        missing = [name for name, what in state if what == "scheduler" and _visible(scope, {name})
                   and name not in restored]
        if missing:
            names = " and ".join(f"{name}.load_state_dict(...)" for name in missing)
            yield Finding(span_of(call, lines),
                          f"the resume restores the optimizer but not the scheduler (no {names})",
                          detail="The scheduler's warmup and decay restart from their first step.")


def _counter_kept(name: str, content: str, call: str) -> bool:
    """A counter is kept when the save call names it (a step in the file name) or the checkpoint
    holds the object it is an attribute of (``self.stats.steps`` in ``self.stats.state_dict()``)."""
    parts = name.split(".")
    owners = [".".join(parts[:i]) for i in range(1, len(parts))]
    return mentions(call, name) or any(mentions(content, owner) for owner in owners if owner != "self")


def _entry(name: str, what: str) -> str:
    """What the checkpoint should store for ``name``: a counter's value, else its state dict."""
    return name if what == "counter" else f"{name}.state_dict()"


def _uses(missing: list[tuple[str, str]]) -> str:
    stepped = [name for name, what in missing if what != "counter"]
    counted = [name for name, what in missing if what == "counter"]
    parts = ([f"steps {' and '.join(stepped)}"] if stepped else []) + (
        [f"counts its updates in {' and '.join(counted)}"] if counted else [])
    return " and ".join(parts)


def _restarts(missing: list[tuple[str, str]]) -> str:
    kinds = {what for _, what in missing}
    parts = (["LR warmup and decay"] if "scheduler" in kinds else []) + (
        ["loss scale"] if "scaler" in kinds else []) + (
        ["step-counted clocks (an LR or scheduler driven by the step, a step budget)"] if "counter" in kinds else [])
    return " and ".join(parts)
