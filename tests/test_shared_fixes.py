"""A call reported by two rules, where one fix resolves both: two problems, both fixable, in
``check`` (its ``[*]`` marks, hint and ``--statistics``) and in ``--fix`` ("Fixed")."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES
from gradlint.engine import lint_source
from gradlint.settings import default_settings
from samples import gradlint

SHARED = FIXTURES / "rules" / "gl303" / "clip_per_micro_batch_scaled.py"
GL101 = "train.py:11:9: GL101 [*] torch.nn.utils.clip_grad_norm_() runs on every micro-batch; clip once, just before scaler.step()"
GL303 = "train.py:11:9: GL303 [*] torch.nn.utils.clip_grad_norm_() clips scaled gradients; call scaler.unscale_(optimizer) first"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(SHARED.read_text())
    return tmp_path


def test_the_second_finding_carries_the_fix_that_resolves_it() -> None:
    first, second = lint_source(SHARED.read_text(), "train.py", default_settings())
    assert (first.code, second.code) == ("GL101", "GL303")
    assert first.fix is not None and second.fix == first.fix


def test_check_counts_both_as_fixable(project: Path) -> None:
    result = gradlint("check", "--no-cache", "--output-format", "concise", ".")
    assert result.stdout.splitlines() == [GL101, GL303, "Found 2 problems in 1 file.", "[*] 2 fixable with the --fix option."]
    statistics = gradlint("check", "--no-cache", "--statistics", ".").stdout.splitlines()
    assert statistics[:2] == ["1  GL101  [*] clip-per-micro-batch", "1  GL303  [*] clip-before-unscale"]
    assert statistics[-1] == "[*] 2 fixable with the --fix option."


def test_fix_counts_both_as_fixed(project: Path) -> None:
    result = gradlint("check", "--no-cache", "--fix", "--show-fixes", "--output-format", "concise", ".")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == ["Fixed 2 problems:", "- train.py:", "    1 \u00d7 GL101 (clip-per-micro-batch)",
                                          "    1 \u00d7 GL303 (clip-before-unscale)", "Found 2 problems (2 fixed, 0 remaining)."]
    assert "            scaler.unscale_(optimizer)\n            torch.nn.utils.clip_grad_norm_(" in (
        project / "train.py").read_text()


def test_a_fix_that_leaves_the_other_finding_is_not_shared() -> None:
    """GL204's fix (drop the manual division) does not sync the window, so GL402 at the same
    call keeps no fix: none is claimed without the re-lint showing it."""
    path = FIXTURES / "rules" / "gl204" / "accelerate_nested_manual.py"
    found = {d.code: d for d in lint_source(path.read_text(), "x.py", default_settings()) if d.line == 43}
    assert set(found) == {"GL204", "GL402"}
    assert found["GL204"].fix is not None and found["GL402"].fix is None
