"""File names that are not UTF-8, or hold a newline, in every output format: no crash, and no
name can forge a report line."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gradlint.reporters import FORMATS
from samples import BAD, gradlint

UNDECODABLE = os.fsdecode(b"bad\xff.py")
FORGING = "evil\nx.py:1:1: GL999 forged.py"


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in (UNDECODABLE, FORGING):
        (tmp_path / name).write_text(BAD)
    return tmp_path


@pytest.mark.parametrize("output_format", sorted(FORMATS))
def test_every_format_reports_both_files(tree: Path, output_format: str) -> None:
    result = gradlint("check", "--no-cache", "--format", output_format, "--output-file", "report", ".")
    assert result.exit_code == 1, result.stderr
    assert result.stderr == ""
    report = (tree / "report").read_bytes().decode("utf-8")  # every format writes valid UTF-8
    if output_format.startswith("json"):  # JSON escapes the lone surrogate: it reads back as the same bytes
        first = json.loads(report)[0] if output_format == "json" else json.loads(report.splitlines()[0])
        assert os.fsencode(first["path"]) == b"bad\xff.py"
    else:
        assert "\\xff" in report or "%FF" in report


def test_text_lines_name_each_file_once_and_forge_nothing(tree: Path) -> None:
    result = gradlint("check", "--no-cache", "--format", "text", "--quiet", ".")
    assert result.stdout.splitlines() == [
        "bad\\xff.py:12:13: GL101 " + result.stdout.splitlines()[0].split(" GL101 ", 1)[1],
        "bad\\xff.py:13:13: GL104 " + result.stdout.splitlines()[1].split(" GL104 ", 1)[1],
        "evil\\nx.py:1:1: GL999 forged.py:12:13: GL101 " + result.stdout.splitlines()[2].split(" GL101 ", 1)[1],
        "evil\\nx.py:1:1: GL999 forged.py:13:13: GL104 " + result.stdout.splitlines()[3].split(" GL104 ", 1)[1],
    ]


def test_machine_formats_keep_the_names_apart(tree: Path) -> None:
    sarif = json.loads(gradlint("check", "--no-cache", "--format", "sarif", ".").stdout)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in sarif["runs"][0]["results"]}
    assert uris == {"bad%FF.py", "evil%0Ax.py%3A1%3A1%3A%20GL999%20forged.py"}
    gitlab = json.loads(gradlint("check", "--no-cache", "--format", "gitlab", ".").stdout)
    assert len({issue["fingerprint"] for issue in gitlab}) == 4
    assert {issue["location"]["path"] for issue in gitlab} == {"bad\\xff.py", "evil\\nx.py:1:1: GL999 forged.py"}
    junit = ET.fromstring(gradlint("check", "--no-cache", "--format", "junit", ".").stdout)
    assert sorted(suite.get("name") for suite in junit) == ["bad\\xff.py", "evil\\nx.py:1:1: GL999 forged.py"]
    github = gradlint("check", "--no-cache", "--format", "github", ".").stdout.splitlines()
    assert len(github) == 4 and all(line.startswith("::error file=") for line in github)


def test_show_fixes_names_are_printable(tree: Path) -> None:
    result = gradlint("check", "--no-cache", "--fix", "--show-fixes", "--format", "text", ".")
    assert "- bad\\xff.py:\n" in result.stdout
    assert "- evil\\nx.py:1:1: GL999 forged.py:\n" in result.stdout
