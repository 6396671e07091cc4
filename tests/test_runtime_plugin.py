"""The pytest plugin: registered as a pytest11 entry point, light to import, and its fixtures work in a
project's own test run. Also: nothing of the linter imports torch."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT


def _loaded(code: str, *modules: str) -> list[str]:
    probe = f"import sys\n{code}\nprint('loaded:', *[m for m in {modules!r} if m in sys.modules])"
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    return result.stdout.rsplit("loaded:", 1)[1].split()


def test_the_plugin_is_a_pytest11_entry_point() -> None:
    plugins = {e.name: e.value for e in importlib.metadata.entry_points(group="pytest11")}
    assert plugins.get("gradlint") == "gradlint.pytest_plugin"


@pytest.mark.parametrize("module", ["gradlint", "gradlint.pytest_plugin", "gradlint.runtime", "gradlint.testing",
                                    "gradlint.cli"])
def test_importing_loads_neither_torch_nor_libcst(module: str) -> None:
    assert _loaded(f"import {module}", "torch", "libcst") == []


PROJECT_TESTS = '''
import pytest
import torch

from gradlint.runtime import TrainingLoopError


def train(optimizer_steps_every_micro_batch, gradlint_watch):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    watcher = gradlint_watch(optimizer, accumulation_steps=2)
    for step in range(4):
        (model(torch.randn(2, 3)).pow(2).mean() / 2).backward()
        if optimizer_steps_every_micro_batch or step % 2 == 1:
            optimizer.step()
        if step % 2 == 1:
            optimizer.zero_grad()
    return watcher


def test_correct(gradlint_watch):
    assert train(False, gradlint_watch).findings == []


def test_buggy(gradlint_watch):
    train(True, gradlint_watch)


def test_hooks_are_gone_after_the_fixture(gradlint_watch):
    optimizer = torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=0.1)
    gradlint_watch(optimizer, accumulation_steps=2).close()
    assert "zero_grad" not in vars(optimizer) and not optimizer._optimizer_step_pre_hooks


def test_equivalence(gradlint_equivalent):
    def update(model, optimizer, micro_batches):
        optimizer.zero_grad()
        for inputs in micro_batches:
            (model(inputs).pow(2).sum() / 6).backward()
        optimizer.step()

    torch.manual_seed(0)
    gradlint_equivalent(update, torch.nn.Linear(3, 1), lambda m: torch.optim.AdamW(m.parameters()), torch.randn(6, 3))
'''


def test_the_fixtures_in_a_project_test_run(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    (tmp_path / "test_training.py").write_text(textwrap.dedent(PROJECT_TESTS))
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W",
                             "ignore::UserWarning", "test_training.py"],
                            cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 failed, 3 passed" in result.stdout
    assert "FAILED test_training.py::test_buggy - gradlint.runtime.errors.TrainingLoopErr" in result.stdout
    assert f"gradlint.runtime.errors.TrainingLoopError: {tmp_path / 'test_training.py'}:16: GL102 SGD stepped after 1 " \
           "of 2 backward calls, and the next update after 1" in result.stdout  # line 16: optimizer.step()
