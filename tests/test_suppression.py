"""Suppression comments, GL900 and --add-noqa, through the real CLI."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gradlint.engine import lint_source
from gradlint.settings import default_settings
from samples import BAD, codes, gradlint

CLIP = "            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)"
SCHED = "            scheduler.step()"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def check(project: Path, source: str, *args: str) -> list[tuple[str, str]]:
    (project / "bad.py").write_text(source)
    return codes(gradlint("check", "--format", "text", *args, "bad.py"))


@pytest.mark.parametrize(
    "comment",
    ["# noqa: GL101", "# noqa", "#noqa:GL101", "# NOQA: GL104, GL101", "# gradlint: ignore[GL101]",
     "# gradlint: ignore[GL104,GL101]", "# gradlint: ignore", "# see ticket 12  # noqa: E501, GL101"],
)
def test_line_suppression(project: Path, comment: str) -> None:
    source = BAD.replace(CLIP, f"{CLIP}  {comment}")
    assert check(project, source) == [("bad.py:13:13", "GL104")]


@pytest.mark.parametrize("comment", ["# noqa: GL104", "# noqa: E501", "# gradlint: ignore[GL102]"])
def test_other_codes_do_not_suppress(project: Path, comment: str) -> None:
    source = BAD.replace(CLIP, f"{CLIP}  {comment}")
    assert check(project, source) == [("bad.py:12:13", "GL101"), ("bad.py:13:13", "GL104")]


def test_noqa_inside_a_string_is_not_a_comment(project: Path) -> None:
    source = BAD.replace(CLIP, CLIP.replace("max_norm=1.0)", 'max_norm=1.0, note="# noqa")'))
    assert check(project, source) == [("bad.py:12:13", "GL101"), ("bad.py:13:13", "GL104")]


def test_noqa_on_another_line_does_not_suppress(project: Path) -> None:
    source = BAD.replace(SCHED, f"{SCHED}  # noqa: GL101")
    assert check(project, source) == [("bad.py:12:13", "GL101"), ("bad.py:13:13", "GL104")]


@pytest.mark.parametrize(("comment", "left"), [
    ("# gradlint: noqa", []),
    ("# gradlint: noqa: GL104", [("bad.py:13:13", "GL101")]),
    ("# gradlint: noqa: GL101, GL104", []),
])
def test_file_level_exemption(project: Path, comment: str, left: list) -> None:
    source = f"{comment}\n{BAD}"
    assert check(project, source) == left


def test_file_level_exemption_must_be_on_its_own_line(project: Path) -> None:
    source = BAD.replace("import torch", "import torch  # gradlint: noqa")
    assert check(project, source) == [("bad.py:12:13", "GL101"), ("bad.py:13:13", "GL104")]


def test_gl900_is_off_by_default_and_reports_unused_suppressions(project: Path) -> None:
    source = (BAD.replace(CLIP, f"{CLIP}  # noqa: GL101, GL102, E501")
                 .replace("    for update", "    # noqa: GL301\n    for update")
                 .replace("import torch", "import torch  # noqa\n# gradlint: noqa: GL203\nX = 1  # gradlint: ignore"))
    assert check(project, source) == [("bad.py:16:13", "GL104")]
    result = gradlint("check", "--format", "text", "--extend-select", "GL900", "bad.py")
    assert codes(result) == [("bad.py:2:1", "GL900"), ("bad.py:3:8", "GL900"), ("bad.py:8:5", "GL900"),
                             ("bad.py:15:79", "GL900"), ("bad.py:16:13", "GL104")]
    lines = result.stdout.splitlines()
    assert lines[0] == "bad.py:2:1: GL900 unused suppression for GL203"
    assert lines[1] == "bad.py:3:8: GL900 unused blanket suppression `# gradlint: ignore`"
    assert lines[2] == "bad.py:8:5: GL900 unused suppression for GL301"
    assert lines[3] == "bad.py:15:79: GL900 unused suppression for GL102"


def test_gl900_explains_codes_that_are_not_enabled_or_unknown(project: Path) -> None:
    source = BAD.replace(CLIP, f"{CLIP}  # noqa: GL101, GL999").replace(SCHED, f"{SCHED}  # noqa: GL104")
    (project / "bad.py").write_text(source)
    result = gradlint("check", "--format", "text", "--select", "GL101,GL900", "bad.py")
    assert result.stdout.splitlines() == [
        "bad.py:12:79: GL900 unused suppression for GL999 (unknown code)",
        "bad.py:13:31: GL900 unused suppression for GL104 (not enabled)",
        "Found 2 problems in 1 file.",
    ]


def test_gl900_in_a_file_without_training_code(project: Path) -> None:
    (project / "util.py").write_text("X = 1  # noqa: GL101\n")
    result = gradlint("check", "--format", "text", "--extend-select", "GL900", "util.py")
    assert result.stdout.splitlines()[0] == "util.py:1:8: GL900 unused suppression for GL101"


def test_syntax_errors_are_never_suppressed(project: Path) -> None:
    source = "# gradlint: noqa\nimport torch\nloss.backward(  # noqa\n"
    diagnostics = lint_source(source, "x.py", default_settings())
    assert [d.code for d in diagnostics] == ["GL000"]


def test_add_noqa_suppresses_every_finding_and_then_the_check_passes(project: Path) -> None:
    source = BAD.replace(SCHED, f"{SCHED}  # noqa: E501").replace("\n", "\r\n")
    path = project / "bad.py"
    path.write_bytes(source.encode())
    os.chmod(path, 0o640)
    result = gradlint("check", "--add-noqa", "bad.py")
    assert (result.exit_code, result.stdout) == (0, "Added 2 noqa directives.\n")
    text = path.read_bytes().decode()
    assert f"{CLIP}  # noqa: GL101\r\n" in text
    assert f"{SCHED}  # noqa: E501, GL104\r\n" in text
    assert text.replace("  # noqa: GL101", "").replace(", GL104", "") == source
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert gradlint("check", "bad.py").exit_code == 0
    again = gradlint("check", "--add-noqa", "bad.py")
    assert again.stdout == "Added 0 noqa directives.\n"
    assert path.read_bytes().decode() == text


def test_add_noqa_skips_a_line_that_cannot_carry_a_comment(project: Path) -> None:
    source = BAD.replace(CLIP, CLIP.replace("max_norm=1.0)", 'max_norm=1.0, note="""\n""")'))
    (project / "bad.py").write_text(source)
    result = gradlint("check", "--add-noqa", "bad.py")
    assert result.stdout.splitlines() == [
        "Added 1 noqa directive.",
        "1 reported line(s) cannot carry a comment (inside a string or after a backslash).",
    ]
    assert check(project, (project / "bad.py").read_text()) == [("bad.py:12:13", "GL101")]
