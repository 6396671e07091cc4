"""``gradlint check - --stdin-filename path.py``: lint and fix piped text, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FIXTURES
from gradlint.fixer import fix_source
from gradlint.settings import default_settings
from samples import BAD, GOOD, gradlint

FIXED_SAFE = fix_source(BAD, "train.py", default_settings()).text
FIXED_ALL = fix_source(BAD, "train.py", default_settings(), unsafe=True).text


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_stdin_is_reported_under_the_given_name(project: Path) -> None:
    result = gradlint("check", "-", "--stdin-filename", "src/train.py", "--format", "text", input=BAD)
    assert result.exit_code == 1
    assert [line.split(" ")[:2] for line in result.stdout.splitlines()[:2]] == [
        ["src/train.py:12:13:", "GL101"], ["src/train.py:13:13:", "GL104"]]
    assert result.stdout.splitlines()[-1] == "Found 2 problems in 1 file."


def test_stdin_without_a_name_and_without_problems(project: Path) -> None:
    result = gradlint("check", "-", "--format", "text", input=BAD)
    assert result.stdout.startswith("-:12:13: GL101 ")
    result = gradlint("check", "-", "--stdin-filename", "ok.py", input=GOOD)
    assert (result.exit_code, result.stdout) == (0, "All checks passed! (1 file checked)\n")


def test_full_format_shows_the_piped_text(project: Path) -> None:
    lines = gradlint("check", "-", "--stdin-filename", "never/written.py", input=BAD).stdout.splitlines()
    assert "12 |             torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)" in lines


def test_configuration_is_found_from_the_stdin_filename(project: Path) -> None:
    (project / "pkg").mkdir()
    (project / "pkg" / "gradlint.toml").write_text('[per-file-ignores]\n"train.py" = ["GL104"]\n')
    result = gradlint("check", "-", "--stdin-filename", "pkg/train.py", "--format", "text", input=BAD)
    assert [line.split(" ")[1] for line in result.stdout.splitlines()[:-1]] == ["GL101"]


def test_fix_writes_the_fixed_text_to_stdout_and_the_report_to_stderr(project: Path) -> None:
    result = gradlint("check", "-", "--stdin-filename", "train.py", "--fix", "--format", "text", input=BAD)
    assert result.exit_code == 1
    assert FIXED_SAFE != BAD
    assert result.stdout == FIXED_SAFE
    assert result.stderr.splitlines()[0].startswith("train.py:12:13: GL104 ")
    result = gradlint("check", "-", "--stdin-filename", "train.py", "--fix", "--unsafe-fixes", "--format", "text",
                      input=BAD)
    assert result.exit_code == 0
    assert result.stdout == FIXED_ALL
    assert result.stderr == "Found 2 problems (2 fixed, 0 remaining).\n"


def test_fix_keeps_crlf_and_passes_unfixable_text_through(project: Path) -> None:
    crlf = BAD.replace("\n", "\r\n").encode()
    result = gradlint("check", "-", "--stdin-filename", "train.py", "--fix", input=crlf)
    assert result.stdout_bytes == FIXED_SAFE.replace("\n", "\r\n").encode()
    broken = b"import torch\nloss.backward(\n"
    result = gradlint("check", "-", "--stdin-filename", "train.py", "--fix", "--format", "text", input=broken)
    assert result.stdout_bytes == broken
    assert "GL000" in result.stderr


def test_force_excluded_stdin_is_passed_through(project: Path) -> None:
    (project / "gradlint.toml").write_text('extend-exclude = ["vendor"]\nforce-exclude = true\n')
    result = gradlint("check", "-", "--stdin-filename", "vendor/train.py", "--format", "text", input=BAD)
    assert (result.exit_code, result.stdout) == (0, "All checks passed! (0 files checked)\n")
    result = gradlint("check", "-", "--stdin-filename", "vendor/train.py", "--fix", input=BAD)
    assert (result.exit_code, result.stdout) == (0, BAD)


def test_notebook_on_stdin(project: Path) -> None:
    raw = (FIXTURES / "notebooks" / "accumulation.ipynb").read_text(encoding="utf-8")
    result = gradlint("check", "-", "--stdin-filename", "nb.ipynb", "--format", "json", input=raw)
    assert [(d["cell"], d["line"], d["code"]) for d in json.loads(result.stdout)] == [(5, 9, "GL101")]
    fixed = gradlint("check", "-", "--stdin-filename", "nb.ipynb", "--fix", input=raw)
    assert fixed.exit_code == 0
    source = json.loads(fixed.stdout)["cells"][4]["source"]
    assert source[8] == "        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)\n"
