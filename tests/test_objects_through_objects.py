"""Training objects reached through other objects: an attribute of a project class's instance
(``self.holder.g``), a method of one (``self.updater.update()``), loop variables unpacked from
containers (``zip``, ``enumerate``, ``.items()``), and project classes whose kind is read from
the class, never from its name. An object of unknown kind makes no rule fire that needs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradlint.engine import lint_source
from gradlint.names import Kind
from gradlint.project.index import ProjectIndex
from gradlint.project.kinds import KindReader
from gradlint.project.symbols import ClassInfo
from gradlint.settings import default_settings

HOLDER = """\
import torch


class Holder:
    def __init__(self, model):
        self.g = torch.optim.Adam(model.parameters())
        self.optimizer = torch.optim.lr_scheduler.StepLR(self.g, 3)
"""

THROUGH_SELF = HOLDER + """

class Runner:
    def __init__(self, model):
        self.holder = Holder(model)

    def train(self, model, loader, n):
        for i, x in enumerate(loader):
            (model(x) / n).backward()
            self.holder.{attr}.step()
            if (i + 1) % n == 0:
                self.holder.g.zero_grad()
"""

THROUGH_LOCAL = HOLDER + """

def run(model, loader, n):
    holder = Holder(model)
    for i, x in enumerate(loader):
        (model(x) / n).backward()
        holder.g.step()
        if (i + 1) % n == 0:
            holder.g.zero_grad()
"""

TWO_KINDS = """
    def reset(self):
        self.g = torch.optim.lr_scheduler.StepLR(self.optimizer, 3)
"""


def _lint(tmp_path: Path, text: str, name: str = "t.py") -> set[tuple[str, int]]:
    (tmp_path / ".git").mkdir(exist_ok=True)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return {(d.code, d.line) for d in lint_source(text, str(path), default_settings())}


def test_an_attribute_of_a_project_instance_on_self_has_its_class_kind(tmp_path: Path) -> None:
    """``g`` says nothing by its name; ``Holder`` makes it an optimizer."""
    assert _lint(tmp_path, THROUGH_SELF.format(attr="g")) == {("GL102", 17)}


def test_an_attribute_of_a_local_project_instance_has_its_class_kind(tmp_path: Path) -> None:
    assert _lint(tmp_path, THROUGH_LOCAL) == {("GL102", 14)}


def test_the_class_kind_wins_over_the_attribute_name(tmp_path: Path) -> None:
    """``self.holder.optimizer`` is named like an optimizer but ``Holder`` assigns it a scheduler:
    its ``step()`` is no optimizer step (and no GL102)."""
    zero = "                self.holder.g.zero_grad()"
    text = THROUGH_SELF.format(attr="optimizer").replace(zero, "                self.holder.g.step()\n" + zero)
    assert _lint(tmp_path, text) == {("GL104", 17)}


def test_an_attribute_of_two_kinds_in_its_class_has_none_through_the_instance(tmp_path: Path) -> None:
    """Trap: ``Holder.g`` is an optimizer in ``__init__`` and a scheduler in ``reset``."""
    text = THROUGH_SELF.format(attr="g").replace("\n\nclass Runner", TWO_KINDS + "\n\nclass Runner")
    assert _lint(tmp_path, text) == set()


def test_an_attribute_the_class_never_assigns_has_no_kind(tmp_path: Path) -> None:
    """Trap: ``Holder`` has no ``h``; nothing is known of ``self.holder.h``."""
    text = THROUGH_SELF.format(attr="g").replace("self.holder.g.step()", "self.holder.h.step()")
    assert _lint(tmp_path, text) == set()


UPDATER = """\
import torch


class Updater:
    def __init__(self, model):
        self.optimizer = torch.optim.Adam(model.parameters())

    def update(self):
        self.optimizer.step()


class Runner:
    def __init__(self, model):
        self.updater = Updater(model)
        self.model = model

    def train(self, loader, n):
        for i, x in enumerate(loader):
            (self.model(x) / n).backward()
            self.updater.update()
            if (i + 1) % n == 0:
                self.updater.optimizer.zero_grad()
"""


def test_a_method_of_a_project_instance_on_self_is_followed(tmp_path: Path) -> None:
    """The step is written in ``Updater.update``, reached per micro-batch through ``self.updater``."""
    assert _lint(tmp_path, UPDATER) == {("GL102", 9)}


CONTAINERS = """\
import torch


