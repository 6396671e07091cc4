"""A method call on a receiver of unknown class (``self.task.train_step(...)``, ``self.task`` an
unannotated constructor parameter) reaches the project's definitions of that method when they all
train alike and one base class defines it; any disagreement, a callee that cannot be read, or a
definition in the caller's own class hierarchy resolves nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradlint.cache import CACHE_DIR_NAME, Cache
from gradlint.engine import lint_source
from gradlint.project.index import ProjectIndex
from gradlint.project.method_sites import MethodSites
from gradlint.runner import run
from gradlint.settings import default_settings

BASE = """\
class Task:
    def train_step(self, sample, model, criterion, optimizer, ignore_grad=False):
        loss = criterion(model, sample)
        if ignore_grad:
            loss *= 0
        optimizer.backward(loss)
        return loss

    def optimizer_step(self, optimizer, model):
        optimizer.step()
"""

OVERRIDES = """\
from tasks.base import Task


class Weighted(Task):
    def train_step(self, sample, model, criterion, optimizer, ignore_grad=False):
        criterion.weight = 2
        return super().train_step(sample, model, criterion, optimizer, ignore_grad)


class PerPair(Task):
    def train_step(self, sample, model, criterion, optimizer, ignore_grad=False):
        def forward_backward(part):
            optimizer.backward(criterion(model, part))

        for part in sample:
            forward_backward(part)
"""

TRAINER = """\
import torch


class Trainer:
    def __init__(self, task, model, criterion):
        self.task = task
        self.model = model
        self.criterion = criterion
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        self.lr_scheduler = torch.optim.lr_scheduler.StepLR(self.optimizer, 10)

    def train_step(self, samples):
        self.optimizer.zero_grad()
        for sample in samples:
            self.task.train_step(sample=sample, model=self.model, criterion=self.criterion,
                                 optimizer=self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.task.optimizer_step(self.optimizer, model=self.model)
        self.lr_scheduler.step()
"""


def _project(tmp_path: Path, overrides: str = OVERRIDES, trainer: str = TRAINER) -> set[tuple[str, int]]:
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "tasks").mkdir(exist_ok=True)
    (tmp_path / "tasks" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "tasks" / "base.py").write_text(BASE, encoding="utf-8")
    (tmp_path / "tasks" / "overrides.py").write_text(overrides, encoding="utf-8")
    path = tmp_path / "trainer.py"
    path.write_text(trainer, encoding="utf-8")
    return {(d.code, d.line) for d in lint_source(trainer, str(path), default_settings())}


def test_every_definition_backpropagating_makes_the_loop_a_micro_batch_loop(tmp_path: Path) -> None:
    """``Weighted`` delegates to ``Task`` through ``super()``; ``PerPair`` backpropagates in a
    function it defines: both agree with ``Task.train_step``, and ``Task.optimizer_step`` steps
    after the loop, so the clip in the loop runs per micro-batch."""
    assert _project(tmp_path) == {("GL101", 17)}


def test_a_definition_that_also_steps_resolves_nothing(tmp_path: Path) -> None:
    stepping = OVERRIDES + """

class Stepping(Task):
    def train_step(self, sample, model, criterion, optimizer, ignore_grad=False):
        optimizer.backward(criterion(model, sample))
        optimizer.step()
"""
    assert _project(tmp_path, stepping) == set()


def test_a_definition_that_does_not_train_resolves_nothing(tmp_path: Path) -> None:
    idle = OVERRIDES + """

class Frozen(Task):
    def train_step(self, sample, model, criterion, optimizer, ignore_grad=False):
        return criterion(model, sample)
"""
    assert _project(tmp_path, idle) == set()


def test_a_super_call_leaving_the_project_resolves_nothing(tmp_path: Path) -> None:
    outside = OVERRIDES + """

class Outside(object):
    def train_step(self, sample, model, criterion, optimizer, ignore_grad=False):
        return super().train_step(sample, model, criterion, optimizer, ignore_grad)
"""
    assert _project(tmp_path, outside) == set()


def test_definitions_that_cannot_take_the_call_are_left_out(tmp_path: Path) -> None:
    """``Trainer.train_step(self, samples)`` has none of the call's keywords; a method taking
    ``**kwargs`` could, and it does not train: nothing is resolved."""
    assert _project(tmp_path) == {("GL101", 17)}
    catch_all = OVERRIDES + """

class Loose(Task):
    def train_step(self, **kwargs):
        return None
"""
    assert _project(tmp_path, catch_all) == set()


def test_a_definition_in_the_callers_own_class_hierarchy_resolves_nothing(tmp_path: Path) -> None:
    """A task that drives another (``self.inner``): the receiver may be of the caller's own
    hierarchy, whose ``Task.train_step`` can take the call."""
    wrapper = TRAINER.replace("import torch\n", "import torch\nfrom tasks.base import Task\n").replace(
        "class Trainer:", "class Trainer(Task):").replace("self.task = task", "self.inner = task").replace(
        "self.task.", "self.inner.").replace("def train_step(self, samples):", "def run(self, samples):")
    assert _project(tmp_path, trainer=wrapper) == set()


def test_a_known_receiver_or_module_is_not_dispatched(tmp_path: Path) -> None:
    """``tasks.base`` is an imported module: its call is looked up, never dispatched."""
    via_module = TRAINER.replace("import torch\n", "import torch\nimport tasks as task_lib\n").replace(
        "self.task.optimizer_step(", "task_lib.optimizer_step(")
    assert _project(tmp_path, trainer=via_module) == set()


def test_a_method_nested_in_a_function_has_no_sites(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "a.py").write_text(BASE, encoding="utf-8")
    (tmp_path / "b.py").write_text("def make():\n    class Local:\n        def train_step(self):\n"
                                   "            pass\n    return Local\n", encoding="utf-8")
    sites = MethodSites(ProjectIndex(), tmp_path / "a.py")
    assert sites.named("train_step") is None
    found = sites.named("optimizer_step")
    assert found is not None and [s.definition.qualname for s in found] == ["Task.optimizer_step"]



def test_a_cached_result_misses_once_a_new_module_defines_the_method(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The verdict rests on every definition of the name: a cached result records the project's
    listing, so a module that appears with a definition that also steps is read (nothing said).
    The trainer has a base outside the project, so it is no mixin (whose search records the
    listing as well)."""
    trainer = TRAINER.replace("import torch\n", "import torch\nfrom contextlib import AbstractContextManager\n").replace(
        "class Trainer:", "class Trainer(AbstractContextManager):")
    assert _project(tmp_path, trainer=trainer) == {("GL101", 18)}
    monkeypatch.chdir(tmp_path)

    def check() -> set[tuple[str, int]]:
        result = run([Path("trainer.py")], default_settings(), cache=Cache(tmp_path / CACHE_DIR_NAME))
        return {(d.code, d.line) for d in result.diagnostics}

    assert check() == {("GL101", 18)}
    assert check() == {("GL101", 18)}
    (tmp_path / "tasks" / "stepping.py").write_text("""\
from tasks.base import Task


class Stepping(Task):
    def train_step(self, sample, model, criterion, optimizer, ignore_grad=False):
        optimizer.backward(criterion(model, sample))
        optimizer.step()
""", encoding="utf-8")
    assert check() == set()
