"""The language server with a client nobody here wrote: headless Neovim runs ``nvim_check.lua``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
FIXTURE = TESTS.parent / "fixtures" / "rules" / "gl101" / "flat_gate.py"


@pytest.mark.skipif(shutil.which("nvim") is None,
                    reason="nvim is not on PATH (apt-get install neovim runs this editor check)")
def test_neovim_shows_gl101_and_applies_its_quick_fix(tmp_path: Path):
    pytest.importorskip("pygls", reason="the language server needs the lsp extra (pygls)")
    train = tmp_path / "train.py"
    train.write_bytes(FIXTURE.read_bytes())
    env = {"PATH": os.defpath, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path),
           "XDG_DATA_HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path),
           "GRADLINT_FIXTURE": str(train), "GRADLINT_PYTHON": sys.executable,
           "PYTHONPATH": str(TESTS.parent)}
    proc = subprocess.run(
        [shutil.which("nvim"), "--headless", "--clean", "-c", f"luafile {TESTS / 'nvim_check.lua'}"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=180)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "diagnostic train.py:76:13: GL101 torch.nn.utils.clip_grad_norm_() runs on every micro-batch" in out
    assert ("code action 1: [quickfix] Move `torch.nn.utils.clip_grad_norm_()` to the update boundary "
            "(clip once, just before the step) (GL101)") in out
    assert "GL101 diagnostics after the fix: 0" in out
    gate = "if (step + 1) % args.gradient_accumulation_steps == 0 or step + 1 == len(train_dataloader):"
    assert (f"  76 |             {gate}\n"
            "  77 |                 torch.nn.utils.clip_grad_norm_(  # expect: GL101\n") in out
    assert train.read_bytes() == FIXTURE.read_bytes()  # the edit is in the buffer, not written
