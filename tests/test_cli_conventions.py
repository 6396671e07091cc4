"""ruff's command-line conventions in `gradlint check`: show-settings / show-files, config
overrides, per-file ignores, --ignore-noqa, environment variables, fix-only, target version,
watch, Ctrl-C, version, one-line usage errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gradlint import __version__
from samples import BAD, GOOD, codes, gradlint

CLIP = BAD.splitlines()[11]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("GRADLINT_")]:
        monkeypatch.delenv(name)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "bad.py").write_text(BAD)
    (tmp_path / "pkg" / "good.py").write_text(GOOD)
    return tmp_path


def test_version_command_and_short_option() -> None:
    assert gradlint("version").stdout == f"gradlint {__version__}\n"
    assert gradlint("-V").stdout == gradlint("--version").stdout == f"gradlint {__version__}\n"


@pytest.mark.parametrize("args", [("check", "--bogus"), ("check", "--format", "xml"), ("nope",),
                                  ("check", "--target-version", "py27")])
def test_a_usage_error_is_one_line_with_status_2(project: Path, args: tuple[str, ...]) -> None:
    result = gradlint(*args)
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("gradlint: error: ")


def test_show_files_lists_the_files_and_warns_about_an_empty_folder(project: Path) -> None:
    (project / "empty").mkdir()
    result = gradlint("check", "--show-files", "pkg", "empty")
    assert (result.exit_code, result.stdout) == (0, "pkg/bad.py\npkg/good.py\n")
    assert result.stderr == "gradlint: warning: No Python files found under empty\n"


def test_a_check_of_a_folder_without_python_files_warns(project: Path) -> None:
    (project / "docs").mkdir()
    (project / "docs" / "index.md").write_text("# docs\n")
    result = gradlint("check", "--no-cache", "docs")
    assert result.exit_code == 0
    assert result.stderr == "gradlint: warning: No Python files found under docs\n"


def test_show_settings_names_the_file_and_what_it_extends(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.gradlint]\nignore = ["GL104"]\nmax-file-size = 1000\n')
    (project / "pkg" / "gradlint.toml").write_text('extend = "../pyproject.toml"\nselect = ["GL1"]\n')
    lines = gradlint("check", "--show-settings", "pkg/bad.py").stdout.splitlines()
    assert lines[:4] == ["Settings for: pkg/bad.py", "Configuration file: pkg/gradlint.toml",
                         "Extends: pyproject.toml", "Project root: pkg"]
    assert 'select = ["GL1"]' in lines and 'ignore = ["GL104"]' in lines and "max-file-size = 1000" in lines
    assert lines[-1] == 'Rules checked in this file: ["GL101", "GL102", "GL103", "GL105", "GL106", "GL107", "GL109"]'


def test_config_key_value_overrides_every_configuration(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.gradlint]\nselect = ["GL104"]\n')
    assert [c for _, c in codes(gradlint("check", "--no-cache", "--format", "text", "pkg"))] == ["GL104"]
    result = gradlint("check", "--no-cache", "--format", "text", "--config", 'select = ["GL101"]', "pkg")
    assert codes(result) == [("pkg/bad.py:12:13", "GL101")]
    shown = gradlint("check", "--show-settings", "--config", 'select = ["GL101"]', "pkg/bad.py").stdout
    assert "Set on the command line: select" in shown.splitlines()


def test_config_path_still_works_with_key_values(project: Path) -> None:
    (project / "other.toml").write_text('select = ["GL101", "GL104"]\n')
    result = gradlint("check", "--no-cache", "--format", "text", "--config", "other.toml",
                      "--config", 'ignore = ["GL101"]', "pkg")
    assert codes(result) == [("pkg/bad.py:13:13", "GL104")]


@pytest.mark.parametrize(("value", "message"), [
    ("colour = 1", "--config 'colour = 1': unknown key 'colour'"),
    ("select = [", "--config 'select = [': not a TOML key = value"),
    ('select = ["XX1"]', "--config 'select = [\"XX1\"]': unknown rule code or prefix 'XX1'"),
])
def test_a_bad_config_override_is_one_line(project: Path, value: str, message: str) -> None:
    result = gradlint("check", "--config", value, "pkg")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"gradlint: error: {message}") and result.stderr.count("\n") == 1


def test_per_file_ignores_on_the_command_line(project: Path) -> None:
    result = gradlint("check", "--no-cache", "--format", "text", "--per-file-ignores", "pkg/bad.py:GL101", "pkg")
    assert codes(result) == [("pkg/bad.py:13:13", "GL104")]
    other = gradlint("check", "--no-cache", "--format", "text", "--per-file-ignores", "tests/*.py:GL101", "pkg")
    assert [c for _, c in codes(other)] == ["GL101", "GL104"]
    bad = gradlint("check", "--per-file-ignores", "pkg/bad.py", "pkg")
    assert bad.exit_code == 2 and "expected GLOB:CODE" in bad.stderr


def test_ignore_noqa_reports_suppressed_findings(project: Path) -> None:
    (project / "pkg" / "bad.py").write_text(BAD.replace("max_norm=1.0)", "max_norm=1.0)  # noqa: GL101"))
    assert [c for _, c in codes(gradlint("check", "--no-cache", "--format", "text", "pkg"))] == ["GL104"]
    result = gradlint("check", "--no-cache", "--format", "text", "--ignore-noqa", "pkg")
    assert [c for _, c in codes(result)] == ["GL101", "GL104"]


def test_environment_variables_set_the_main_options(project: Path) -> None:
    env = {"GRADLINT_OUTPUT_FORMAT": "json", "GRADLINT_SELECT": "GL104", "GRADLINT_NO_CACHE": "1"}
    result = gradlint("check", "pkg", env=env)
    assert [d["code"] for d in json.loads(result.stdout)] == ["GL104"]
    assert not (project / ".gradlint_cache").exists()
    override = gradlint("check", "--select", "GL101", "--format", "text", "pkg", env=env)
    assert [c for _, c in codes(override)] == ["GL101"]


def test_fix_only_reports_only_what_it_fixed(project: Path) -> None:
    result = gradlint("check", "--no-cache", "--fix-only", "pkg")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "Fixed 1 problem.\n")
    assert CLIP not in (project / "pkg" / "bad.py").read_text()
    again = gradlint("check", "--no-cache", "--fix-only", "--exit-non-zero-on-fix", "pkg")
    assert (again.exit_code, again.stderr) == (0, "No problems fixed.\n")


def test_exit_non_zero_on_fix(project: Path) -> None:
    (project / "pkg" / "bad.py").write_text(BAD.replace("            scheduler.step()\n", ""))
    plain = gradlint("check", "--no-cache", "--fix", "pkg")
    assert plain.exit_code == 0  # fixed, nothing remains
    (project / "pkg" / "bad.py").write_text(BAD.replace("            scheduler.step()\n", ""))
    strict = gradlint("check", "--no-cache", "--fix", "--exit-non-zero-on-fix", "pkg")
    assert strict.exit_code == 1
    (project / "pkg" / "bad.py").write_text(BAD.replace("            scheduler.step()\n", ""))
    only = gradlint("check", "--no-cache", "--fix-only", "--exit-non-zero-on-fix", "pkg")
    assert (only.exit_code, only.stderr) == (1, "Fixed 1 problem.\n")


NEWER_SYNTAX = BAD + "\n\ntype Batch = list[int]\n"


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="this Python reads PEP 695 itself")
def test_target_version_accepts_syntax_newer_than_this_python(project: Path) -> None:
    (project / "pkg" / "bad.py").write_text(NEWER_SYNTAX)
    assert [c for _, c in codes(gradlint("check", "--no-cache", "--format", "text", "pkg"))] == ["GL000"]
    result = gradlint("check", "--no-cache", "--format", "text", "--target-version", "py312", "pkg")
    assert (result.exit_code, codes(result)) == (0, [])
    assert codes(gradlint("check", "--no-cache", "--format", "text", "--target-version", "py311", "pkg")) == [
        ("pkg/bad.py:18:6", "GL000")]
    (project / "pyproject.toml").write_text('[tool.gradlint]\ntarget-version = "py313"\n')
    assert codes(gradlint("check", "--no-cache", "--format", "text", "pkg")) == []


def test_target_version_keeps_real_syntax_errors(project: Path) -> None:
    (project / "pkg" / "bad.py").write_text(BAD + "\n\ndef broken(:\n")
    result = gradlint("check", "--no-cache", "--format", "text", "--target-version", "py314", "pkg")
    assert [c for _, c in codes(result)] == ["GL000"]


def _spawn(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADLINT_")}
    return subprocess.Popen([sys.executable, "-m", "gradlint", *args], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for(path: Path, text: str, process: subprocess.Popen[str], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while text not in path.read_text():
        assert process.poll() is None and time.monotonic() < deadline, path.read_text()
        time.sleep(0.05)


def test_watch_checks_again_after_an_edit_and_ctrl_c_ends_it(project: Path) -> None:
    (project / "pkg" / "bad.py").write_text(GOOD)
    out, err = project / "out.txt", project / "err.txt"
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "gradlint", "check", "--no-cache", "--format", "text",
                                    "--watch", "--watch-interval", "0.05", "pkg"], cwd=project, text=True,
                                   stdout=stdout, stderr=stderr,
                                   env={k: v for k, v in os.environ.items() if not k.startswith("GRADLINT_")})
        try:
            _wait_for(out, "All checks passed! (2 files checked)", process)
            time.sleep(0.1)
            (project / "pkg" / "bad.py").write_text(BAD)
            _wait_for(out, "Found 2 problems in 1 file.", process)
            process.send_signal(signal.SIGINT)
            assert process.wait(30) == 130
        finally:
            process.kill()
    assert out.read_text().splitlines()[0] == "All checks passed! (2 files checked)"
    assert "pkg/bad.py:12:13: GL101 " in out.read_text()
    assert err.read_text().splitlines() == ["gradlint: watching for changes (Ctrl-C stops)",
                                            "gradlint: change detected, checking again", "gradlint: interrupted"]


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finds the pool's workers through /proc")
def test_ctrl_c_during_a_pooled_run_is_one_line_and_status_130(project: Path) -> None:
    many = project / "many"
    many.mkdir()
    for n in range(400):
        (many / f"train{n}.py").write_text(BAD.replace("def train(", f"def train{n}("))
    process = _spawn(["check", "--no-cache", "-j", "2", "many"], project)
    children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
    deadline = time.monotonic() + 60
    while not (children.exists() and children.read_text().split()):  # the pool's workers run
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert (stdout, stderr) == ("", "gradlint: interrupted\n")


PARTIAL_WINDOW = """\
def train(model, loader, optimizer, scaler, accum_steps):
    for step, (x, y) in enumerate(loader):
        scaler.scale(model(x, y)).backward()
        if (step + 1) % accum_steps == 0 or step + 1 == len(loader):
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
"""


def test_gl201_fix_message_quotes_the_divisor_it_inserts(project: Path) -> None:
    (project / "train.py").write_text(PARTIAL_WINDOW)
    [found] = json.loads(gradlint("check", "--no-cache", "--select", "GL201", "--format", "json", "train.py").stdout)
    divisor = "min(accum_steps, len(loader) - step + step % accum_steps)"
    assert found["fix"]["message"] == f"Divide the loss by `{divisor}`"
    assert found["fix"]["edits"][0]["content"].endswith(f" / {divisor}")


def test_format_help_names_every_format_and_the_default() -> None:
    from gradlint.reporters import DEFAULT_FORMAT, FORMATS

    text = " ".join(gradlint("check", "--help").stdout.split())
    start = text.index("Output format: ")
    described = text[start:text.index("[default: ", start)]
    for name in FORMATS:
        assert f" {name}" in described.replace("json- lines", "json-lines"), name
    assert f"[default: {DEFAULT_FORMAT}]" in text


def test_gradlint_config_variable_names_a_configuration_file(project: Path) -> None:
    (project / "other.toml").write_text('select = ["GL104"]\n')
    result = gradlint("check", "--no-cache", "--format", "text", "pkg", env={"GRADLINT_CONFIG": "other.toml"})
    assert [c for _, c in codes(result)] == ["GL104"]
