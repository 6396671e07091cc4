"""Every output format and the report options, through the real CLI."""

from __future__ import annotations

import hashlib
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gradlint.catalogue import CATALOGUE
from samples import BAD, GOOD, gradlint

CLIP = "torch.nn.utils.clip_grad_norm_() runs on every micro-batch; clip once, just before optimizer.step()"
CLIP_NOTE = ("Clipping inside the accumulation window rescales a partly accumulated gradient on each micro-batch, "
             "so the step never uses the accumulated gradient clipped once.")
SCHED = "scheduler.step() runs on every micro-batch; step it once per update, right after optimizer.step()"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "bad.py").write_text(BAD)
    (tmp_path / "good.py").write_text(GOOD)
    return tmp_path


FULL = f"""\
src/bad.py:12:13: GL101 [*] {CLIP}
   |
10 |             loss = loss / accum_steps
11 |             loss.backward()
12 |             torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
   |             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ GL101
13 |         optimizer.step()
14 |         optimizer.zero_grad()
   |
  = note: {CLIP_NOTE}
  = fix (safe, applied by --fix): Move `torch.nn.utils.clip_grad_norm_()` to the update boundary (clip once, just before the step)
    @@ -11,3 +11,3 @@
                 loss.backward()
    -            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    +        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
             optimizer.step()

Found 1 problem in 1 file.
[*] 1 fixable with the --fix option.
"""


def test_full_is_the_default(project: Path) -> None:
    (project / "src" / "bad.py").write_text(BAD.replace("            scheduler.step()\n", ""))
    result = gradlint("check", ".")
    assert result.exit_code == 1
    assert result.stdout == FULL


def test_full_labels_unsafe_fixes(project: Path) -> None:
    lines = gradlint("check", "--select", "GL104", ".").stdout.splitlines()
    assert lines[0] == f"src/bad.py:13:13: GL104 {SCHED}"
    assert lines[4] == "13 |             scheduler.step()"
    assert lines[5] == "   |             ^^^^^^^^^^^^^^^^ GL104"
    assert lines[9] == ("  = note: The LR schedule advances on every micro-batch, so warmup and decay run N times too fast "
                        "(N: micro-batches per update).")
    assert lines[10].startswith("  = fix (unsafe, applied by --fix --unsafe-fixes): ")
    assert "    -            scheduler.step()" in lines


def test_text_is_the_original_format(project: Path) -> None:
    result = gradlint("check", "--format", "text", ".")
    assert result.stdout == (f"src/bad.py:12:13: GL101 {CLIP}\nsrc/bad.py:13:13: GL104 {SCHED}\n"
                             "Found 2 problems in 1 file.\n")
    assert gradlint("check", "--format", "text", "good.py").stdout == "All checks passed! (1 file checked)\n"


def test_concise_marks_fixable_findings(project: Path) -> None:
    lines = gradlint("check", "--output-format", "concise", ".").stdout.splitlines()
    assert lines == [f"src/bad.py:12:13: GL101 [*] {CLIP}", f"src/bad.py:13:13: GL104 {SCHED}",
                     "Found 2 problems in 1 file.",
                     "[*] 1 fixable with the --fix option "
                     "(1 hidden fix can be enabled with the --unsafe-fixes option)."]


def test_full_shows_a_finding_on_the_first_line(project: Path) -> None:
    (project / "first.py").write_text("import torch\nloss.backward(\n")
    lines = gradlint("check", "first.py").stdout.splitlines()
    assert lines[:6] == ["first.py:2:14: GL000 syntax error: '(' was never closed", "  |",
                         "1 | import torch", "2 | loss.backward(", "  |              ^ GL000", "  |"]


def test_json_and_json_lines(project: Path) -> None:
    data = json.loads(gradlint("check", "--format", "json", ".").stdout)
    assert [list(d) for d in data] == [["path", "line", "column", "end_line", "end_column", "code", "name",
                                        "severity", "message", "fix", "detail"]] * 2
    assert data[0]["message"] == CLIP and data[0]["detail"] == CLIP_NOTE
    assert [(d["path"], d["line"], d["column"], d["code"], d["fix"]["applicability"]) for d in data] == [
        ("src/bad.py", 12, 13, "GL101", "safe"), ("src/bad.py", 13, 13, "GL104", "unsafe")]
    lines = gradlint("check", "--format", "json-lines", ".").stdout.splitlines()
    assert [json.loads(line) for line in lines] == data