class Multi:
    def __init__(self, a, b):
        self.optimizers = [torch.optim.Adam(a), torch.optim.Adam(b)]
        self.named = {{"a": torch.optim.Adam(a), "b": torch.optim.Adam(b)}}
        self.schedulers = [torch.optim.lr_scheduler.StepLR(o, 3) for o in self.optimizers]

    def train(self, loader, n, model):
        for i, x in enumerate(loader):
            (model(x) / n).backward()
            for {header}:
                u.step()
            if (i + 1) % n == 0:
                model.zero_grad()
"""


@pytest.mark.parametrize(("header", "code"), [
    ("u, s in zip(self.optimizers, self.schedulers)", "GL102"),
    ("k, u in enumerate(self.optimizers)", "GL102"),
    ("k, u in self.named.items()", "GL102"),
    ("u in self.named.values()", "GL102"),
    ("s, u in zip(self.optimizers, self.schedulers)", None),  # u is an element of a comprehension: unknown
    ("u, k in enumerate(self.optimizers)", None),  # u is the index
])
def test_loop_variables_unpacked_from_containers(tmp_path: Path, header: str, code: str | None) -> None:
    found = _lint(tmp_path, CONTAINERS.format(header=header))
    assert found == ({(code, 14)} if code else set())


PROJECT = {
    "wrappers.py": """\
import torch
from torch.optim import Optimizer
from torch.optim.lr_scheduler import LambdaLR


class OptimizerWithWarmupSchedule:
    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.scheduler = LambdaLR(optimizer, lambda s: 1.0)

    def step(self):
        self.optimizer.step()
        self.scheduler.step()


class Lookahead(Optimizer):
    pass


class WarmupSchedule(LambdaLR):
    pass


class TrainerWithStep:
    def __init__(self, model):
        self.optimizer = torch.optim.Adam(model.parameters())

    def step(self, batch):
        self.model(batch).backward()
        self.optimizer.step()
""",
    "owner.py": """\
import torch
from wrappers import Lookahead, OptimizerWithWarmupSchedule, TrainerWithStep, WarmupSchedule


class Owner:
    def __init__(self, model):
        self.wrapped = OptimizerWithWarmupSchedule(torch.optim.Adam(model.parameters()))
        self.look = Lookahead(model.parameters(), {})
        self.warm = WarmupSchedule(self.look, lambda s: 1.0)
        self.trainer = TrainerWithStep(model)
""",
}


def test_a_project_class_gets_its_kind_from_the_class_not_its_name(tmp_path: Path) -> None:
    """``OptimizerWithWarmupSchedule`` is named like a schedule and steps an optimizer: an
    optimizer. Bases outside the project decide too; a trainer's ``step(batch)`` that runs
    backward is no optimizer."""
    (tmp_path / ".git").mkdir()
    for name, text in PROJECT.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    index = ProjectIndex()
    owner = index.symbols((tmp_path / "owner.py").absolute())
    assert owner is not None
    cls = owner.classes["Owner"]
    assert isinstance(cls, ClassInfo)
    kinds = KindReader(index).attributes(cls)
    assert kinds.kinds == {"wrapped": Kind.OPTIMIZER, "look": Kind.OPTIMIZER, "warm": Kind.SCHEDULER,
                           "trainer.optimizer": Kind.OPTIMIZER, "wrapped.scheduler": Kind.SCHEDULER}
    assert "trainer" not in kinds.kinds


RUNNER_HOOK = """\
import torch


class Runner:
    def __init__(self, model):
        self.main = torch.optim.Adam(model.parameters())


class Hook:
    def after_iter(self, runner: Runner, n):
        (runner.outputs["loss"] / n).backward()
        runner.main.step()
        if runner.iter % n == 0:
            runner.main.zero_grad()
"""


def test_a_parameter_annotated_with_a_project_class_is_its_instance(tmp_path: Path) -> None:
    assert _lint(tmp_path, RUNNER_HOOK) == {("GL102", 12)}
    (tmp_path / "plain").mkdir()
    assert _lint(tmp_path / "plain", RUNNER_HOOK.replace("runner: Runner", "runner")) == set()
