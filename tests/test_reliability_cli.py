"""Configuration and command-line fuzzing: broken TOML, wrong types, unknown keys, bad
patterns, contradictory selections, absurd numbers. Every bad input is one line on stderr
and exit status 2 (click's own usage errors: its usage text and one 'Error:' line), never a
traceback; every good one runs."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from samples import BAD, gradlint

RULE_TOKENS = ["GL", "GL1", "GL101", "gl104", "ALL", "GL999", "E501", "", " ", ",", "GL10 1", "\u00e9"]
NUMBER_TOKENS = ["0", "1", "2", "-1", "1.5", "1e3", "99999999999999999999", " 3 ", "", "x", "\u0663"]
PATTERN_TOKENS = ["*.py", "[z-a]", "!", "\\", "**/***", "bad.py", "/", "", "[", "a\\", "#x"]
KEYS = ["select", "ignore", "extend-select", "per-file-ignores", "exclude", "extend-exclude",
        "respect-gitignore", "force-exclude", "names", "max-file-size", "bogus", "tool", ""]


def _run(folder: Path, *args: str):
    """``gradlint check`` in ``folder`` (restoring the working folder afterwards)."""
    previous = os.getcwd()
    os.chdir(folder)
    try:
        return gradlint("check", "--no-cache", "-j", "1", "--format", "concise", *args)
    finally:
        os.chdir(previous)


def _assert_clean_outcome(result) -> None:
    """Exit 0 or 1, or exit 2 with one clear error line; never a traceback."""
    assert "Traceback" not in result.stdout + result.stderr
    assert result.exit_code in (0, 1, 2), (result.exit_code, result.stderr)
    if result.exit_code != 2:
        return
    lines = result.stderr.splitlines()
    if lines and lines[0].startswith("gradlint: error: "):
        assert len(lines) == 1, result.stderr
    else:  # click's usage error: usage, hint, and the one error line
        assert lines[-1].startswith("Error: "), result.stderr


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    assert isinstance(value, dict)
    return "{" + ", ".join(f"{_toml_value(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"


_scalars = st.one_of(st.booleans(), st.integers(-(2**40), 2**40), st.sampled_from(RULE_TOKENS + PATTERN_TOKENS),
                     st.text(max_size=6))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS + ["optimizers", "*.py"]), inner, max_size=3)),
    max_leaves=8)
configurations = st.one_of(
    st.dictionaries(st.sampled_from(KEYS), _values, max_size=4).map(
        lambda table: "".join(f"{_toml_value(k)} = {_toml_value(v)}\n" for k, v in table.items())),
    st.text(max_size=80),
)
FUZZ = settings(max_examples=120, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@FUZZ
@given(text=configurations, name=st.sampled_from(["gradlint.toml", ".gradlint.toml", "pyproject.toml"]))
def test_any_configuration_runs_or_fails_in_one_line(text: str, name: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "bad.py").write_text(BAD)
        body = text if name != "pyproject.toml" else "[tool.gradlint]\n" + text
        (root / name).write_text(body, encoding="utf-8", errors="surrogatepass")
        _assert_clean_outcome(_run(root, "."))


_option_values = st.one_of(st.sampled_from(RULE_TOKENS + NUMBER_TOKENS + PATTERN_TOKENS),
                           st.lists(st.sampled_from(RULE_TOKENS + PATTERN_TOKENS), max_size=3).map(",".join),
                           st.text(max_size=8))
_OPTIONS = ["--select", "--ignore", "--extend-select", "--exclude", "--extend-exclude", "--jobs", "--max-file-size",
            "--timeout", "--format", "--color", "--stdin-filename", "--config", "--output-file"]


@FUZZ
@given(options=st.lists(st.tuples(st.sampled_from(_OPTIONS), _option_values), max_size=4))
@example(options=[("--config", "\r")])  # once two lines: echoed input must have its control characters escaped
@example(options=[("--output-file", "a\nb/c"), ("--stdin-filename", "\x1b[1m")])
def test_any_option_values_run_or_fail_in_one_line(options: list[tuple[str, str]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "bad.py").write_text(BAD)
        args = [part for option, value in options if "\x00" not in value for part in (option, value)]
        if "--stdin-filename" in args:
            args.append("bad.py")  # a path, so stdin is not read
        _assert_clean_outcome(_run(root, *args, "."))


@pytest.mark.parametrize(("config", "error"), [
    ("select = [", "gradlint.toml: invalid TOML: Invalid value (at end of document)"),
    ("select = 1", "gradlint.toml: top level select: expected a list of strings"),
    ("ignore = \"GL101\"", "gradlint.toml: top level ignore: expected a list of strings"),
    ("bogus = 1", ("gradlint.toml: unknown key 'bogus' in top level (known keys: extend, select, ignore, extend-select, "
                  "per-file-ignores, exclude, extend-exclude, respect-gitignore, force-exclude, names, max-file-size, target-version)")),
    ("exclude = [\"[z-a]\"]", ("gradlint.toml: top level exclude: invalid pattern '[z-a]' "
                              "(bad character range z-a at position 10)")),
    ("extend-exclude = [\"!\"]", ("gradlint.toml: top level extend-exclude: invalid pattern '!' "
                                 "(Invalid git pattern: '!')")),
    ("per-file-ignores = {\"[z-a]\" = [\"GL101\"]}", ("gradlint.toml: top level per-file-ignores: invalid pattern "
                                                   "'[z-a]' (bad character range z-a at position 10)")),
    ("max-file-size = -5", ("gradlint.toml: top level max-file-size: expected a whole number of bytes >= 0 "
                           "(0: no limit)")),
    ("names = {optimizers = [\"1x\"]}", "gradlint.toml: top level names.optimizers: '1x' is not a Python identifier"),
], ids=["broken-toml", "wrong-type", "string-for-list", "unknown-key", "bad-range", "lone-bang",
        "bad-per-file-glob", "negative-size", "bad-name"])
def test_configuration_errors_are_one_line_and_exit_2(tmp_path: Path, config: str, error: str) -> None:
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "gradlint.toml").write_text(config + "\n")
    result = _run(tmp_path, ".")
    assert (result.exit_code, result.stderr) == (2, f"gradlint: error: {error}\n")


@pytest.mark.parametrize(("args", "error"), [
    (["--exclude", "[z-a]"], "--exclude: invalid pattern '[z-a]' (bad character range z-a at position 10)"),
    (["--extend-exclude", "x,!"], "--extend-exclude: invalid pattern '!' (Invalid git pattern: '!')"),
    (["--timeout", "-1"], "--timeout expects a whole number >= 0, got '-1'"),
    (["--select", "GL999"], "--select: unknown rule code or prefix 'GL999'"),
    (["--config", "\r"], "\\r: configuration file not found"),
    (["--config", "a\nb\x1b[2J"], "a\\nb\\x1b[2J: configuration file not found"),
    (["--select", "GL1\u2028x"], "--select: unknown rule code or prefix 'GL1\\u2028x'"),
    (["--timeout", "x\r"], "--timeout expects a whole number >= 0, got 'x\\r'"),
])
def test_option_errors_are_one_line_and_exit_2(tmp_path: Path, args: list[str], error: str) -> None:
    (tmp_path / "bad.py").write_text(BAD)
    result = _run(tmp_path, *args, ".")
    assert (result.exit_code, result.stderr) == (2, f"gradlint: error: {error}\n")


def test_a_bad_pattern_in_a_gitignore_file_is_ignored_like_git_does(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "skipped.py").write_text(BAD)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("[z-a]\n!\ntrailing\\\nskipped.py\n")
    result = _run(tmp_path, ".")
    assert result.exit_code == 1
    assert {line.split(":")[0] for line in result.stdout.splitlines() if ": GL" in line} == {"bad.py"}


def test_contradictory_selection_ignore_wins(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "gradlint.toml").write_text('select = ["ALL"]\nignore = ["ALL"]\n')
    assert _run(tmp_path, ".").stdout == "All checks passed! (1 file checked)\n"
    result = _run(tmp_path, "--isolated", "--select", "GL101", "--ignore", "GL1", ".")
    assert (result.exit_code, result.stdout) == (0, "All checks passed! (1 file checked)\n")


@pytest.mark.parametrize(("option", "value"), [("--jobs", "64"), ("--jobs", "99999999999999999999"),
                                               ("--timeout", "99999999999999999999"),
                                               ("--max-file-size", "99999999999999999999")])
def test_absurd_numbers_still_run(tmp_path: Path, option: str, value: str) -> None:
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "other.py").write_text(BAD)
    result = gradlint("check", "--no-cache", "--format", "concise", option, value, str(tmp_path))
    assert result.exit_code == 1
    assert len([line for line in result.stdout.splitlines() if ": GL" in line]) == 4
