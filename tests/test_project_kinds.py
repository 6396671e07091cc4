"""Kinds of training objects kept on ``self`` across a class hierarchy, returned by project
factories, unpacked from ``prepare`` / ``initialize``, and held in containers."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradlint.names import Kind
from gradlint.project.index import ProjectIndex
from gradlint.project.kinds import KindReader
from gradlint.project.symbols import ClassInfo, Definition

FILES = {
    ".git/HEAD": "",
    "trainer/__init__.py": "",
    "trainer/factory.py": '''\
import torch
from transformers import get_cosine_schedule_with_warmup


def build_optimizer(cfg, model):
    if cfg.sgd:
        return torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer = torch.optim.AdamW(model.parameters())
    return optimizer


def build_scheduler(optimizer):
    return get_cosine_schedule_with_warmup(optimizer, 10, 100)


def confused(cfg):
    if cfg.a:
        return torch.optim.AdamW([])
    return torch.cuda.amp.GradScaler()


def recursive(n):
    return recursive(n - 1)
''',
    "trainer/base.py": '''\
import torch
from .factory import build_optimizer


class Base:
    def __init__(self, cfg, model):
        self.model = model
        self.optim = build_optimizer(cfg, model)
        self.scaler = torch.cuda.amp.GradScaler(enabled=cfg.fp16)
        self.sched = None
        self.either = torch.optim.AdamW([])
''',
    "trainer/custom.py": '''\
import deepspeed
from torch.optim import Adam, AdamW
from torch.cuda.amp import GradScaler
from trainer.base import Base
from trainer import factory


class Custom(Base):
    def setup(self, accelerator, a, b):
        self.sched = factory.build_scheduler(self.optim)
        self.model, self.optim = accelerator.prepare(self.model, self.optim)
        self.engine, self.ds_opt, _, self.ds_sched = deepspeed.initialize(model=self.model)
        self.optimizers = [Adam(a), Adam(b)]
        self.by_name = {"g": Adam(a), "d": Adam(b)}
        self.mixed = [AdamW(a), GradScaler()]
        self.either = GradScaler()
        self.odd = factory.confused(a)
        self.loop = factory.recursive(3)
        self.made = self.make_optimizer()
        self.hf = self.create_optimizer()

    def make_optimizer(self):
        return AdamW(self.model.parameters())
''',
}


@pytest.fixture
def reader(tmp_path: Path) -> tuple[KindReader, Path]:
    for name, text in FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return KindReader(ProjectIndex()), tmp_path


def _class(reader: KindReader, module: Path, name: str) -> ClassInfo:
    found = reader.index.lookup(module, name)
    assert isinstance(found, ClassInfo)
    return found


def test_attribute_kinds_across_the_hierarchy(reader: tuple[KindReader, Path]) -> None:
    kinds, root = reader
    custom = kinds.attributes(_class(kinds, root / "trainer" / "custom.py", "Custom"))
    assert custom.kinds == {
        "optim": Kind.OPTIMIZER,       # a project factory in the base class, then prepared
        "scaler": Kind.SCALER,          # inherited
        "sched": Kind.SCHEDULER,        # a factory reached through `from trainer import factory`
        "engine": Kind.ENGINE,
        "ds_opt": Kind.ENGINE_PART,
        "ds_sched": Kind.ENGINE_PART,
        "either": Kind.SCALER,          # the subclass's own assignment wins over the base's
        "made": Kind.OPTIMIZER,         # a method of the class
        "hf": Kind.OPTIMIZER,           # an outside method named as optimizer factories are
    }
    assert custom.elements == {"optimizers": Kind.OPTIMIZER, "by_name": Kind.OPTIMIZER}


def test_the_base_class_alone(reader: tuple[KindReader, Path]) -> None:
    kinds, root = reader
    base = kinds.attributes(_class(kinds, root / "trainer" / "base.py", "Base"))
    assert base.kinds == {"optim": Kind.OPTIMIZER, "scaler": Kind.SCALER, "either": Kind.OPTIMIZER}


@pytest.mark.parametrize(("name", "expected"), [
    ("build_optimizer", Kind.OPTIMIZER),   # every return agrees (a local name and a constructor)
    ("build_scheduler", Kind.SCHEDULER),
    ("confused", None),                    # returns disagree
    ("recursive", None),                   # a cycle ends
])
def test_returned_kinds(reader: tuple[KindReader, Path], name: str, expected: Kind | None) -> None:
    kinds, root = reader
    function = kinds.index.lookup(root / "trainer" / "factory.py", name)
    assert isinstance(function, Definition)
    assert kinds.returned(function) is expected


@pytest.mark.parametrize(("annotation", "expected"), [
    ("Runner", "Runner"),
    ("sched.Warmup", "sched.Warmup"),
    ("Optional[sched.Warmup]", "sched.Warmup"),      # an optional argument holds the class or None
    ("typing.Optional[Warmup]", "Warmup"),
    ("Warmup | None", "Warmup"),
    ("None | Warmup", "Warmup"),
    ("'Warmup | None'", "Warmup"),                   # a forward reference
    ("Warmup | Cosine", None),                       # two classes: neither
    ("list[Warmup]", None),                          # a container is not an instance
    ("'not valid ('", None),
])
def test_annotated_class_names(annotation: str, expected: str | None) -> None:
    import ast

    from gradlint.project.kinds import annotated_name

    assert annotated_name(ast.parse(annotation, mode="eval").body) == expected


@pytest.mark.parametrize(("body", "expected"), [
    ("self.n += 1\n    return self.n % k == 0", ("n", 0)),
    ('"""Whether to update."""\n    self.n += 1\n    return 0 == self.n % k', ("n", 0)),
    ("self.n += 1\n    return self.n % self.k == 0", None),   # N is not handed in
    ("return self.n % k == 0", None),                        # counts nothing itself
    ("self.n += 2\n    return self.n % k == 0", None),
    ("self.n += 1\n    return self.m % k == 0", None),       # tests another counter
    ("self.n += 1\n    return self.n % k != 0", None),       # true while accumulating: not read
    ("self.n += 1\n    log(self.n)\n    return self.n % k == 0", None),
])
def test_window_counting_methods(body: str, expected: tuple[str, int] | None) -> None:
    import ast

    from gradlint.project.window_counters import window_counter

    node = ast.parse(f"def step(self, k):\n    {body}\n").body[0]
    assert isinstance(node, ast.FunctionDef)
    assert window_counter(node) == expected