def test_sarif(project: Path) -> None:
    log = json.loads(gradlint("check", "--format", "sarif", ".").stdout)
    assert log["version"] == "2.1.0"
    assert log["$schema"].endswith("sarif-2.1.0.json")
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(CATALOGUE)
    gl101 = rules[[r["id"] for r in rules].index("GL101")]
    assert gl101["name"] == "clip-per-micro-batch"
    assert gl101["defaultConfiguration"] == {"level": "error", "enabled": True}
    assert gl101["help"]["markdown"].startswith("# GL101: clip-per-micro-batch\n")
    assert gl101["fullDescription"]["text"].startswith("Flags a gradient-clipping call")
    first, second = run["results"]
    assert first["ruleId"] == "GL101" and rules[first["ruleIndex"]]["id"] == "GL101"
    assert first["level"] == "error"
    assert first["message"] == {"text": CLIP, "markdown": f"{CLIP}\n\n{CLIP_NOTE}"}
    assert run["tool"]["driver"]["informationUri"] == "https://pypi.org/project/torch-gradlint/"
    location = first["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "src/bad.py", "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {"startLine": 12, "startColumn": 13, "endLine": 12, "endColumn": 77}
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == project.resolve().as_uri() + "/"
    change = first["fixes"][0]["artifactChanges"][0]
    assert change["artifactLocation"]["uri"] == "src/bad.py"
    assert change["replacements"][0]["deletedRegion"] == {"startLine": 12, "startColumn": 1, "endLine": 13,
                                                          "endColumn": 1}
    assert second["ruleId"] == "GL104"


def test_github_annotations(project: Path) -> None:
    (project / "warn.py").write_text("# gradlint: noqa: GL101\n")
    lines = gradlint("check", "--format", "github", "--extend-select", "GL900", ".").stdout.splitlines()
    assert lines == [
        "::error file=src/bad.py,line=12,col=13,endLine=12,endColumn=77,title=GL101 clip-per-micro-batch::"
        f"src/bad.py:12:13: GL101 {CLIP}",
        "::error file=src/bad.py,line=13,col=13,endLine=13,endColumn=29,title=GL104 scheduler-per-micro-batch::"
        f"src/bad.py:13:13: GL104 {SCHED}",
        "::warning file=warn.py,line=1,col=1,endLine=1,endColumn=24,title=GL900 unused-suppression::"
        "warn.py:1:1: GL900 unused suppression for GL101",
    ]


def test_gitlab_code_quality(project: Path) -> None:
    issues = json.loads(gradlint("check", "--format", "gitlab", ".").stdout)
    assert [(i["check_name"], i["severity"], i["location"]) for i in issues] == [
        ("GL101 clip-per-micro-batch", "major", {"path": "src/bad.py", "lines": {"begin": 12, "end": 12}}),
        ("GL104 scheduler-per-micro-batch", "major", {"path": "src/bad.py", "lines": {"begin": 13, "end": 13}}),
    ]
    assert issues[0]["description"] == f"GL101 {CLIP}"
    assert len({i["fingerprint"] for i in issues}) == 2
    assert issues[0]["fingerprint"] == hashlib.sha256(f"src/bad.py\0\0GL101\0{CLIP}\0{0}".encode()).hexdigest()
    (project / "src" / "bad.py").write_text("# a comment that moves every line down\n" + BAD)
    moved = json.loads(gradlint("check", "--format", "gitlab", ".").stdout)
    assert [i["fingerprint"] for i in moved] == [i["fingerprint"] for i in issues]


def test_junit(project: Path) -> None:
    root = ET.fromstring(gradlint("check", "--format", "junit", ".").stdout)
    assert (root.tag, root.get("tests"), root.get("failures")) == ("testsuites", "2", "2")
    suite = root.find("testsuite")
    assert suite.get("name") == "src/bad.py"
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["src/bad.py:12:13: GL101 clip-per-micro-batch",
                                              "src/bad.py:13:13: GL104 scheduler-per-micro-batch"]
    assert cases[0].find("failure").get("message") == CLIP
    assert cases[0].find("failure").text == f"src/bad.py:12:13: GL101 {CLIP}\n{CLIP_NOTE}"
    clean = ET.fromstring(gradlint("check", "--format", "junit", "good.py").stdout)
    assert (clean.get("tests"), clean.get("failures")) == ("1", "0")


def test_output_file(project: Path) -> None:
    result = gradlint("check", "--format", "json", "--output-file", "reports/gradlint.json", ".")
    assert (result.exit_code, result.stdout) == (1, "")
    assert len(json.loads((project / "reports" / "gradlint.json").read_text())) == 2


def test_statistics(project: Path) -> None:
    (project / "more.py").write_text(BAD)
    result = gradlint("check", "--statistics", ".")
    assert result.stdout.splitlines() == [
        "2  GL101  [*] clip-per-micro-batch",
        "2  GL104      scheduler-per-micro-batch",
        "Found 4 problems in 2 files.",
        "[*] 2 fixable with the --fix option (2 hidden fixes can be enabled with the --unsafe-fixes option).",
    ]
    data = json.loads(gradlint("check", "--statistics", "--format", "json", ".").stdout)
    assert data == [{"code": "GL101", "name": "clip-per-micro-batch", "count": 2, "fixable": True, "fixable_count": 2},
                    {"code": "GL104", "name": "scheduler-per-micro-batch", "count": 2, "fixable": False,
                     "fixable_count": 0}]


def test_statistics_marks_and_summary_agree_with_unsafe_fixes(project: Path) -> None:
    """With --unsafe-fixes GL104's unsafe fix counts as fixable in the marks, the hint and
    the statistics alike."""
    (project / "more.py").write_text(BAD)
    concise = gradlint("check", "--format", "concise", "--unsafe-fixes", ".").stdout.splitlines()
    assert sum(" [*] " in line for line in concise) == 4
    assert concise[-1] == "[*] 4 fixable with the --fix option."
    result = gradlint("check", "--statistics", "--unsafe-fixes", ".")
    assert result.stdout.splitlines() == [
        "2  GL101  [*] clip-per-micro-batch",
        "2  GL104  [*] scheduler-per-micro-batch",
        "Found 4 problems in 2 files.",
        "[*] 4 fixable with the --fix option.",
    ]
    data = json.loads(gradlint("check", "--statistics", "--unsafe-fixes", "--format", "json", ".").stdout)
    assert [(d["code"], d["fixable"], d["fixable_count"]) for d in data] == [("GL101", True, 2), ("GL104", True, 2)]


def test_quiet_drops_the_summary(project: Path) -> None:
    result = gradlint("check", "--format", "text", "--quiet", ".")
    assert result.stdout == f"src/bad.py:12:13: GL101 {CLIP}\nsrc/bad.py:13:13: GL104 {SCHED}\n"
    assert gradlint("check", "-q", "good.py").stdout == ""


@pytest.mark.parametrize(("args", "env", "coloured"), [
    ((), {}, False),
    (("--color", "always"), {}, True),
    (("--color", "never"), {"FORCE_COLOR": "1"}, False),
    ((), {"FORCE_COLOR": "1"}, True),
    ((), {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
    (("--color", "always"), {"NO_COLOR": "1"}, True),
])
def test_colour_only_when_asked_or_on_a_terminal(project: Path, args: tuple, env: dict, coloured: bool) -> None:
    clean = {"FORCE_COLOR": "", "NO_COLOR": "", **env}
    out = gradlint("check", *args, ".", env=clean).stdout
    assert ("\x1b[" in out) is coloured
    if coloured:
        assert "\x1b[1;31mGL101\x1b[0m" in out


def test_paths_are_relative_to_the_current_folder_and_order_is_stable(project: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "a.py").write_text(BAD)
    first = gradlint("check", "--format", "text", "src/bad.py", "a.py", str(project / "good.py")).stdout
    second = gradlint("check", "--format", "text", str(project / "a.py"), "./good.py", "src/../src/bad.py").stdout
    assert first == second
    assert [line.split(":")[0] for line in first.splitlines()[:-1]] == ["a.py", "a.py", "src/bad.py", "src/bad.py"]
    monkeypatch.chdir(project / "src")
    assert gradlint("check", "--format", "text", ".").stdout.startswith("bad.py:12:13: GL101")
