"""The result cache: hits give the same diagnostics, changes miss, concurrent runs, clean."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import gradlint.cache as cache_module
import gradlint.runner as runner_module
from gradlint.cache import CACHE_DIR_NAME, CACHEDIR_TAG, Cache, CacheError, clean, default_cache_dir, project_root
from gradlint.runner import run
from gradlint.settings import Settings, default_settings

from conftest import FIXTURES, ROOT
from samples import BAD, GOOD, gradlint


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder (with pyproject.toml) holding a bad, a good and a fixable script."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GRADLINT_CACHE_DIR", raising=False)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / "nested.py").write_bytes((FIXTURES / "rules" / "gl101" / "nested_micro_loop.py").read_bytes())
    return tmp_path


def _files(folder: Path) -> list[Path]:
    return sorted(p.relative_to(folder) for p in folder.glob("*.py"))


def _no_linting(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(task: object, cache: object) -> None:
        raise AssertionError("a cached file was linted again")
    monkeypatch.setattr(runner_module, "_lint_task", refuse)


def _dicts(result: runner_module.RunResult) -> list[dict]:
    return [d.to_dict() for d in result.diagnostics]


def test_a_hit_gives_the_same_diagnostics_and_fixes(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = Cache(project / CACHE_DIR_NAME)
    fresh = run(_files(project), default_settings(), cache=cache)
    assert any(d.fix is not None for d in fresh.diagnostics)
    _no_linting(monkeypatch)
    again = run(_files(project), default_settings(), cache=Cache(project / CACHE_DIR_NAME))
    assert _dicts(again) == _dicts(fresh)
    assert again.files_checked == fresh.files_checked == 3


def test_a_copy_elsewhere_hits_and_reports_its_own_path(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = Cache(project / CACHE_DIR_NAME)
    run([Path("bad.py")], default_settings(), cache=cache)
    (project / "sub").mkdir()
    (project / "sub" / "copy.py").write_text(BAD)
    expected = _dicts(run([Path("sub/copy.py")], default_settings()))
    _no_linting(monkeypatch)
    assert _dicts(run([Path("sub/copy.py")], default_settings(), cache=cache)) == expected
    assert {d["path"] for d in expected} == {"sub/copy.py"}


def test_a_content_change_misses(project: Path) -> None:
    cache = Cache(project / CACHE_DIR_NAME)
    assert [d.line for d in run([Path("bad.py")], default_settings(), cache=cache).diagnostics] == [12, 13]
    (project / "bad.py").write_text(BAD.replace("            scheduler.step()\n", ""))
    assert [d.line for d in run([Path("bad.py")], default_settings(), cache=cache).diagnostics] == [12]


def test_a_settings_change_misses(project: Path) -> None:
    cache = Cache(project / CACHE_DIR_NAME)
    assert [d.code for d in run([Path("bad.py")], default_settings(), cache=cache).diagnostics] == ["GL101", "GL104"]
    only_gl104 = Settings(select=frozenset({"GL104"}))
    assert [d.code for d in run([Path("bad.py")], only_gl104, cache=cache).diagnostics] == ["GL104"]
    assert [d.code for d in run([Path("bad.py")], default_settings(), cache=cache).diagnostics] == ["GL101", "GL104"]


def test_a_gradlint_change_misses(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Cache(project / CACHE_DIR_NAME).put("k" * 64, [])
    entries = list((project / CACHE_DIR_NAME).glob("v*-*"))
    monkeypatch.setattr(cache_module, "__version__", "999.0")
    newer = Cache(project / CACHE_DIR_NAME)
    assert newer.get("k" * 64, "x.py") is None
    newer.put("k" * 64, [])
    assert [p.name for p in (project / CACHE_DIR_NAME).glob("v*-*")] != [p.name for p in entries]
    assert len(list((project / CACHE_DIR_NAME).glob("v*-*"))) == 1  # the older build's entries are gone


def test_build_id_hashes_gradlints_source() -> None:
    assert cache_module.build_id() == cache_module.build_id()
    assert len(cache_module.build_id()) == 20


def test_a_corrupt_entry_is_a_miss(project: Path) -> None:
    cache = Cache(project / CACHE_DIR_NAME)
    first = _dicts(run([Path("bad.py")], default_settings(), cache=cache))
    for entry in (project / CACHE_DIR_NAME).rglob("*.json"):
        entry.write_text('{"diagnostics": [{"line": 1')
    assert _dicts(run([Path("bad.py")], default_settings(), cache=cache)) == first
    entries = list((project / CACHE_DIR_NAME).rglob("*.json"))
    assert [json.loads(e.read_text())["diagnostics"][0]["code"] for e in entries] == ["GL101"]


def test_cli_creates_the_cache_at_the_project_root(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "src").mkdir()
    monkeypatch.chdir(project / "src")
    result = gradlint("check", "..", "--format", "concise")
    assert result.exit_code == 1
    folder = project / CACHE_DIR_NAME
    assert (folder / "CACHEDIR.TAG").read_text() == CACHEDIR_TAG
    assert (folder / ".gitignore").read_text().splitlines()[-1] == "*"
    assert len(list(folder.rglob("*.json"))) == 3  # one entry per file with training text
    assert gradlint("check", "..", "--format", "concise").stdout == result.stdout


def test_no_cache_writes_nothing(project: Path) -> None:
    result = gradlint("check", ".", "--no-cache")
    assert result.exit_code == 1
    assert not (project / CACHE_DIR_NAME).exists()


def test_cache_dir_option_and_environment(project: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    elsewhere = tmp_path_factory.mktemp("caches")
    assert gradlint("check", ".", "--cache-dir", str(elsewhere / "a")).exit_code == 1
    assert (elsewhere / "a" / "CACHEDIR.TAG").exists()
    assert gradlint("check", ".", env={"GRADLINT_CACHE_DIR": str(elsewhere / "b")}).exit_code == 1
    assert (elsewhere / "b" / "CACHEDIR.TAG").exists()
    assert not (project / CACHE_DIR_NAME).exists()


def test_cache_dir_that_is_a_file(project: Path) -> None:
    (project / "afile").write_text("")
    result = gradlint("check", ".", "--cache-dir", "afile")
    assert result.exit_code == 2
    assert result.stderr == "gradlint: error: the cache folder afile is a file\n"


def test_project_root_and_default_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GRADLINT_CACHE_DIR", raising=False)
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "a" / "b").mkdir(parents=True)
    assert project_root(tmp_path / "repo" / "a" / "b") == tmp_path / "repo"
    assert default_cache_dir(tmp_path / "repo" / "a") == tmp_path / "repo" / CACHE_DIR_NAME
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    marked = [p for p in lonely.parents if (p / ".git").exists() or (p / "pyproject.toml").exists()]
    assert project_root(lonely) == (marked[0] if marked else lonely)


def test_clean_command(project: Path) -> None:
    gradlint("check", ".")
    folder = project / CACHE_DIR_NAME
    assert folder.is_dir()
    result = gradlint("clean")
    assert (result.exit_code, result.stdout) == (0, f"Removed {folder}\n")
    assert not folder.exists()
    result = gradlint("clean")
    assert (result.exit_code, result.stdout) == (0, f"No cache at {folder}\n")


def test_clean_refuses_a_folder_that_is_not_a_cache(project: Path) -> None:
    (project / "precious").mkdir()
    (project / "precious" / "data.txt").write_text("keep me")
    result = gradlint("clean", "--cache-dir", "precious")
    assert result.exit_code == 2
    assert result.stderr == ("gradlint: error: precious is not a gradlint cache folder "
                             "(no gradlint CACHEDIR.TAG); not removing it\n")
    assert (project / "precious" / "data.txt").read_text() == "keep me"
    with pytest.raises(CacheError):
        clean(project / "precious")


def test_two_concurrent_runs_share_the_cache(project: Path) -> None:
    for index in range(40):
        (project / f"copy{index}.py").write_text(BAD.replace("num_updates", f"num_updates_{index}"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "gradlint", "check", ".", "--format", "json", "--jobs", "2"]
    runs = [subprocess.Popen(command, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for _ in range(2)]
    outputs = [r.communicate(timeout=600) for r in runs]
    assert [r.returncode for r in runs] == [1, 1]
    assert outputs[0][0] == outputs[1][0]
    reference = gradlint(*command[3:], "--no-cache")  # in this process, without the cache
    assert outputs[0][0].decode() == reference.stdout
    # the result entries; the file index (files.json) is written only when the files are older
    # than the run by SETTLED_NS, which depends on how fast the runs start
    entries = [e for e in (project / CACHE_DIR_NAME).rglob("*.json") if e.name != "files.json"]
    assert len(entries) == 43
    assert all(json.loads(e.read_text())["diagnostics"] is not None for e in entries)
    assert not list((project / CACHE_DIR_NAME).rglob("*.tmp"))
    warm = subprocess.run(command, cwd=project, env=env, capture_output=True, timeout=600)
    assert warm.stdout.decode() == reference.stdout


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files count as settled at once (normally only two seconds after their last change)."""
    monkeypatch.setattr(cache_module, "SETTLED_NS", -10**9)


