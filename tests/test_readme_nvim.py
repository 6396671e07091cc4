"""The Neovim snippets of the README, run as written in a headless Neovim: each must start
`gradlint lsp` for a Python buffer and show its GL101 (skipped where that Neovim is missing)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "rules" / "gl101" / "flat_gate.py"
CHECK = """\
vim.cmd("filetype on")
vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("GRADLINT_FIXTURE")))
local shown = vim.wait(30000, function()
  for _, d in ipairs(vim.diagnostic.get(0)) do
    if d.code == "GL101" then return true end
  end
  return false
end, 50)
io.stdout:write(shown and "GL101 shown\\n" or "no GL101\\n")
io.stdout:flush()
vim.cmd(shown and "qall!" or "cquit! 1")
"""
SNIPPETS = {  # the line that introduces the snippet -> the oldest Neovim it is written for
    "**Neovim 0.7**": (0, 7),
    "**Neovim** 0.8 or later": (0, 8),
    "Neovim 0.11 or later": (0, 11),
}


def _snippet(intro: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    after = text[text.index(intro):]
    found = re.search(r"```lua\n(.*?)```", after, re.S)
    assert found is not None, intro
    return found.group(1)


def _nvim_version() -> tuple[int, int] | None:
    nvim = shutil.which("nvim")
    if nvim is None:
        return None
    first = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=30).stdout.split("\n")[0]
    found = re.match(r"NVIM v(\d+)\.(\d+)", first)
    return (int(found.group(1)), int(found.group(2))) if found else None


@pytest.mark.parametrize("intro", list(SNIPPETS))
def test_readme_neovim_snippet_starts_the_server(intro: str, tmp_path: Path) -> None:
    snippet = _snippet(intro)  # the README keeps every snippet, whatever Neovim is here
    version = _nvim_version()
    if version is None:
        pytest.skip("nvim is not on PATH (apt-get install neovim runs these checks)")
    if version < SNIPPETS[intro]:
        pytest.skip(f"this snippet needs Neovim {'.'.join(map(str, SNIPPETS[intro]))}; this is "
                    f"{'.'.join(map(str, version))}")
    pytest.importorskip("pygls", reason="the language server needs the lsp extra (pygls)")
    (tmp_path / "init.lua").write_text(snippet)
    (tmp_path / "check.lua").write_text(CHECK)
    train = tmp_path / "train.py"
    train.write_bytes(FIXTURE.read_bytes())
    env = {"PATH": os.pathsep.join([str(Path(sys.executable).parent), os.defpath]), "HOME": str(tmp_path),
           "XDG_CONFIG_HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path),
           "GRADLINT_FIXTURE": str(train)}
    proc = subprocess.run([shutil.which("nvim") or "nvim", "--headless", "--clean", "-c", "luafile init.lua",
                           "-c", "luafile check.lua"], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=120)
    assert (proc.returncode, proc.stdout) == (0, "GL101 shown\n"), proc.stderr
