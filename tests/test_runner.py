"""The runner: the process pool gives the same report as one process, the size guard, --jobs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES
from fixture_results import diagnostics, fixtures
from samples import BAD, GOOD, gradlint

from gradlint.diagnostics import Diagnostic
from gradlint.runner import DEFAULT_MAX_FILE_SIZE, Skipped, _chunks, _Task, run
from gradlint.settings import default_settings


@pytest.fixture
def fixtures_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(FIXTURES, tmp_path / "fixtures", ignore=shutil.ignore_patterns("projects"))  # tests/test_projects.py
    monkeypatch.chdir(tmp_path)
    return tmp_path / "fixtures"


def test_pool_reports_like_one_process_on_the_fixtures(fixtures_copy: Path) -> None:
    """Two workers over every fixture, with the default rules, report exactly what linting
    each file in this process finds (the session's fixture results, which derive the default
    rules' findings from the every-rule lint, and the notebook linted here)."""
    pool = gradlint("check", "fixtures", "--format", "json", "--no-cache", "--jobs", "2")
    notebook = run([Path("fixtures/notebooks/accumulation.ipynb")], default_settings(), jobs=1).diagnostics
    alone = sorted([*notebook, *(d for f in fixtures() for d in diagnostics(f))], key=Diagnostic.sort_key)
    assert pool.exit_code == 1 and notebook and len(alone) > 50
    assert json.loads(pool.stdout) == [d.to_dict() for d in alone]


def test_more_jobs_than_files_in_text(fixtures_copy: Path) -> None:
    one = gradlint("check", "fixtures/rules/gl102", "--format", "full", "--no-cache", "-j", "1")
    pool = gradlint("check", "fixtures/rules/gl102", "--format", "full", "--no-cache", "-j", "64")
    assert one.stdout == pool.stdout
    assert "Found" in one.stdout


def test_run_with_a_pool_in_process(fixtures_copy: Path) -> None:
    files = sorted([*(fixtures_copy / "rules" / "gl101").glob("*.py"), *(fixtures_copy / "idioms" / "accelerate").glob("*.py")])
    alone = run(files, default_settings(), jobs=1)
    pooled = run(files, default_settings(), jobs=2)
    assert [d.to_dict() for d in pooled.diagnostics] == [d.to_dict() for d in alone.diagnostics]
    assert pooled.files_checked == alone.files_checked == len(files)


def test_chunks_put_big_files_first_and_cover_every_task() -> None:
    tasks = [_Task(i, Path(f"f{i}.py"), f"f{i}.py", default_settings(), size)
             for i, size in enumerate([10, 5000, 30, 20, 4000, 10, 10])]
    chunks = _chunks(tasks, 4)
    assert [t.index for t in chunks[0]] == [1]
    assert [t.index for t in chunks[1]] == [4]
    assert sorted(t.index for chunk in chunks for t in chunk) == list(range(7))


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5", ""])
def test_bad_jobs_is_one_line_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.chdir(tmp_path)
    result = gradlint("check", ".", "--jobs", value)
    assert result.exit_code == 2
    assert result.stderr == f"gradlint: error: --jobs expects a whole number >= 1, got {value!r}\n"


@pytest.mark.parametrize("value", ["-1", "1MB", "x"])
def test_bad_max_file_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.chdir(tmp_path)
    result = gradlint("check", ".", "--max-file-size", value)
    assert result.exit_code == 2
    assert result.stderr == f"gradlint: error: --max-file-size expects a whole number >= 0, got {value!r}\n"


def _big_bad_file(folder: Path, size: int) -> Path:
    path = folder / "big.py"
    padding = "# " + "x" * 78 + "\n"
    path.write_text(BAD + padding * (size // len(padding) + 1))
    return path


def test_a_big_file_is_skipped_with_a_notice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    big = _big_bad_file(tmp_path, DEFAULT_MAX_FILE_SIZE)
    (tmp_path / "good.py").write_text(GOOD)
    result = gradlint("check", ".", "--format", "concise")
    size = big.stat().st_size
    assert result.exit_code == 1  # a file left unanalysed is a GL000, never a silent pass
    assert result.stdout.splitlines()[0] == (f"big.py:1:1: GL000 not analysed: {size} bytes is over the "
                                             f"{DEFAULT_MAX_FILE_SIZE}-byte limit (--max-file-size 0 checks it)")
    assert result.stderr == (f"gradlint: notice: skipped big.py: {size} bytes is over the {DEFAULT_MAX_FILE_SIZE}"
                             "-byte limit (--max-file-size 0 checks it)\n")


def test_no_size_limit_checks_the_big_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _big_bad_file(tmp_path, DEFAULT_MAX_FILE_SIZE)
    result = gradlint("check", "big.py", "--format", "concise", "--max-file-size", "0")
    assert result.exit_code == 1
    assert result.stderr == ""
    assert [line.split(" ")[:2] for line in result.stdout.splitlines()[:2]] == [
        ["big.py:12:13:", "GL101"], ["big.py:13:13:", "GL104"]]


def test_a_lower_limit_skips_smaller_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.py").write_text(BAD)
    result = run([Path("bad.py")], default_settings(), max_file_size=100)
    assert result.skipped == [Skipped("bad.py", len(BAD), 100)]
    assert result.files_checked == 0
    assert [(d.path, d.line, d.code, d.message) for d in result.diagnostics] == [
        ("bad.py", 1, "GL000", f"not analysed: {len(BAD)} bytes is over the 100-byte limit (--max-file-size 0 checks it)")]
    assert len(run([Path("bad.py")], default_settings(), max_file_size=len(BAD)).diagnostics) == 2


def test_an_unreadable_file_is_a_syntax_error_diagnostic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run([Path("missing.py")], default_settings(), jobs=2)
    assert [(d.path, d.code, d.message) for d in result.diagnostics] == [
        ("missing.py", "GL000", "I/O error: cannot read file: No such file or directory")]
    assert result.files_checked == 1


def test_the_limit_from_the_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.gradlint]\nmax-file-size = 100\n")
    (tmp_path / "bad.py").write_text(BAD)
    result = gradlint("check", ".", "--format", "concise")
    assert (result.exit_code, result.stdout.splitlines()[0]) == (1, f"bad.py:1:1: GL000 not analysed: {len(BAD)} bytes "
                                                                 "is over the 100-byte limit (--max-file-size 0 checks it)")
    assert result.stderr == (f"gradlint: notice: skipped bad.py: {len(BAD)} bytes is over the 100-byte limit "
                             "(--max-file-size 0 checks it)\n")
    assert gradlint("check", ".", "--max-file-size", "0").exit_code == 1


@pytest.mark.parametrize("value", ["-1", "'1MB'", "true", "1.5"])
def test_a_bad_limit_in_the_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(f"[tool.gradlint]\nmax-file-size = {value}\n")
    (tmp_path / "bad.py").write_text(BAD)
    result = gradlint("check", ".")
    assert result.exit_code == 2
    assert result.stderr == ("gradlint: error: pyproject.toml: [tool.gradlint] max-file-size: "
                             "expected a whole number of bytes >= 0 (0: no limit)\n")
