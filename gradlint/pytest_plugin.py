"""gradlint's pytest plugin (entry point ``pytest11``): the ``gradlint_watch`` and ``gradlint_equivalent`` fixtures.

pytest loads this module in every run of a project that has gradlint installed, so it imports only
pytest; torch and gradlint's runtime are imported when a test asks for a fixture.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest


@pytest.fixture
def gradlint_watch() -> Iterator[Callable[..., Any]]:
    """Watch a training test: ``gradlint_watch(optimizer, accumulation_steps=4, scheduler=s, scaler=sc)``.

    Each call starts a ``gradlint.runtime.watch`` (same arguments) and returns it; every watch
    started is closed at teardown. A violation raises ``TrainingLoopError`` inside the test.
    """
    from gradlint.runtime import Watch

    started: list[Watch] = []

    def start(optimizer: Any, **options: Any) -> Watch:
        watcher = Watch(optimizer, **options)
        watcher.__enter__()
        started.append(watcher)
        return watcher

    yield start
    for watcher in reversed(started):
        watcher.close()


@pytest.fixture
def gradlint_equivalent() -> Callable[..., None]:
    """``gradlint.testing.assert_accumulation_equivalent``, for a test that takes it as a fixture."""
    from gradlint.testing import assert_accumulation_equivalent

    return assert_accumulation_equivalent
