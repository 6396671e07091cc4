"""The project index: module files, imports of every form, re-exports and class bases."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradlint.project.index import ProjectIndex
from gradlint.project.layout import project_root
from gradlint.project.symbols import ClassInfo, Definition

FILES = {
    "pyproject.toml": "[project]\nname = 'p'\n",
    "main.py": ("from engine import train_one_epoch\nimport util.misc as misc\nimport util.misc\n"
                "from trainer import BaseTrainer\nfrom trainer.custom import Custom\nimport torch\n"),
    "engine.py": "from util.misc import NativeScaler\n\n\ndef train_one_epoch(model):\n    pass\n",
    "util/__init__.py": "",
    "util/misc.py": "class NativeScaler:\n    def __call__(self, loss):\n        pass\n",
    "trainer/__init__.py": "from .base import BaseTrainer\n",
    "trainer/base.py": ("from transformers import Trainer as HFTrainer\n\n\nclass BaseTrainer(HFTrainer):\n"
                        "    def setup(self):\n        pass\n\n    def step(self):\n        pass\n"),
    "trainer/custom.py": ("from . import base\nfrom .base import BaseTrainer as B\n\n\nclass Custom(B):\n"
                          "    def step(self):\n        pass\n\n\nclass Other(base.BaseTrainer):\n    pass\n"),
    "src/mypkg/__init__.py": "",
    "src/mypkg/engine.py": "def step_optimizer(opt):\n    opt.step()\n",
    "scripts/run.py": ("import mypkg.engine as engine\nimport mypkg.engine\nfrom mypkg import engine as e2\n"
                       "def helper():\n    pass\n\n\ndef helper():\n    return 1\n"),
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name, text in FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def _where(found: Definition | ClassInfo | None) -> tuple[str, str, int] | None:
    if found is None:
        return None
    definition = found.definition if isinstance(found, ClassInfo) else found
    return definition.path.name, definition.qualname, definition.line


def test_the_root_is_the_nearest_marker_folder(project: Path) -> None:
    assert project_root(project / "trainer" / "base.py") == project.absolute()
    assert project_root(project / "main.py") == project.absolute()


@pytest.mark.parametrize(("module", "dotted", "expected"), [
    ("main.py", "train_one_epoch", ("engine.py", "train_one_epoch", 4)),
    ("main.py", "misc.NativeScaler.__call__", ("misc.py", "NativeScaler.__call__", 2)),
    ("main.py", "util.misc.NativeScaler", ("misc.py", "NativeScaler", 1)),
    ("main.py", "BaseTrainer.setup", ("base.py", "BaseTrainer.setup", 5)),   # re-exported by the package
    ("main.py", "Custom.step", ("custom.py", "Custom.step", 6)),             # its own method first
    ("main.py", "Custom.setup", ("base.py", "BaseTrainer.setup", 5)),        # then its project base's
    ("trainer/custom.py", "Other.step", ("base.py", "BaseTrainer.step", 8)),  # a base named through a module
    ("engine.py", "NativeScaler", ("misc.py", "NativeScaler", 1)),
    ("scripts/run.py", "engine.step_optimizer", ("engine.py", "step_optimizer", 1)),  # src/ layout
    ("scripts/run.py", "mypkg.engine.step_optimizer", ("engine.py", "step_optimizer", 1)),
    ("scripts/run.py", "e2.step_optimizer", ("engine.py", "step_optimizer", 1)),
])
def test_names_are_followed_to_their_definitions(project: Path, module: str, dotted: str,
                                                  expected: tuple[str, str, int]) -> None:
    assert _where(ProjectIndex().lookup(project / module, dotted)) == expected


@pytest.mark.parametrize(("module", "dotted"), [
    ("main.py", "torch.optim.AdamW"),     # outside the project
    ("main.py", "nothing"),
    ("main.py", "train_one_epoch.attr"),  # attributes of functions are not followed
    ("scripts/run.py", "helper"),         # defined twice: ambiguous, so unknown
    ("main.py", "Custom.missing"),
])
def test_what_cannot_be_told_is_none(project: Path, module: str, dotted: str) -> None:
    assert ProjectIndex().lookup(project / module, dotted) is None


def test_outer_bases_are_qualified_through_imports(project: Path) -> None:
    index = ProjectIndex()
    custom = index.lookup(project / "main.py", "Custom")
    assert isinstance(custom, ClassInfo)
    assert index.base_names(custom) == ["transformers.Trainer"]


def test_an_editor_buffer_replaces_the_file_and_digests_follow_the_text(project: Path) -> None:
    engine = project / "engine.py"
    edited = "def train_one_epoch(model):\n    pass\n\n\ndef evaluate():\n    pass\n"
    index = ProjectIndex({engine: edited})
    assert _where(index.lookup(project / "main.py", "train_one_epoch")) == ("engine.py", "train_one_epoch", 1)
    assert index.digest(engine) != ProjectIndex().digest(engine)
    engine.write_text(edited)
    assert index.digest(engine) == ProjectIndex().digest(engine)


def test_a_cycle_of_imports_ends(project: Path) -> None:
    (project / "a.py").write_text("from b import f\n")
    (project / "b.py").write_text("from a import f\n")
    assert ProjectIndex().lookup(project / "a.py", "f") is None


def test_a_module_that_does_not_parse_has_no_symbols(project: Path) -> None:
    (project / "engine.py").write_text("def train_one_epoch(:\n")
    assert ProjectIndex().lookup(project / "main.py", "train_one_epoch") is None
