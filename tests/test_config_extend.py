"""``extend = "../pyproject.toml"`` (ruff's config inheritance) and configuration files that
cannot be read as TOML: one-line errors, or ignored when they cannot configure gradlint."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gradlint.config import load_config, rebase_pattern, settings_for
from samples import BAD, codes, gradlint


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg" / "legacy").mkdir(parents=True)
    for name in ("bad.py", "pkg/bad.py", "pkg/legacy/bad.py", "pkg/gen_bad.py"):
        (tmp_path / name).write_text(BAD)
    return tmp_path


def test_a_nested_config_without_extend_replaces_the_root_one(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.gradlint]\nignore = ["GL104"]\n')
    (project / "pkg" / "gradlint.toml").write_text('extend-exclude = ["legacy"]\n')
    assert codes(gradlint("check", "--format", "text", "pkg")) == [
        ("pkg/bad.py:12:13", "GL101"), ("pkg/bad.py:13:13", "GL104"),
        ("pkg/gen_bad.py:12:13", "GL101"), ("pkg/gen_bad.py:13:13", "GL104")]


def test_extend_inherits_and_the_extending_file_s_keys_win(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.gradlint]\nignore = ["GL104"]\nextend-exclude = ["pkg/legacy", "other/x"]\n'
        '[tool.gradlint.per-file-ignores]\n"pkg/gen_*.py" = ["GL101"]\n')
    (project / "pkg" / "gradlint.toml").write_text('extend = "../pyproject.toml"\nextend-select = ["GL900"]\n')
    result = gradlint("check", "--format", "text", "pkg")
    assert result.exit_code == 1
    assert codes(result) == [("pkg/bad.py:12:13", "GL101")]  # GL104 ignored, legacy excluded, gen_ ignored
    (project / "pkg" / "gradlint.toml").write_text('extend = "../pyproject.toml"\nignore = []\n')
    assert codes(gradlint("check", "--format", "text", "pkg/bad.py")) == [
        ("pkg/bad.py:12:13", "GL101"), ("pkg/bad.py:13:13", "GL104")]


def test_a_change_in_the_extended_file_is_seen(project: Path) -> None:
    root = project / "pyproject.toml"
    root.write_text('[tool.gradlint]\nignore = ["GL104"]\n')
    child = project / "pkg" / "gradlint.toml"
    child.write_text('extend = "../pyproject.toml"\n')
    assert "GL104" not in settings_for(project / "pkg" / "bad.py").select
    root.write_text('[tool.gradlint]\nignore = ["GL101", "GL102"]\n')
    os.utime(root, ns=(10**18, 10**18))
    config = load_config(child)
    assert config is not None and config.ignore == ("GL101", "GL102")
    assert config.extends == (root.absolute(),)


@pytest.mark.parametrize(("child", "message"), [
    ('extend = "../nowhere.toml"\n', "pkg/gradlint.toml: top level extend: '../nowhere.toml' is not a file"),
    ("extend = 3\n", "pkg/gradlint.toml: top level extend: expected the path of a configuration file"),
    ('extend = "gradlint.toml"\n', "pkg/gradlint.toml: top level extend: 'gradlint.toml' extends itself"),
    ('extend = "../pyproject.toml"\n',
     "pyproject.toml: [tool.gradlint] extend: 'pkg/gradlint.toml' extends itself (through pkg/gradlint.toml, "
     "pyproject.toml)"),
])
def test_bad_extends_are_one_line_errors(project: Path, child: str, message: str) -> None:
    (project / "pyproject.toml").write_text('[tool.gradlint]\nextend = "pkg/gradlint.toml"\n')
    (project / "pkg" / "gradlint.toml").write_text(child)
    result = gradlint("check", "pkg/bad.py")
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"gradlint: error: {message}")


@pytest.mark.parametrize("content", [
    b'[tool.black]\nx = "\xff"\n',
    b"[tool.black]\nx = " + b"[" * 1200 + b"]" * 1200 + b"\n",
])
def test_another_tool_s_unreadable_pyproject_is_ignored(project: Path, content: bytes) -> None:
    (project / "pyproject.toml").write_bytes(content)
    result = gradlint("check", "--format", "text", "bad.py")
    assert result.exit_code == 1 and result.stderr == ""
    assert codes(result) == [("bad.py:12:13", "GL101"), ("bad.py:13:13", "GL104")]


@pytest.mark.parametrize(("content", "reason"), [
    (b'[tool.gradlint]\nignore = ["GL104"]\nx = "\xff"\n', "the file is not UTF-8"),
    (b"[tool.gradlint]\nx = " + b"[" * 1200 + b"]" * 1200 + b"\n", "nested too deeply to read"),
])
def test_an_unreadable_gradlint_configuration_is_a_one_line_error(project: Path, content: bytes, reason: str) -> None:
    (project / "pyproject.toml").write_bytes(content)
    result = gradlint("check", "bad.py")
    assert result.exit_code == 2
    assert result.stderr == f"gradlint: error: pyproject.toml: invalid TOML: {reason}\n"


@pytest.mark.parametrize(("pattern", "rebased"), [
    ("legacy", "legacy"),                # any depth: unchanged
    ("*.gen.py", "*.gen.py"),
    ("**/build/", "**/build/"),
    ("pkg/legacy", "/legacy"),           # anchored under the new root
    ("/pkg/legacy/", "/legacy/"),
    ("!pkg/keep.py", "!/keep.py"),
    ("other/x", None),                   # anchored elsewhere: matches nothing under pkg/
    ("*/legacy", None),
])
def test_patterns_are_rebased_to_the_extending_file_s_folder(tmp_path: Path, pattern: str, rebased: str | None) -> None:
    assert rebase_pattern(pattern, tmp_path, tmp_path / "pkg") == rebased
