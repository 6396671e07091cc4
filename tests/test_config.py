"""Configuration files, their discovery and precedence, exclusion, through the real CLI."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gradlint.config import settings_for
from gradlint.names import Kind
from samples import BAD, GOOD, codes, gradlint


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.py").write_text(BAD)
    return tmp_path


def test_pyproject_ignore_applies(project: Path) -> None:
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.gradlint]\nignore = ["GL104"]\n')
    result = gradlint("check", "--format", "text", "bad.py")
    assert result.exit_code == 1
    assert codes(result) == [("bad.py:12:13", "GL101")]


def test_select_prefix_and_extend_select(project: Path) -> None:
    (project / "gradlint.toml").write_text('select = ["GL104"]\nextend-select = ["GL900"]\n')
    (project / "bad.py").write_text(BAD.replace("max_norm=1.0)", "max_norm=1.0)  # noqa: GL102"))
    result = gradlint("check", "--format", "text", "bad.py")
    assert codes(result) == [("bad.py:12:79", "GL900"), ("bad.py:13:13", "GL104")]
    assert "unused suppression for GL102 (not enabled)" in result.stdout


def test_nearest_config_wins_and_files_are_not_merged(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.gradlint]\nignore = ["GL101"]\n')
    sub = project / "pkg" / "train"
    sub.mkdir(parents=True)
    (sub / "bad.py").write_text(BAD)
    (project / "pkg" / "gradlint.toml").write_text('ignore = ["GL104"]\n')
    result = gradlint("check", "--format", "text", ".")
    assert codes(result) == [("bad.py:13:13", "GL104"), ("pkg/train/bad.py:12:13", "GL101")]


def test_dot_gradlint_toml_beats_gradlint_toml_beats_pyproject(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.gradlint]\nignore = ["GL101", "GL104"]\n')
    (project / "gradlint.toml").write_text('ignore = ["GL101"]\n')
    assert codes(gradlint("check", "--format", "text", "bad.py")) == [("bad.py:13:13", "GL104")]
    (project / ".gradlint.toml").write_text('ignore = ["GL104"]\n')
    assert codes(gradlint("check", "--format", "text", "bad.py")) == [("bad.py:12:13", "GL101")]


def test_pyproject_without_tool_table_is_skipped(project: Path) -> None:
    (project / "gradlint.toml").write_text('ignore = ["GL104"]\n')
    sub = project / "sub"
    sub.mkdir()
    (sub / "pyproject.toml").write_text('[project]\nname = "sub"\n')
    (sub / "bad.py").write_text(BAD)
    assert codes(gradlint("check", "--format", "text", "sub")) == [("sub/bad.py:12:13", "GL101")]


def test_per_file_ignores(project: Path) -> None:
    (project / "tests").mkdir()
    (project / "tests" / "test_loop.py").write_text(BAD)
    (project / "pyproject.toml").write_text(
        '[tool.gradlint]\n[tool.gradlint.per-file-ignores]\n"tests/**" = ["GL1"]\n"bad.py" = ["GL104"]\n')
    result = gradlint("check", "--format", "text", ".")
    assert codes(result) == [("bad.py:12:13", "GL101")]


def test_command_line_select_overrides_config(project: Path) -> None:
    (project / "gradlint.toml").write_text('select = ["GL104"]\n')
    result = gradlint("check", "--format", "text", "--select", "GL101", "bad.py")
    assert codes(result) == [("bad.py:12:13", "GL101")]
    result = gradlint("check", "--format", "text", "--extend-select", "GL101", "bad.py")
    assert codes(result) == [("bad.py:12:13", "GL101"), ("bad.py:13:13", "GL104")]


def test_config_option_and_isolated(project: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    (project / "gradlint.toml").write_text('ignore = ["GL101"]\n')
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "strict.toml"
    elsewhere.write_text('ignore = ["GL104"]\n')
    assert codes(gradlint("check", "--format", "text", "bad.py")) == [("bad.py:13:13", "GL104")]
    result = gradlint("check", "--format", "text", "--config", str(elsewhere), "bad.py")
    assert codes(result) == [("bad.py:12:13", "GL101")]
    result = gradlint("check", "--format", "text", "--isolated", "bad.py")
    assert codes(result) == [("bad.py:12:13", "GL101"), ("bad.py:13:13", "GL104")]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("pyproject.toml", '[tool.gradlint]\nselekt = ["GL101"]\n',
         "pyproject.toml: unknown key 'selekt' in [tool.gradlint]"),
        ("gradlint.toml", 'ignore = ["GL999"]\n',
         "gradlint.toml: top level ignore: unknown rule code or prefix 'GL999'"),
        ("gradlint.toml", 'ignore = "GL101"\n', "gradlint.toml: top level ignore: expected a list of strings"),
        ("gradlint.toml", "respect-gitignore = 1\n",
         "gradlint.toml: top level respect-gitignore: expected true or false"),
        ("gradlint.toml", '[per-file-ignores]\n"x.py" = ["E501"]\n',
         "gradlint.toml: top level per-file-ignores.'x.py': unknown rule code or prefix 'E501'"),
        ("gradlint.toml", '[names]\nlosses = ["x"]\n', "gradlint.toml: top level names: unknown key 'losses'"),
        ("gradlint.toml", '[names]\noptimizers = ["my-opt"]\n',
         "gradlint.toml: top level names.optimizers: 'my-opt' is not a Python identifier"),
        ("gradlint.toml", "select = [\n", "gradlint.toml: invalid TOML"),
    ],
)
def test_bad_configuration_is_one_line_and_exit_2(project: Path, name: str, content: str, message: str) -> None:
    (project / name).write_text(content)
    result = gradlint("check", "bad.py")
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("gradlint: error: ")
    assert message in lines[0].replace(str(project) + os.sep, "")


def test_missing_config_file_and_unknown_option_code(project: Path) -> None:
    result = gradlint("check", "--config", "nope.toml", "bad.py")
    assert (result.exit_code, result.stderr) == (2, "gradlint: error: nope.toml: configuration file not found\n")
    result = gradlint("check", "--ignore", "GL1,XYZ", "bad.py")
    assert (result.exit_code, result.stderr) == (2, "gradlint: error: --ignore: unknown rule code or prefix 'XYZ'\n")


def test_names_table_makes_unusual_names_training_objects(project: Path) -> None:
    source = GOOD.replace("optimizer", "updater").replace(
        "        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)\n", "").replace(
        "            loss.backward()\n", "            loss.backward()\n            updater.step()\n")
    source = source.replace("updater = torch.optim.AdamW(model.parameters(), lr=3e-4)", "updater = make_thing()")
    (project / "bad.py").write_text(source)
    assert gradlint("check", "bad.py").exit_code == 0
    (project / "gradlint.toml").write_text('[names]\noptimizers = ["updater"]\n')
    assert codes(gradlint("check", "--format", "text", "bad.py")) == [("bad.py:12:13", "GL102")]


def test_settings_for_is_public_and_rereads_a_changed_file(project: Path) -> None:
    config = project / "gradlint.toml"
    config.write_text('ignore = ["GL104"]\n[names]\nschedulers = ["warmup"]\naccelerators = ["acc"]\n')
    settings = settings_for(project / "bad.py")
    assert "GL101" in settings.select and "GL104" not in settings.select
    assert settings.extra_names == (("acc", Kind.ACCELERATOR), ("warmup", Kind.SCHEDULER))
    assert settings_for(project / "bad.py") == settings
    hash(settings)
    config.write_text('ignore = ["GL101"]\n')
    os.utime(config, ns=(1, 1))  # a different mtime even on coarse clocks
    changed = settings_for(project / "bad.py")
    assert "GL101" not in changed.select and "GL104" in changed.select


def test_exclude_and_extend_exclude(project: Path) -> None:
    for folder in ("legacy", "generated", "build"):
        (project / folder).mkdir()
        (project / folder / "bad.py").write_text(BAD)
    (project / "pyproject.toml").write_text('[tool.gradlint]\nextend-exclude = ["legacy/", "gen*"]\n')
    result = gradlint("check", "--format", "text", "--select", "GL101", ".")
    assert codes(result) == [("bad.py:12:13", "GL101")]  # build/ is a default exclude
    (project / "pyproject.toml").write_text('[tool.gradlint]\nexclude = ["legacy"]\n')
    result = gradlint("check", "--format", "text", "--select", "GL101", ".")
    assert [location for location, _ in codes(result)] == ["bad.py:12:13", "build/bad.py:12:13",
                                                          "generated/bad.py:12:13"]


def test_force_exclude_applies_excludes_to_named_files(project: Path) -> None:
    (project / "legacy").mkdir()
    (project / "legacy" / "bad.py").write_text(BAD)
    (project / "pyproject.toml").write_text('[tool.gradlint]\nextend-exclude = ["legacy"]\n')
    assert gradlint("check", "legacy/bad.py").exit_code == 1
    result = gradlint("check", "--force-exclude", "legacy/bad.py")
    assert (result.exit_code, result.stdout) == (0, "All checks passed! (0 files checked)\n")
    (project / "pyproject.toml").write_text('[tool.gradlint]\nextend-exclude = ["legacy"]\nforce-exclude = true\n')
    assert gradlint("check", "legacy/bad.py").exit_code == 0
    assert gradlint("check", "--no-force-exclude", "legacy/bad.py").exit_code == 1


def test_nested_gitignore_files_are_respected(project: Path) -> None:
    (project / ".git").mkdir()
    (project / ".gitignore").write_text("scratch/\n*.gen.py\n")
    (project / "scratch").mkdir()
    (project / "scratch" / "bad.py").write_text(BAD)
    (project / "models").mkdir()
    (project / "models" / "bad.gen.py").write_text(BAD)
    (project / "models" / "keep.gen.py").write_text(BAD)
    (project / "models" / "local.py").write_text(BAD)
    (project / "models" / ".gitignore").write_text("local.py\n!keep.gen.py\n")
    result = gradlint("check", "--format", "text", "--select", "GL101", ".")
    assert [location for location, _ in codes(result)] == ["bad.py:12:13", "models/keep.gen.py:12:13"]
    result = gradlint("check", "--format", "text", "--select", "GL101", "--no-respect-gitignore", ".")
    assert len(codes(result)) == 5
    (project / "gradlint.toml").write_text("respect-gitignore = false\n")
    assert len(codes(gradlint("check", "--format", "text", "--select", "GL101", "."))) == 5


def test_gitignore_outside_a_repository_is_not_read(project: Path) -> None:
    (project / ".gitignore").write_text("bad.py\n")
    assert gradlint("check", ".").exit_code == 1


def test_the_readme_configuration_example_is_valid(project: Path) -> None:
    from conftest import ROOT

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### Configuration"):]
    example = section[section.index("```toml\n") + 8:section.index("```\n", section.index("```toml\n") + 8)]
    (project / "pyproject.toml").write_text(example)
    (project / "bad.py").write_text(GOOD)
    result = gradlint("check", "--format", "text", ".")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "All checks passed! (1 file checked)\n", "")
