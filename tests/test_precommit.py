"""The pre-commit hooks, run by a real pre-commit in a throwaway git repository.

The hook repository is a snapshot of this working tree (committed into a temporary git
repository), so the test exercises the current ``.pre-commit-hooks.yaml`` and code.
pre-commit builds the hook's virtualenv with pip, which fetches the dependencies from PyPI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT
from samples import BAD, GOOD

pytest.importorskip("pre_commit", reason="pre-commit is not installed (pip install -e '.[test]' installs it)")
if shutil.which("git") is None:
    pytest.skip("git is not installed", allow_module_level=True)

SNAPSHOT = [".pre-commit-hooks.yaml", "pyproject.toml", "README.md", "gradlint", "rules"]
SAFE_ONLY = BAD.replace("            scheduler.step()\n", "")


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A git repository holding this working tree's package and hook definitions."""
    repo = tmp_path_factory.mktemp("hook-repo")
    for name in SNAPSHOT:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, repo / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, repo / name)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "snapshot")
    return repo, _git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pre-commit's cache, shared by the tests so the hook environment is built once."""
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def project(tmp_path: Path, hook_repo: tuple[Path, str]) -> Path:
    repo, rev = hook_repo
    _git(tmp_path, "init", "-q")
    (tmp_path / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {repo.as_posix()}\n    rev: {rev}\n    hooks:\n      - id: gradlint\n"
        "      - id: gradlint-fix\n        stages: [manual]\n")
    return tmp_path


def pre_commit(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    _git(project, "add", "-A")
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never",
           "PIP_NO_COMPILE": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}  # the hook environment builds faster
    return subprocess.run([sys.executable, "-m", "pre_commit", "run", *args], cwd=project, env=env,
                          capture_output=True, text=True, timeout=900)


def test_hook_fails_on_a_bad_file_and_passes_on_a_good_one(project: Path, home: Path) -> None:
    (project / "bad.py").write_text(BAD)
    (project / "good.py").write_text(GOOD)
    failed = pre_commit(project, home, "gradlint", "--files", "bad.py", "good.py")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "gradlint....." in failed.stdout and "Failed" in failed.stdout
    assert "bad.py:12:13: GL101" in failed.stdout and "bad.py:13:13: GL104" in failed.stdout
    assert "good.py" not in failed.stdout
    passed = pre_commit(project, home, "gradlint", "--files", "good.py")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout


def test_hook_checks_notebooks(project: Path, home: Path) -> None:
    shutil.copy(FIXTURES / "notebooks" / "accumulation.ipynb", project / "nb.ipynb")
    result = pre_commit(project, home, "gradlint", "--files", "nb.ipynb")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "nb.ipynb:cell 5:9:13: GL101" in result.stdout


def test_excludes_apply_to_the_files_pre_commit_passes(project: Path, home: Path) -> None:
    (project / "legacy").mkdir()
    (project / "legacy" / "bad.py").write_text(BAD)
    (project / "pyproject.toml").write_text('[tool.gradlint]\nextend-exclude = ["legacy"]\n')
    result = pre_commit(project, home, "gradlint", "--files", "legacy/bad.py")
    assert result.returncode == 0, result.stdout + result.stderr


def test_fix_hook_rewrites_the_file(project: Path, home: Path) -> None:
    (project / "train.py").write_text(SAFE_ONLY)
    fixed = pre_commit(project, home, "gradlint-fix", "--hook-stage", "manual", "--files", "train.py")
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr  # pre-commit fails a hook that modifies files
    assert "files were modified by this hook" in fixed.stdout
    text = (project / "train.py").read_text()
    assert "            loss.backward()\n        torch.nn.utils.clip_grad_norm_(" in text
    again = pre_commit(project, home, "gradlint", "--files", "train.py")
    assert again.returncode == 0, again.stdout + again.stderr


def test_hook_definitions() -> None:
    import yaml  # pre-commit depends on PyYAML

    hooks = {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"gradlint", "gradlint-fix"}
    for hook in hooks.values():
        assert hook["types_or"] == ["python", "pyi", "jupyter"]
        assert "--force-exclude" in hook["entry"].split()
        assert hook["language"] == "python"
    assert hooks["gradlint-fix"]["entry"].split()[:3] == ["gradlint", "check", "--force-exclude"]
    assert "--fix" in hooks["gradlint-fix"]["entry"].split()


def test_readme_snippet_pins_a_commit_and_names_real_hooks() -> None:
    """The README's pre-commit snippet: a full commit hash as ``rev:`` (no release tags yet),
    hook ids that .pre-commit-hooks.yaml declares, each hook with its minimum pre-commit
    version and the Python file types."""
    import re

    import yaml

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### pre-commit\n"):]
    snippet = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert snippet is not None
    config = yaml.safe_load(snippet.group(1))
    [repo] = config["repos"]
    assert re.fullmatch(r"[0-9a-f]{40}", repo["rev"])
    hooks = {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert [hook["id"] for hook in repo["hooks"]] == ["gradlint"] and set(hooks) == {"gradlint", "gradlint-fix"}
    for hook in hooks.values():
        assert hook["minimum_pre_commit_version"] == "2.9.2"
        assert hook["types_or"] == ["python", "pyi", "jupyter"]


def test_readme_snippet_runs_as_written(tmp_path: Path, hook_repo: tuple[Path, str], home: Path) -> None:
    """The README's snippet, copied into a project with only its two placeholders filled in (this
    repository's address and a commit of it), runs the hook."""
    import re

    repo, rev = hook_repo
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    snippet = re.search(r"```yaml\n(.*?)```", readme[readme.index("### pre-commit\n"):], re.S)
    assert snippet is not None
    placeholder = re.search(r"rev: ([0-9a-f]{40})", snippet.group(1))
    assert placeholder is not None
    config = snippet.group(1).replace("https://github.com/<owner>/gradlint", repo.as_posix())
    config = config.replace(placeholder.group(1), rev)
    _git(tmp_path, "init", "-q")
    (tmp_path / ".pre-commit-config.yaml").write_text(config)
    (tmp_path / "bad.py").write_text(BAD)
    result = pre_commit(tmp_path, home, "--files", "bad.py")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "bad.py:12:13: GL101" in result.stdout
