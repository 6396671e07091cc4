"""The flake8 plugin: flake8 itself reports gradlint's codes at the CLI's positions."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import FIXTURES
from samples import BAD


def _flake8(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flake8", "--select", "GL", *args], cwd=cwd,
                          capture_output=True, text=True)


def _gradlint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gradlint", "check", "--format", "text", "--no-cache", "--quiet",
                           *args], cwd=cwd, capture_output=True, text=True)


def test_flake8_and_the_cli_report_the_same_lines_on_fixtures(tmp_path: Path) -> None:
    marked = sorted(path for path in FIXTURES.rglob("*.py") if "# expect:" in path.read_text(encoding="utf-8")
                    and "projects" not in path.relative_to(FIXTURES).parts)  # read as projects, not alone
    sample = marked[::max(1, len(marked) // 24)]  # two dozen files with findings, spread over the tree
    names = []
    for number, path in enumerate(sample):
        copy = tmp_path / f"f{number:02d}_{path.name}"
        shutil.copyfile(path, copy)
        names.append(copy.name)
    flake8 = _flake8(*names, cwd=tmp_path)
    cli = _gradlint(*names, cwd=tmp_path)
    assert cli.returncode == 1 and flake8.returncode == 1, flake8.stderr
    assert len(cli.stdout.splitlines()) >= len(sample)
    assert sorted(flake8.stdout.splitlines()) == sorted(cli.stdout.splitlines())


def test_the_file_s_gradlint_configuration_applies(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(BAD)
    assert [line.split()[1] for line in _flake8("train.py", cwd=tmp_path).stdout.splitlines()] == ["GL101", "GL104"]
    (tmp_path / "gradlint.toml").write_text('ignore = ["GL104"]\n')
    assert [line.split()[:2] for line in _flake8("train.py", cwd=tmp_path).stdout.splitlines()] == [
        ["train.py:12:13:", "GL101"]]


def test_a_bad_configuration_is_one_finding_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(BAD)
    (tmp_path / "gradlint.toml").write_text("selekt = []\n")
    result = _flake8("train.py", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    (line,) = result.stdout.splitlines()
    assert line.startswith("train.py:1:1: GL000 gradlint configuration error: ")
    assert "selekt" in line
