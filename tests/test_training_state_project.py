"""Loss contracts and training state read across a project's modules (GL205, GL501, GL502):
bases, loss functions, save helpers and model classes defined in another module, and the cache
that must notice when that other module changes."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES, expected_markers

from gradlint.engine import lint_source, recording_uses
from gradlint.project.index import ProjectIndex
from gradlint.settings import Settings, default_settings

PROJECT = FIXTURES / "projects" / "loss_contracts"
GL502 = Settings(select=frozenset({"GL502"}))

MODEL = '''\
import torch.nn as nn


class ResNetTiny(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.ReLU())
        self.head = nn.Linear(16, classes)


class FrozenNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.BatchNorm2d(16)
        self.norm.eval()
'''

TRAIN = '''\
from models import FrozenNet, ResNetTiny


def train(loader, optimizer_cls, accum):
    model = ResNetTiny(10)
    frozen = FrozenNet()
    optimizer = optimizer_cls(model.parameters())
    for i, (x, y) in enumerate(loader):
        (model(x, y) / accum).backward()
        if (i + 1) % accum == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
    return frozen
'''


def _project(root: Path, files: dict[str, str]) -> Path:
    (root / ".git").mkdir()
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize("name", ["trainers/focal.py", "trainers/sft.py", "run.py", "train_loop.py"])
def test_each_module_reports_its_markers_in_the_project(name: str) -> None:
    source = (PROJECT / name).read_text(encoding="utf-8")
    found = lint_source(source, str(PROJECT / name), default_settings(), project=ProjectIndex())
    assert {(d.line, d.code) for d in found} == expected_markers(source)


@pytest.mark.parametrize("name", ["trainers/focal.py", "run.py", "train_loop.py"])
def test_a_module_alone_knows_nothing_of_its_base_loss_or_helper(tmp_path: Path, name: str) -> None:
    """Copied alone (the project base, loss function or save helper missing) the module reports
    none of its markers: they come from the other module. (trl's SFTTrainer is a known base.)"""
    source = (PROJECT / name).read_text(encoding="utf-8").replace("from .base", "from base")
    alone = _project(tmp_path, {"alone.py": source})
    assert lint_source(source, str(alone / "alone.py"), default_settings(), project=ProjectIndex()) == []


def test_gl502_reports_a_model_of_another_module_at_its_construction(tmp_path: Path) -> None:
    root = _project(tmp_path, {"models.py": MODEL, "train.py": TRAIN})
    found = lint_source(TRAIN, str(root / "train.py"), GL502, project=ProjectIndex())
    assert [(d.line, d.column, d.code, d.severity.value) for d in found] == [(5, 13, "GL502", "info")]
    assert found[0].message == "ResNetTiny's BatchNorm (models.py:7) sees one micro-batch, not the window (train, line 8)"


def test_gl502_is_silent_without_accumulation_or_when_converted(tmp_path: Path) -> None:
    plain = TRAIN.replace("(model(x, y) / accum).backward()", "model(x, y).backward()").replace(
        "        if (i + 1) % accum == 0 or i + 1 == len(loader):\n            optimizer.step()\n"
        "            optimizer.zero_grad()\n", "        optimizer.step()\n        optimizer.zero_grad()\n")
    synced = TRAIN.replace("    model = ResNetTiny(10)\n",
                           "    model = nn.SyncBatchNorm.convert_sync_batchnorm(ResNetTiny(10))\n")
    root = _project(tmp_path, {"models.py": MODEL})
    for text in (plain, synced):
        (root / "train.py").write_text(text, encoding="utf-8")
        assert lint_source(text, str(root / "train.py"), GL502, project=ProjectIndex()) == []


def test_a_module_rule_records_the_other_modules_it_reads(tmp_path: Path) -> None:
    """A cached result of train.py is valid only while models.py is unchanged: the module rule's
    read of models.py is recorded like the loops' reads."""
    root = _project(tmp_path, {"models.py": MODEL, "train.py": TRAIN})
    with recording_uses() as used:
        lint_source(TRAIN, str(root / "train.py"), GL502, project=ProjectIndex())
    assert (root / "models.py").absolute() in used.uses


@pytest.mark.parametrize(("idiom", "old", "new", "expected"), [
    ("torch/checkpoint_methods.py", '        state["scheduler"] = self.scheduler.state_dict()\n', "", {(30, "GL501")}),
    ("torch/checkpoint_methods.py", '        state.update({"scaler": self.scaler.state_dict()})\n', "", {(30, "GL501")}),
    ("torch/checkpoint_methods.py", '        self.scheduler.load_state_dict(state["scheduler"])\n', "", {(39, "GL501")}),
    ("transformers/trl_trainers.py", "MarginDPOTrainer(DPOTrainer)", "MarginDPOTrainer(SFTTrainer)", {(9, "GL205")}),
    ("transformers/trl_trainers.py", "    loss_is_scaled_for_ga = False\n\n", "", {(33, "GL205")}),
])
def test_the_correct_forms_are_flagged_once_broken(idiom: str, old: str, new: str, expected: set) -> None:
    """Each trap of the idioms is clean because of the line the edit removes."""
    source = (FIXTURES / "idioms" / idiom).read_text(encoding="utf-8")
    assert old in source
    broken = source.replace(old, new)
    assert {(d.line, d.code) for d in lint_source(broken, "idiom.py", default_settings())} == expected


def test_gl501_reports_a_save_helper_of_another_module_at_its_save(tmp_path: Path) -> None:
    """A helper of another module that writes the optimizer's state alone is reported at its own
    save, in its module, without a fix and naming the loop; the helper handed the scheduler is
    not; the loop's module alone reports nothing of it."""
    helper = (PROJECT / "sharded_checkpoint.py").read_text(encoding="utf-8")
    loop = (PROJECT / "sharded_loop.py").read_text(encoding="utf-8")
    root = _project(tmp_path, {"sharded_checkpoint.py": helper, "sharded_loop.py": loop})
    with recording_uses() as reads:
        own = lint_source(loop, str(root / "sharded_loop.py"), default_settings(), project=ProjectIndex())
    assert own == []
    assert [(d.path, d.line, d.code, d.fix, d.message) for d in reads.elsewhere] == [
        (str((root / "sharded_checkpoint.py").absolute()), 10, "GL501", None,
         "this checkpoint saves the optimizer's state but not scheduler.state_dict() (in the loop at "
         "sharded_loop.py:8)")]
    assert (root / "sharded_checkpoint.py").absolute() in reads.uses
    (tmp_path / "alone").mkdir()
    alone = _project(tmp_path / "alone", {"sharded_loop.py": loop})
    with recording_uses() as reads:
        assert lint_source(loop, str(alone / "sharded_loop.py"), default_settings(), project=ProjectIndex()) == []
    assert reads.elsewhere == []


def test_gl206_follows_a_compute_loss_func_of_another_module_into_its_helpers(tmp_path: Path) -> None:
    """``self.compute_loss_func = partial(f, ...)`` with ``f`` in another module: the unguarded
    division in the helper ``f`` calls is reported there (no fix), naming the choosing line."""
    losses = (PROJECT / "kl_losses.py").read_text(encoding="utf-8")
    trainer = (PROJECT / "kl_trainer.py").read_text(encoding="utf-8")
    root = _project(tmp_path, {"kl_losses.py": losses, "kl_trainer.py": trainer})
    with recording_uses() as reads:
        assert lint_source(trainer, str(root / "kl_trainer.py"), default_settings(), project=ProjectIndex()) == []
    assert [(d.path, d.line, d.code, d.fix) for d in reads.elsewhere] == [
        (str((root / "kl_losses.py").absolute()), 9, "GL206", None)]
    assert reads.elsewhere[0].message.endswith("(in the loop at kl_trainer.py:11)")
    assert lint_source(losses, str(root / "kl_losses.py"), default_settings(), project=ProjectIndex()) == []


@pytest.mark.parametrize(("trap", "old", "new", "expected"), [
    ("gl501/good_wrapper_keeps_state.py", '"scaler": self.scaler.state_dict(), "model"', '"model"', {(44, "GL501")}),
    ("gl501/good_counter_saved.py", ',\n                    "global_step": global_step}', "}", {(17, "GL501")}),
    ("gl501/good_extended_state.py", "add_state_to_save(states, scaler)", "add_state_to_save(states)", {(19, "GL501")}),
    ("gl205/good_loss_func_given_count.py", 'inputs["labels"], **kwargs)', 'inputs["labels"])', {(17, "GL205")}),
])
def test_the_traps_of_this_part_are_flagged_once_broken(trap: str, old: str, new: str, expected: set) -> None:
    """Each trap fixture is clean because of the text the edit removes (the state the wrapper's
    or trainer's own state_dict() keeps, the saved counter, the scaler handed to the hook that
    extends the dict, the kwargs passed to the compute_loss_func)."""
    source = (FIXTURES / "rules" / trap).read_text(encoding="utf-8")
    assert old in source and expected_markers(source) == set()
    broken = source.replace(old, new)
    assert {(d.line, d.code) for d in lint_source(broken, "trap.py", default_settings())} == expected
