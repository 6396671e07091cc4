"""ruff users keep their ``# noqa: GLxxx`` comments once ``lint.external = ["GL"]`` is set (the README
says so): without it, ruff's RUF102 (invalid rule code) fix deletes them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = ("import torch\n\n\ndef clip(model):\n"
          "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # noqa: GL101\n")


def _ruff_fix(folder: Path) -> str:
    (folder / "train.py").write_text(SOURCE)
    subprocess.run([sys.executable, "-m", "ruff", "check", "--preview", "--fix", "--quiet", "train.py"],
                   cwd=folder, capture_output=True, text=True)
    return (folder / "train.py").read_text()


@pytest.mark.parametrize("external", [False, True])
def test_ruff_keeps_gradlint_suppressions_only_when_gl_is_external(tmp_path: Path, external: bool) -> None:
    config = '[tool.ruff.lint]\nselect = ["RUF100", "RUF102"]\n'
    (tmp_path / "pyproject.toml").write_text(config + ('external = ["GL"]\n' if external else ""))
    fixed = _ruff_fix(tmp_path)
    if external:
        assert fixed == SOURCE
    else:
        assert fixed == SOURCE.replace("  # noqa: GL101", "")
