"""The `gradlint check` contract of the core issue: exit statuses, discovery, the text and
JSON forms, GL000 for files that are not Python text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from samples import BAD, GOOD, gradlint


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "bad.py").write_text(BAD)
    (tmp_path / "pkg" / "good.py").write_text(GOOD)
    for skipped in (".git", "build", "__pycache__", "env"):
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / "bad.py").write_text(BAD)
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    return tmp_path


def test_exit_status_is_1_with_findings_and_0_when_clean(tree: Path) -> None:
    assert gradlint("check", "--no-cache", "pkg/bad.py").exit_code == 1
    assert gradlint("check", "--no-cache", "pkg/good.py").exit_code == 0
    assert gradlint("check", "--no-cache", "--exit-zero", "pkg/bad.py").exit_code == 0


def test_folders_are_walked_skipping_vcs_build_cache_and_virtualenvs(tree: Path) -> None:
    result = gradlint("check", "--no-cache", "--format", "json")
    assert {d["path"] for d in json.loads(result.output)} == {"pkg/bad.py"}


def test_text_lines_and_summary(tree: Path) -> None:
    lines = gradlint("check", "--no-cache", "--format", "text", "pkg").output.splitlines()
    assert lines[0].startswith("pkg/bad.py:12:13: GL101 torch.nn.utils.clip_grad_norm_() runs on every")
    assert lines[1].startswith("pkg/bad.py:13:13: GL104 scheduler.step() runs on every micro-batch")
    assert lines[-1] == "Found 2 problems in 1 file."


def test_json_objects_keys_and_order(tree: Path) -> None:
    found = json.loads(gradlint("check", "--no-cache", "--format", "json", "pkg").output)
    assert [list(d)[:10] for d in found] == [
        ["path", "line", "column", "end_line", "end_column", "code", "name", "severity", "message", "fix"]
    ] * 2
    assert [(d["line"], d["column"], d["code"], d["name"], d["severity"]) for d in found] == [
        (12, 13, "GL101", "clip-per-micro-batch", "error"),
        (13, 13, "GL104", "scheduler-per-micro-batch", "error"),
    ]
    assert (found[0]["end_line"], found[0]["end_column"]) == (12, 77)


@pytest.mark.parametrize("option", ["--select", "--ignore"])
def test_unknown_rule_code_is_a_one_line_error_with_status_2(tree: Path, option: str) -> None:
    result = gradlint("check", option, "GL999", "pkg")
    assert result.exit_code == 2
    assert "GL999" in result.output
    assert "Traceback" not in result.output


def test_select_and_ignore_choose_rules(tree: Path) -> None:
    only = json.loads(gradlint("check", "--no-cache", "--format", "json", "--select", "GL104", "pkg").output)
    assert [d["code"] for d in only] == ["GL104"]
    rest = json.loads(gradlint("check", "--no-cache", "--format", "json", "--ignore", "GL1", "pkg").output)
    assert rest == []


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"import torch\nloss.backward(\n", "syntax error"),
        (b"x = '\xff\xfe'\nloss.backward()\n", "not valid utf-8"),
        (b"loss.backward()\x00\x01\x02", "NUL bytes"),
    ],
    ids=["syntax", "not-utf8", "binary"],
)
def test_unparsable_files_are_one_gl000_and_the_run_goes_on(tree: Path, content: bytes, message: str) -> None:
    (tree / "pkg" / "broken.py").write_bytes(content)
    result = gradlint("check", "--no-cache", "--format", "json", "pkg")
    found = json.loads(result.output)
    assert result.exit_code == 1
    assert [d["code"] for d in found if d["path"] == "pkg/broken.py"] == ["GL000"]
    assert message in next(d["message"] for d in found if d["path"] == "pkg/broken.py")
    assert {d["code"] for d in found if d["path"] == "pkg/bad.py"} == {"GL101", "GL104"}
