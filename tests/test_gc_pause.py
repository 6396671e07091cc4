"""gradlint.gc_pause: the collector is off during an analysis and as before after it."""

from __future__ import annotations

import gc
import threading

import pytest
from samples import BAD

import gradlint.engine as engine
from gradlint.gc_pause import collection_paused
from gradlint.settings import default_settings


@pytest.fixture(autouse=True)
def _collector_on() -> None:
    gc.enable()


def test_nested_pauses_resume_the_collector_once_the_outermost_ends() -> None:
    with collection_paused():
        assert not gc.isenabled()
        with collection_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_caller_stays_off() -> None:
    gc.disable()
    try:
        with collection_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_an_error_inside_still_resumes_it() -> None:
    with pytest.raises(ValueError), collection_paused():
        raise ValueError("boom")
    assert gc.isenabled()


def test_a_pause_held_by_another_thread_keeps_it_off_until_that_thread_leaves() -> None:
    entered, leave = threading.Event(), threading.Event()

    def other() -> None:
        with collection_paused():
            entered.set()
            leave.wait(5)

    thread = threading.Thread(target=other)
    thread.start()
    entered.wait(5)
    with collection_paused():
        pass
    assert not gc.isenabled()
    leave.set()
    thread.join(5)
    assert gc.isenabled()


def test_lint_source_runs_with_the_collector_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    real = engine.training_loops

    def spy(*args: object, **kwargs: object) -> object:
        seen.append(gc.isenabled())
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "training_loops", spy)
    found = engine.lint_source(BAD, "train.py", default_settings())
    assert seen == [False] and found and gc.isenabled()
