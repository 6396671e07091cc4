"""The progress display of long runs: only on a terminal, only after about a second, and the
runner's progress hook that feeds it."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from gradlint.reporters.progress import ProgressDisplay, progress_wanted
from gradlint.runner import run
from gradlint.settings import default_settings
from samples import BAD, GOOD, gradlint


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(("stream", "quiet", "environ", "wanted"), [
    (_Terminal(), False, {}, True),
    (io.StringIO(), False, {}, False),  # a pipe or a file
    (_Terminal(), True, {}, False),  # --quiet
    (_Terminal(), False, {"CI": "true"}, False),  # a CI log
    (_Terminal(), False, {"TERM": "dumb"}, False),
])
def test_progress_only_on_an_interactive_terminal(stream: io.StringIO, quiet: bool, environ: dict[str, str],
                                                  wanted: bool) -> None:
    assert progress_wanted(stream, quiet, environ) is wanted


def test_display_appears_after_the_delay_and_counts_files() -> None:
    out, clock = _Terminal(), _Clock()
    console = Console(file=out, force_terminal=True, width=80, color_system=None)
    with ProgressDisplay(console, delay=1.0, clock=clock) as display:
        display(3, 10)
        assert out.getvalue() == ""  # a short run prints nothing
        clock.now += 1.5
        display(7, 10)
        assert "Checking" in out.getvalue() and "7/10 0:00:01" in out.getvalue()
        clock.now += 61
        display(10, 10)
        assert "10/10 0:01:02" in out.getvalue()


def test_runner_reports_progress_after_triage_and_each_file(tmp_path: Path) -> None:
    paths = []
    for name, text in (("a.py", BAD), ("b.py", GOOD), ("c.py", "x = 1\n")):
        (tmp_path / name).write_text(text)
        paths.append(tmp_path / name)
    calls: list[tuple[int, int]] = []
    run(paths, default_settings(), progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 3), (2, 3), (3, 3)]  # c.py fails the text test: done at triage


def test_no_progress_in_a_pipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.py").write_text(BAD)
    result = gradlint("check", "--no-cache", "--format", "text", ".")
    assert result.stderr == ""
