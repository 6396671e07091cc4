"""What a walk checks and what it says, in the cases a folder-at-a-time walk could get wrong:
virtualenv markers, patterns of a configuration rooted elsewhere, nested configurations,
``--config KEY=VALUE`` patterns, and cached results whose modules sat in missing folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from samples import BAD, gradlint

import gradlint.runner as runner_module
from gradlint.cache import CACHE_DIR_NAME, Cache
from gradlint.runner import run
from gradlint.settings import default_settings


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _files(root: Path, *names: str) -> None:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(BAD, encoding="utf-8")


def _shown(*args: str) -> list[str]:
    result = gradlint("check", "--show-files", *args)
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def test_a_virtualenv_is_a_folder_holding_a_file_named_pyvenv_cfg(project: Path) -> None:
    _files(project, "env/a.py", "linked/a.py", "notenv/a.py", "notenv/pyvenv.cfg/a.py", "real.cfg")
    (project / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (project / "linked" / "pyvenv.cfg").symlink_to(project / "real.cfg")
    assert _shown(".") == ["notenv/a.py", "notenv/pyvenv.cfg/a.py"]
    assert _shown("env") == ["env/a.py"]  # a folder named on the command line is walked
    assert _shown("--isolated", ".") == ["notenv/a.py", "notenv/pyvenv.cfg/a.py"]


def test_an_excluded_virtualenv_is_not_reported_as_excluded(project: Path) -> None:
    _files(project, "tools/a.py")
    (project / "tools" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (project / "pyproject.toml").write_text('[tool.gradlint]\nextend-exclude = ["tools"]\n')
    result = gradlint("check", ".")
    assert result.stderr == "gradlint: warning: No Python files found under .\n"
    (project / "tools" / "pyvenv.cfg").unlink()
    result = gradlint("check", ".")
    assert result.stderr == ("gradlint: warning: .: nothing checked: what it holds is excluded "
                             "(.gitignore or exclude patterns)\n")


def test_patterns_of_a_configuration_named_with_config_are_rooted_at_its_folder(project: Path) -> None:
    _files(project, "gen/a.py", "sub/a.py", "sub/gen/a.py", "sub/x/gen/a.py", "top.py")
    (project / "sub" / "gradlint.toml").write_text('exclude = ["/gen/"]\n')
    # Outside the configuration's folder a path is matched by its name alone: gen/ is excluded too.
    assert _shown("--config", "sub/gradlint.toml", ".") == ["sub/a.py", "sub/x/gen/a.py", "top.py"]
    assert _shown("--config", "sub/gradlint.toml", "sub") == ["sub/a.py", "sub/x/gen/a.py"]


def test_a_nested_configuration_governs_its_own_folder_tree(project: Path) -> None:
    _files(project, "gen/a.py", "sub/gen/a.py", "sub/deep/gen/a.py", "sub/deep/b.py", "pyproject.toml/a.py")
    (project / "sub" / "pyproject.toml").write_text('[tool.gradlint]\nextend-exclude = ["/gen/", "/deep/gen/"]\n')
    assert _shown(".") == ["gen/a.py", "pyproject.toml/a.py", "sub/deep/b.py"]
    assert _shown("sub/deep") == ["sub/deep/b.py"]


def test_patterns_set_with_config_key_value_apply_in_every_folder(project: Path) -> None:
    _files(project, "a/b/c.py", "a/c.py", "b/c.py")
    assert _shown("--config", 'exclude = ["/a/b/"]', ".") == ["a/c.py", "b/c.py"]
    assert _shown("--config", 'extend-exclude = ["b"]', ".") == ["a/c.py"]


LOOP = """\
from lib.helpers import update


def train(model, loader, opt, n):
    for i, x in enumerate(loader):
        (model(x) / n).backward()
        if (i + 1) % n == 0 or i + 1 == len(loader):
            update(opt)
"""

HELPER = "def update(opt):\n    opt.zero_grad()\n    opt.step()\n"


def test_a_module_appearing_in_a_folder_that_did_not_exist_re_lints_its_importer(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cached result records ``lib/helpers.py`` (and the other files the import looked for)
    as absent while ``lib/`` does not exist; once it does and holds the module, the importer is
    linted again."""
    (project / ".git").mkdir()
    (project / "main.py").write_text(LOOP, encoding="utf-8")
    linted: list[Path] = []
    real = runner_module._lint_task

    def counting(task: runner_module._Task, cache: Cache | None) -> object:
        linted.append(task.path)
        return real(task, cache)

    monkeypatch.setattr(runner_module, "_lint_task", counting)

    def check() -> list[tuple[str, int, str]]:
        result = run([Path("main.py")], default_settings(), cache=Cache(project / CACHE_DIR_NAME))
        return [(d.path, d.line, d.code) for d in result.diagnostics]

    assert check() == [] and check() == [] and linted == [Path("main.py")]
    (project / "lib").mkdir()
    assert check() == [] and len(linted) == 1  # an empty folder changes no look-up
    (project / "lib" / "helpers.py").write_text(HELPER, encoding="utf-8")
    assert check() == [("lib/helpers.py", 2, "GL305"), ("main.py", 6, "GL202")] and len(linted) == 2


def test_a_file_is_shown_under_its_resolved_folder_and_its_own_name(project: Path,
                                                                    tmp_path_factory: pytest.TempPathFactory) -> None:
    _files(project, "real/deep/a.py")
    (project / "link").symlink_to(project / "real")
    (project / "real" / "deep" / "b.py").symlink_to(project / "real" / "deep" / "a.py")
    outside = tmp_path_factory.mktemp("outside")
    _files(outside, "c.py")
    (project / "away").symlink_to(outside)
    result = gradlint("check", "--format", "json", "--select", "GL101", "--no-cache",
                      "link/deep", "link/deep/../deep/a.py", "away/c.py")
    assert sorted({d["path"] for d in json.loads(result.stdout)}) == ["away/c.py", "real/deep/a.py", "real/deep/b.py"]
