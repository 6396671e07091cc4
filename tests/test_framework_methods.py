"""Methods a framework calls once per batch (model/framework_methods.py): HF Trainer overrides
are micro-batch bodies of a boundary the Trainer owns; runner hooks gate with
``every_n_iters(runner, k)`` (a counted gate) and ``is_last_iter(runner)`` (a final branch)."""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst

from gradlint.engine import lint_source
from gradlint.explain import explain_source, render_text
from gradlint.model.framework_methods import boundary_owned_methods
from gradlint.model.gate_tests import read_gate
from gradlint.settings import default_settings

TRAINERS = """\
from transformers import Trainer as HFTrainer


class Base(HFTrainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        return model(**inputs).loss


class Custom(Base):
    def training_step(self, model, inputs, num_items_in_batch=None):
        loss = self.compute_loss(model, inputs)
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    def evaluate(self):
        pass


class Trainer:
    def training_step(self, model, inputs):
        loss = model(**inputs).loss
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
"""


def test_boundary_owned_methods_are_the_trainer_subclasses_hooks() -> None:
    """Through an alias and a class of the module; a class merely named Trainer is not one."""
    assert boundary_owned_methods(ast.parse(TRAINERS)) == {("Base", "compute_loss"), ("Custom", "training_step")}


def test_a_trainer_with_a_loop_of_its_own_owns_no_boundary() -> None:
    """Overriding ``train`` (or ``_inner_training_loop``) replaces the loop that calls the hooks."""
    text = TRAINERS.replace("    def evaluate(self):", "    def _inner_training_loop(self, *args):")
    assert boundary_owned_methods(ast.parse(text)) == {("Base", "compute_loss")}


def test_a_trainer_override_is_a_micro_batch_body(tmp_path: Path) -> None:
    path = tmp_path / "t.py"
    path.write_text(TRAINERS, encoding="utf-8")
    found = {(d.line, d.code) for d in lint_source(TRAINERS, str(path), default_settings())}
    assert found == {(13, "GL102")}  # the project's own Trainer (line 20) is a plain per-batch function
    shown = render_text(str(path), TRAINERS, explain_source(TRAINERS, str(path), default_settings()))
    assert "Custom.training_step(): a micro-batch body the framework calls (it owns the boundary)" in shown
    assert "Trainer.training_step(): plain loop (backward and step on every iteration)" in shown


def _reading(test: str):  # type: ignore[no-untyped-def]
    expr = cst.parse_expression(test)
    return read_gate(expr, lambda name: None, set(), lambda node: cst.Module([]).code_for_node(node))


def test_a_hook_s_every_n_iters_is_a_counted_gate_offset_by_one() -> None:
    reading = _reading("self.every_n_iters(runner, self.k)")
    assert reading is not None
    assert (reading.update_when, reading.counter, reading.offset_one, reading.final_branch) == (
        True, "runner.iter", True, False)
    assert cst.Module([]).code_for_node(reading.modulus) == "self.k"


def test_the_end_of_the_run_or_epoch_is_a_final_branch() -> None:
    for final in ("self.is_last_iter(runner)", "self.end_of_epoch(runner)"):
        reading = _reading(f"self.every_n_inner_iters(runner, 4) or {final}")
        assert reading is not None and reading.final_branch and reading.counter == "runner.inner_iter"


def test_other_calls_are_no_gate() -> None:
    assert _reading("self.should_step(runner, 4)") is None
    assert _reading("self.every_n_iters(runner)") is None


CHUNKED = """\
from transformers import Trainer


class Chunked(Trainer):
    def training_step(self, model, inputs, num_items_in_batch=None):
        for chunk in inputs["chunks"]:
            (model(chunk).loss / len(inputs["chunks"])).backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
"""


def test_an_override_with_a_micro_batch_loop_of_its_own_is_read_as_that_loop(tmp_path: Path) -> None:
    """Trap: the override accumulates over its own chunks and steps after them (a nested loop,
    the update after it), not once per chunk."""
    path = tmp_path / "t.py"
    path.write_text(CHUNKED, encoding="utf-8")
    assert lint_source(CHUNKED, str(path), default_settings()) == []
    shown = render_text(str(path), CHUNKED, explain_source(CHUNKED, str(path), default_settings()))
    assert "Chunked.training_step(): nested micro-batch loop (the update after it)" in shown
