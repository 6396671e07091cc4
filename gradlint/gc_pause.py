"""Python's cyclic garbage collector paused while one module is analysed.

An analysis allocates hundreds of thousands of objects (``ast`` and libcst trees, the nodes
libcst's visits rebuild) that are nearly all freed by reference counting, yet each batch of
allocations triggers a collection, and every tenth of those scans again everything kept
alive (the trees and memos of earlier files): a quarter of a cold audit's time, and a fifth
of a language-server re-lint, went to finding no cycles. Paused for the analysis, the
collector runs as usual afterwards, so cyclic garbage is still freed, one analysis late.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_LOCK = threading.Lock()
_depth = 0
_resume = False


@contextmanager
def collection_paused() -> Iterator[None]:
    """No automatic collection inside the block (nested or on several threads: the last to
    leave resumes it), unless the collector was already off when the first entered."""
    global _depth, _resume
    with _LOCK:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _LOCK:
            _depth -= 1
            if _depth == 0 and _resume:
                gc.enable()
