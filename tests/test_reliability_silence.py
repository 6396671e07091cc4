"""Nothing passes silently and nothing crashes (issue 18, points 3 and 4): files left
unanalysed are findings in every format, skipped named paths and unreadable folders are
warnings, form feeds do not hide findings, symlinks keep their names, a broken cache is a miss."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from samples import BAD, gradlint

import gradlint.discovery as discovery_module
from gradlint.cache import Cache
from gradlint.settings import default_settings

_SIZE = len(BAD.encode())
_GL000 = f"not analysed: {_SIZE} bytes is over the 10-byte limit (--max-file-size 0 checks it)"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GRADLINT_CACHE_DIR", raising=False)
    (tmp_path / "bad.py").write_text(BAD)
    return tmp_path


def _check(*args: str):
    return gradlint("check", "--no-cache", "--isolated", "-j", "1", *args)


def test_a_file_over_the_size_limit_is_a_gl000_in_concise_and_exits_1(project: Path) -> None:
    result = _check("--format", "concise", "--max-file-size", "10", "bad.py")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == f"bad.py:1:1: GL000 {_GL000}"
    assert _check("--format", "concise", "--max-file-size", "10", "--exit-zero", "bad.py").exit_code == 0


def test_a_file_over_the_size_limit_is_reported_in_json_sarif_gitlab_and_junit(project: Path) -> None:
    found = json.loads(_check("--format", "json", "--max-file-size", "10", "bad.py").stdout)
    assert [(d["code"], d["message"], d["line"]) for d in found] == [("GL000", _GL000, 1)]
    sarif = json.loads(_check("--format", "sarif", "--max-file-size", "10", "bad.py").stdout)
    assert [(r["ruleId"], r["message"]["text"]) for r in sarif["runs"][0]["results"]] == [("GL000", _GL000)]
    gitlab = json.loads(_check("--format", "gitlab", "--max-file-size", "10", "bad.py").stdout)
    assert len(gitlab) == 1 and _GL000 in gitlab[0]["description"]
    junit = _check("--format", "junit", "--max-file-size", "10", "bad.py")
    assert junit.exit_code == 1 and 'failures="1"' in junit.stdout and "not analysed" in junit.stdout


def test_a_file_over_the_size_limit_is_silent_when_gl000_is_ignored(project: Path) -> None:
    result = _check("--format", "concise", "--max-file-size", "10", "--ignore", "GL000", "bad.py")
    assert result.exit_code == 0
    assert "skipped bad.py" in result.stderr  # the notice still says it


def test_a_named_file_that_force_exclude_drops_is_a_warning(project: Path) -> None:
    result = _check("--force-exclude", "--exclude", "bad.py", "bad.py")
    assert result.exit_code == 0
    assert result.stderr == "gradlint: warning: bad.py is excluded by the configuration (force-exclude): not checked\n"


def test_a_named_folder_whose_files_gitignore_skips_is_a_warning(project: Path) -> None:
    (project / ".git").mkdir()
    (project / "runs").mkdir()
    (project / "runs" / "train.py").write_text(BAD)
    (project / ".gitignore").write_text("runs/\n")
    result = _check("runs")
    assert result.stderr == ("gradlint: warning: runs: nothing checked: what it holds is excluded "
                             "(.gitignore or exclude patterns)\n")
    result = _check(".", "--extend-exclude", "bad.py")
    assert result.stderr == ("gradlint: warning: .: nothing checked: what it holds is excluded "
                             "(.gitignore or exclude patterns)\n")


def test_a_folder_without_python_files_is_one_warning(project: Path) -> None:
    (project / "empty" / ".git").mkdir(parents=True)
    assert _check("empty").stderr == "gradlint: warning: No Python files found under empty\n"


def test_an_unreadable_folder_is_skipped_with_a_warning(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "locked").mkdir()
    (project / "locked" / "train.py").write_text(BAD)
    real = os.scandir

    def scandir(path):  # root reads any folder: refuse it the way a permission bit would
        if os.fspath(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(discovery_module.os, "scandir", scandir)
    result = _check("--format", "concise", ".")
    assert result.exit_code == 1
    assert [line.split(" ")[0] for line in result.stdout.splitlines() if ": GL" in line] == [
        "bad.py:12:13:", "bad.py:13:13:"]
    assert result.stderr == "gradlint: warning: cannot read folder locked: Permission denied: skipped\n"


@pytest.mark.parametrize("lead", ["\f", "  \f", "\f\f", "\t\f"])
def test_a_form_feed_in_the_indentation_does_not_hide_findings(project: Path, lead: str) -> None:
    lines = BAD.splitlines(keepends=True)
    expected = _check("--format", "concise", "bad.py").stdout
    # the line of the first finding, and the training function's header, with form feeds first
    first = int(expected.split(":")[1])
    header = next(i for i, line in enumerate(lines) if line.startswith("def "))
    lines[first - 1] = lead + lines[first - 1]
    lines[header] = "\f" + lines[header]
    (project / "bad.py").write_text("".join(lines))
    result = _check("--format", "concise", "bad.py")
    shifted = [line for line in result.stdout.splitlines() if ": GL" in line]
    before = [line for line in expected.splitlines() if ": GL" in line]
    assert [line.split(":")[1] for line in shifted] == [line.split(":")[1] for line in before]
    column = int(shifted[0].split(":")[2])
    assert column == int(before[0].split(":")[2]) + len(lead)  # columns count the form feeds
    assert lines[first - 1][column - 1:] == lines[first - 1].lstrip(" \t\f")  # the statement's first character


def test_a_form_feed_line_gets_no_fix(project: Path) -> None:
    lines = BAD.splitlines(keepends=True)
    header = next(i for i, line in enumerate(lines) if line.startswith("def "))
    lines[header + 1] = "\f" + lines[header + 1]
    (project / "bad.py").write_text("".join(lines))
    before = (project / "bad.py").read_bytes()
    _check("--fix", "bad.py")
    assert (project / "bad.py").read_bytes() == before


def test_a_symlink_is_reported_under_its_own_name(project: Path) -> None:
    os.symlink("bad.py", project / "link.py")
    (project / "sub").mkdir()
    os.symlink("../bad.py", project / "sub" / "other.py")
    result = _check("--format", "concise", "link.py", "sub")
    assert sorted({line.split(":")[0] for line in result.stdout.splitlines() if ": GL" in line}) == [
        "link.py", "sub/other.py"]


def test_a_file_named_like_the_cache_folder_costs_only_speed(project: Path) -> None:
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (project / ".gradlint_cache").write_text("not a folder\n")
    result = gradlint("check", "--isolated", "--format", "concise", "bad.py")
    assert result.exit_code == 1 and result.stderr == ""
    assert len([line for line in result.stdout.splitlines() if ": GL" in line]) == 2
    named = gradlint("check", "--isolated", "--cache-dir", ".gradlint_cache", "bad.py")
    assert named.exit_code == 2 and named.stderr == "gradlint: error: the cache folder .gradlint_cache is a file\n"


@pytest.mark.parametrize("stored", [
    [1],
    {"diagnostics": 5},
    {"diagnostics": [7]},
    {"diagnostics": [{"line": "1"}]},
    {"diagnostics": [{"line": 1, "column": 1, "end_line": 1, "end_column": 2, "code": 5, "name": "n",
                      "severity": "error", "message": "m", "fix": None}]},
    {"diagnostics": [{"line": True, "column": 1, "end_line": 1, "end_column": 2, "code": "GL101", "name": "n",
                      "severity": "error", "message": "m", "fix": None}]},
    {"diagnostics": [{"line": 1, "column": 1, "end_line": 1, "end_column": 2, "code": "GL101", "name": "n",
                      "severity": "fatal", "message": "m", "fix": None}]},
    {"diagnostics": [{"line": 1, "column": 1, "end_line": 1, "end_column": 2, "code": "GL101", "name": "n",
                      "severity": "error", "message": "m", "fix": {"applicability": "safe", "message": "x",
                                                                   "edits": [{"line": 1}]}}]},
    {"diagnostics": [{"line": 1, "column": 1, "end_line": 1, "end_column": 2, "code": "GL101", "name": "n",
                      "severity": "error", "message": "m", "fix": None, "cell": "2"}]},
])
def test_a_cache_entry_of_the_wrong_shape_is_a_miss(tmp_path: Path, stored: object) -> None:
    cache = Cache(tmp_path / "cache")
    key = cache.key("0" * 64, default_settings(), False)
    cache.put(key, [])
    assert cache.get(key, "a.py") == []
    path = next(p for p in (tmp_path / "cache").rglob(f"{key}.json"))
    path.write_text(json.dumps(stored))
    assert cache.get(key, "a.py") is None


def test_a_corrupt_cache_entry_is_linted_again_through_the_cli(project: Path) -> None:
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    first = gradlint("check", "--isolated", "--format", "concise", "bad.py")
    for entry in (project / ".gradlint_cache").rglob("*.json"):
        if entry.name != "files.json":
            entry.write_text(json.dumps({"diagnostics": [{"line": 1, "code": 5}]}))
    again = gradlint("check", "--isolated", "--format", "concise", "bad.py")
    assert (again.exit_code, again.stdout) == (first.exit_code, first.stdout)


@pytest.mark.parametrize("output_format", ["full", "concise", "text", "json", "json-lines", "sarif", "github",
                                           "gitlab", "junit"])
def test_a_file_over_the_size_limit_is_a_gl000_in_every_format_and_exits_1(project: Path, output_format: str) -> None:
    result = _check("--format", output_format, "--max-file-size", "10", "bad.py")
    assert result.exit_code == 1
    assert "GL000" in result.stdout and _GL000 in result.stdout
    assert "All checks passed" not in result.stdout
    assert _check("--format", output_format, "--max-file-size", "10", "--exit-zero", "bad.py").exit_code == 0


@pytest.mark.parametrize("args", [["--format", "full"], ["--format", "concise"], ["--format", "text", "--statistics"],
                                  ["--fix", "--diff"], ["--fix", "--show-fixes"]],
                         ids=["full", "concise", "statistics", "diff", "show-fixes"])
def test_a_newline_in_a_file_name_forges_no_line(project: Path, args: list[str]) -> None:
    """A file named ``evil<newline>x.py:1:1: GL999 forged.py`` is shown with ``\\n``: no output
    line starts with the forged location, and the real name appears escaped."""
    (project / "bad.py").unlink()
    (project / "evil\nx.py:1:1: GL999 forged.py").write_text(BAD)
    result = _check(*args, ".")
    lines = (result.stdout + result.stderr).splitlines()
    assert not any(line.startswith("x.py") or line.lstrip("-+ ").startswith("x.py") for line in lines), lines
    if "--statistics" not in args:  # statistics name no file
        assert any("evil\\nx.py:1:1: GL999 forged.py" in line for line in lines)