def _no_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(data: bytes, settings: Settings) -> bool:
        raise AssertionError("an unchanged file was read again")
    monkeypatch.setattr(runner_module, "worth_reading", refuse)


def test_unchanged_settled_files_are_not_read_again(project: Path, settled: None,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "plain.py").write_text("x = 1\n")
    first = run(_files(project), default_settings(), cache=Cache(project / CACHE_DIR_NAME))
    _no_reading(monkeypatch)
    again = run(_files(project), default_settings(), cache=Cache(project / CACHE_DIR_NAME))
    assert _dicts(again) == _dicts(first) and again.files_checked == 4


def test_the_index_notices_a_rewrite_that_keeps_size_and_times(project: Path, settled: None) -> None:
    bad = project / "bad.py"
    run([Path("bad.py")], default_settings(), cache=Cache(project / CACHE_DIR_NAME))
    before = bad.stat()
    bad.write_text(BAD.replace("scheduler.step()", "scheduler.sTep()"))  # same size, no GL104
    os.utime(bad, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert bad.stat().st_size == before.st_size and bad.stat().st_mtime_ns == before.st_mtime_ns
    found = run([Path("bad.py")], default_settings(), cache=Cache(project / CACHE_DIR_NAME))
    assert [d.code for d in found.diagnostics] == ["GL101"]


def test_the_index_notices_a_replaced_file(project: Path, settled: None) -> None:
    run([Path("bad.py")], default_settings(), cache=Cache(project / CACHE_DIR_NAME))
    (project / "other.py").write_text(GOOD)
    os.replace(project / "other.py", project / "bad.py")
    assert run([Path("bad.py")], default_settings(), cache=Cache(project / CACHE_DIR_NAME)).diagnostics == []


def test_files_changed_just_now_are_not_remembered(project: Path) -> None:
    run(_files(project), default_settings(), cache=Cache(project / CACHE_DIR_NAME))
    assert not list((project / CACHE_DIR_NAME).rglob("files.json"))


def test_the_index_remembers_what_each_filter_setting_said(project: Path, settled: None,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "note.py").write_text("x = 1  # noqa: GL101\n")
    with_gl900 = Settings(select=default_settings().select | {"GL900"})
    first = run([Path("note.py")], with_gl900, cache=Cache(project / CACHE_DIR_NAME))
    assert [d.code for d in first.diagnostics] == ["GL900"]
    assert run([Path("note.py")], default_settings(), cache=Cache(project / CACHE_DIR_NAME)).diagnostics == []
    _no_reading(monkeypatch)
    assert _dicts(run([Path("note.py")], with_gl900, cache=Cache(project / CACHE_DIR_NAME))) == _dicts(first)
    assert run([Path("note.py")], default_settings(), cache=Cache(project / CACHE_DIR_NAME)).diagnostics == []


def test_a_notebook_hit_keeps_its_cells(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    notebook = next((FIXTURES / "notebooks").glob("*.ipynb"))
    (project / "train.ipynb").write_bytes(notebook.read_bytes())
    fresh = run([Path("train.ipynb")], default_settings(), cache=Cache(project / CACHE_DIR_NAME))
    assert fresh.diagnostics and all(d.cell is not None for d in fresh.diagnostics)
    _no_linting(monkeypatch)
    again = run([Path("train.ipynb")], default_settings(), cache=Cache(project / CACHE_DIR_NAME))
    assert _dicts(again) == _dicts(fresh)
