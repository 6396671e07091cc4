"""The README's runtime examples run as written: the watched loop and the helper pass, and the pytest
example passes under the plugin."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
SECTION = README.split("\n## Runtime checks: ", 1)[1].split("\n## ", 1)[0]
BLOCKS = re.findall(r"```python\n(.*?)```", SECTION, re.DOTALL)


def test_the_section_has_three_examples() -> None:
    assert len(BLOCKS) == 3


@pytest.mark.parametrize("index", [0, 1], ids=["watch", "assert_accumulation_equivalent"])
def test_the_example_runs_cleanly(index: int) -> None:
    result = subprocess.run([sys.executable, "-W", "error::gradlint.runtime.TrainingLoopWarning", "-c", BLOCKS[index]],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr


def test_the_pytest_example_passes(tmp_path: Path) -> None:
    (tmp_path / "test_example.py").write_text(BLOCKS[2])
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_example.py"],
                            cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
