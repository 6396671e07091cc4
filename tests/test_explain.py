"""``gradlint explain``: each loop's shape, gate, N, final window, the placement of every training
call in a gutter, and the findings inside the loop; the same as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from samples import BAD, gradlint

GATED = """\
import torch


def train(model, loader, optimizer, scheduler, accum, epochs):
    for epoch in range(epochs):
        for step, batch in enumerate(loader):
            loss = model(batch) / accum
            loss.backward()
            if (step + 1) % accum == 0:
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
"""

ACCELERATE = """\
def train(accelerator, model, loader, optimizer):
    for batch in loader:
        with accelerator.accumulate(model):
            accelerator.backward(model(batch))
            optimizer.step()
            optimizer.zero_grad()
"""


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "gated.py").write_text(GATED)
    (tmp_path / "acc.py").write_text(ACCELERATE)
    (tmp_path / "none.py").write_text("x = 1\n")
    return tmp_path


def test_a_nested_loop_with_its_gutter_and_findings(files: Path) -> None:
    result = gradlint("explain", "bad.py")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[:4] == [
        "bad.py:6: train(): nested micro-batch loop (the update after it)",
        "  N = accum_steps",
        "  boundary: line 7: for micro_step in range(accum_steps)",
        "   6        |     for update in range(num_updates):",
    ]
    assert "  11 micro  |             loss.backward()" in lines
    assert "  12 micro  |             torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)" in lines
    assert "  14 update |         optimizer.step()" in lines
    assert "  10        |             loss = loss / accum_steps" in lines
    findings = lines[lines.index("  findings:") + 1:]
    assert [line.split()[:2] for line in findings if line] == [["12:13:", "GL101"], ["13:13:", "GL104"]]


def test_a_counted_gate_without_a_final_window_branch(files: Path) -> None:
    lines = gradlint("explain", "gated.py").stdout.splitlines()
    assert lines[:4] == [
        "gated.py:6: train(): counted gate (the update inside the gate)",
        "  N = accum",
        "  boundary: line 9: (step + 1) % accum == 0",
        "  final window: no final-window branch",
    ]
    assert "  10 update |                 optimizer.step()" in lines
    assert [line.split()[1] for line in lines[lines.index("  findings:") + 1:] if line] == ["GL401"]


def test_accelerate_calls_that_act_at_the_boundary_are_marked(files: Path) -> None:
    lines = gradlint("explain", "acc.py").stdout.splitlines()
    assert lines[0] == "acc.py:2: train(): accelerator.accumulate() (Accelerate owns the boundary)"
    assert "  5 micro* |             optimizer.step()" in lines
    assert "  4 micro  |             accelerator.backward(model(batch))" in lines
    assert "  findings: none" in lines


def test_json_and_line_selection(files: Path) -> None:
    (loop,) = json.loads(gradlint("explain", "gated.py:10", "--format", "json").stdout)
    assert (loop["line"], loop["end_line"], loop["shape"], loop["n"], loop["gate_line"], loop["final_window"]) == (
        6, 12, "gated", "accum", 9, False)
    assert [(c["line"], c["role"], c["place"]) for c in loop["calls"]] == [
        (8, "backward", "micro"), (10, "step", "update"), (11, "scheduler_step", "update"), (12, "zero_grad", "update")]
    assert [f["code"] for f in loop["findings"]] == ["GL401"]
    assert json.loads(gradlint("explain", "gated.py:2", "--format", "json").stdout) == []


def test_no_loop(files: Path) -> None:
    result = gradlint("explain", "none.py")
    assert (result.exit_code, result.stdout) == (0, "none.py: no training loop found\n")
    assert gradlint("explain", "gated.py:2").stdout == "gated.py:2: no training loop found\n"


@pytest.mark.parametrize(("target", "message"), [
    ("missing.py", "gradlint: error: missing.py: cannot read file: No such file or directory\n"),
    ("nb.ipynb", "gradlint: error: nb.ipynb: explain reads Python files, not notebooks\n"),
])
def test_bad_targets_are_one_line_errors(files: Path, target: str, message: str) -> None:
    result = gradlint("explain", target)
    assert (result.exit_code, result.stderr) == (2, message)


HELPER_LOOP = """\
class Trainer:
    def train_step(self, batch):
        self.optimizer.zero_grad()
        for micro in batch.chunk(self.accum):
            loss = self.model(micro) / self.accum
            loss.backward()
        self.optimizer.step()

    def fit(self, loader):
        for batch in loader:
            self.train_step(batch)
"""


def test_a_micro_batch_loop_in_a_followed_helper_is_shown_from_the_caller(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "helper.py").write_text(HELPER_LOOP)
    result = gradlint("explain", "helper.py:11")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[:5] == [
        "helper.py:10: Trainer.fit(): nested micro-batch loop (the update after it)",
        "  N = self.accum",  # the loop over batch.chunk(self.accum) runs N times (model/micro_counts.py)
        "  boundary: line 4: for micro in batch.chunk(self.accum)",
        "  10        |         for batch in loader:",
        "  11        |             self.train_step(batch)",
    ]
