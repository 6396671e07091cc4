"""One pipeline for every mode: ``check``, ``--fix``, ``--diff``, ``--add-noqa`` and stdin all
go through the runner, so the size guard, the time budget, exclusion, the process pool and
the cache apply to each of them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import gradlint.engine as engine_module
import gradlint.runner as runner_module
from gradlint.cache import Cache
from gradlint.runner import Mode, Piped, run
from gradlint.settings import default_settings
from samples import BAD, GOOD, gradlint

SKIP_NOTICE = "gradlint: notice: skipped bad.py: {size} bytes is over the 100-byte limit (--max-file-size 0 checks it)\n"
GAVE_UP = ("gradlint: notice: gave up on runaway.py: its analysis took more than 1 CPU seconds "
           "(--timeout 0 removes the limit)\n")
NOT_FIXED = "gradlint: warning: runaway.py: not fixed: the analysis took more than 1 CPU seconds\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder (the current one) holding bad.py (GL101 with a safe fix, GL104 with an unsafe one)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.py").write_text(BAD)
    return tmp_path


def _check(*args: str, input: str | None = None):
    return gradlint("check", "--isolated", "--no-cache", "--format", "concise", *args, input=input)


# -- the size guard -------------------------------------------------------------------------


def test_fix_leaves_alone_a_file_that_check_skips_for_its_size(project: Path) -> None:
    size = len(BAD.encode())
    gl000 = f"bad.py:1:1: GL000 not analysed: {size} bytes is over the 100-byte limit (--max-file-size 0 checks it)"
    checked = _check("--max-file-size", "100", ".")
    assert (checked.exit_code, checked.stderr) == (1, SKIP_NOTICE.format(size=size))
    assert checked.stdout.splitlines()[0] == gl000
    fixed = _check("--fix", "--max-file-size", "100", ".")
    assert (fixed.exit_code, fixed.stderr) == (1, SKIP_NOTICE.format(size=size))
    assert fixed.stdout.splitlines()[0] == gl000
    assert (project / "bad.py").read_text() == BAD
    assert _check("--fix", ".").exit_code == 1 and (project / "bad.py").read_text() != BAD  # without the limit


def test_diff_shows_nothing_for_a_file_over_the_size_limit(project: Path) -> None:
    result = _check("--diff", "--max-file-size", "100", ".")
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr == SKIP_NOTICE.format(size=len(BAD.encode())) + "No problems would be fixed.\n"


def test_add_noqa_leaves_alone_a_file_over_the_size_limit(project: Path) -> None:
    result = _check("--add-noqa", "--max-file-size", "100", ".")
    assert (result.exit_code, result.stdout) == (0, "Added 0 noqa directives.\n")
    assert result.stderr == SKIP_NOTICE.format(size=len(BAD.encode()))
    assert (project / "bad.py").read_text() == BAD


@pytest.mark.parametrize("fix", [False, True])
def test_stdin_over_the_size_limit_is_skipped(project: Path, fix: bool) -> None:
    result = _check("--max-file-size", "100", "--stdin-filename", "bad.py", *(["--fix"] if fix else []), "-",
                    input=BAD)
    size = len(BAD.encode())
    report = (f"bad.py:1:1: GL000 not analysed: {size} bytes is over the 100-byte limit (--max-file-size 0 checks it)\n"
              "Found 1 problem in 1 file.\n")
    assert result.exit_code == 1
    assert result.stdout == (BAD if fix else report)
    assert result.stderr == SKIP_NOTICE.format(size=size) + (report if fix else "")


# -- the time budget ------------------------------------------------------------------------


@pytest.fixture
def runaway(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """runaway.py, whose analysis loops for ever."""
    real = engine_module.lint_source

    def lint_source(source: str, path: str, settings, **kwargs):
        while path.endswith("runaway.py"):
            pass
        return real(source, path, settings, **kwargs)

    monkeypatch.setattr(engine_module, "lint_source", lint_source)
    (project / "runaway.py").write_text(BAD)
    return project / "runaway.py"


def test_diff_gives_up_on_a_runaway_file(runaway: Path) -> None:
    result = _check("--diff", "--timeout", "1", ".")
    assert result.exit_code == 1
    assert result.stdout.startswith("--- bad.py\n+++ bad.py\n") and "runaway.py" not in result.stdout
    assert result.stderr.startswith(NOT_FIXED + "Would fix 1 problem:\n- bad.py:\n")


def test_add_noqa_gives_up_on_a_runaway_file(runaway: Path) -> None:
    result = _check("--add-noqa", "--timeout", "1", ".")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "Added 2 noqa directives.\n", GAVE_UP)
    assert runaway.read_text() == BAD
    assert "# noqa: GL101" in (runaway.parent / "bad.py").read_text()


# -- exclusion ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["--fix", "--diff", "--add-noqa"])
def test_excluded_files_are_not_changed_in_any_mode(project: Path, mode: str) -> None:
    (project / "other.py").write_text(BAD)
    result = _check(mode, "--extend-exclude", "bad.py", ".")
    assert (project / "bad.py").read_text() == BAD
    assert "bad.py" not in result.stdout.replace("other.py", "")
    if mode == "--diff":
        assert result.stdout.startswith("--- other.py\n")
    else:
        assert (project / "other.py").read_text() != BAD


@pytest.mark.parametrize("fix", [False, True])
def test_force_excluded_stdin_is_not_checked(project: Path, fix: bool) -> None:
    result = _check("--force-exclude", "--extend-exclude", "bad.py", "--stdin-filename", "bad.py",
                    *(["--fix"] if fix else []), "-", input=BAD)
    assert result.exit_code == 0
    assert result.stdout == (BAD if fix else "All checks passed! (0 files checked)\n")


# -- the process pool -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", [Mode.FIX, Mode.DIFF])
def test_fixing_with_a_pool_is_fixing_in_one_process(tmp_path: Path, mode: Mode) -> None:
    outcomes = []
    for jobs in (1, 2):
        folder = tmp_path  # the same files, written afresh for each run
        for index in range(4):
            (folder / f"bad{index}.py").write_text(BAD)
        (folder / "good.py").write_text(GOOD)
        files = sorted(folder.iterdir())
        result = run(files, default_settings(), jobs=jobs, mode=mode, unsafe=True)
        texts = [f.read_text() for f in files]
        outcomes.append(([(f.display.split("/")[-1], f.fixed, f.remaining, f.after) for f in result.fixes],
                         result.diagnostics, texts, result.files_checked))
    assert outcomes[0] == outcomes[1]
    fixes, _, texts, checked = outcomes[0]
    assert checked == 5 and [len(fixed) for _, fixed, _, _ in fixes] == [2, 2, 2, 2, 0]
    assert (texts[0] != BAD) == (mode is Mode.FIX)


def test_add_noqa_with_a_pool(project: Path) -> None:
    for index in range(3):
        shutil.copy(project / "bad.py", project / f"bad{index}.py")
    result = _check("--add-noqa", "-j", "2", ".")
    assert (result.exit_code, result.stdout) == (0, "Added 8 noqa directives.\n")
    assert _check(".").stdout == "All checks passed! (4 files checked)\n"


# -- the cache ------------------------------------------------------------------------------


def _no_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("the cache should have answered")

    monkeypatch.setattr(runner_module, "_lint_data", refuse)
    monkeypatch.setattr(runner_module, "fix_data", refuse)


def test_fix_is_answered_by_the_cache_when_nothing_is_fixable(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fix() -> list[str]:
        result = run([Path("bad.py")], default_settings(), cache=Cache(project / "cache"), mode=Mode.FIX)
        assert result.files_checked == 1 and len(result.fixes) == 1
        return [d.code for d in result.diagnostics]

    assert fix() == ["GL104"]  # GL101 fixed, the file written; GL104's fix is unsafe
    fixed = (project / "bad.py").read_text()
    assert fix() == ["GL104"]  # nothing to fix: the file's diagnostics are cached
    _no_analysis(monkeypatch)
    assert fix() == ["GL104"]
    assert [d.code for d in run([Path("bad.py")], default_settings(), cache=Cache(project / "cache")).diagnostics] == [
        "GL104"]
    assert (project / "bad.py").read_text() == fixed != BAD


def test_a_cached_fixable_file_is_still_fixed(project: Path) -> None:
    run([Path("bad.py")], default_settings(), cache=Cache(project / "cache"))
    result = run([Path("bad.py")], default_settings(), cache=Cache(project / "cache"), mode=Mode.DIFF, unsafe=True)
    assert [d.code for d in result.fixes[0].fixed] == ["GL101", "GL104"] and result.diagnostics == []
    assert (project / "bad.py").read_text() == BAD


def test_add_noqa_uses_the_cached_findings(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert gradlint("check", "--isolated", "--cache-dir", "cache", ".").exit_code == 1
    _no_analysis(monkeypatch)
    result = gradlint("check", "--isolated", "--cache-dir", "cache", "--add-noqa", ".")
    assert (result.exit_code, result.stdout) == (0, "Added 2 noqa directives.\n")


def test_stdin_is_answered_by_the_cache(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    piped = [Piped(project / "bad.py", "bad.py", BAD.encode())]
    first = run(piped, default_settings(), cache=Cache(project / "cache"))
    _no_analysis(monkeypatch)
    again = run(piped, default_settings(), cache=Cache(project / "cache"))
    assert [d.to_dict() for d in again.diagnostics] == [d.to_dict() for d in first.diagnostics]
    assert [d.code for d in again.diagnostics] == ["GL101", "GL104"]
