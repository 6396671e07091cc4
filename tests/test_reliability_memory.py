"""Bounded memory and bounded parallelism (issue 18, point 5)."""

from __future__ import annotations

import gc
import resource

from gradlint import lint_source
from gradlint.fixes import layout
from gradlint.model import unit
from gradlint.runner import default_jobs

_LOOP = '''
def train_{n}(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum_steps
        loss.backward()
        optimizer.step()
        if (step + 1) % accum_steps == 0:
            optimizer.zero_grad()
'''


_HELPER = '''
def helper_{n}(values, scale):
    total = 0.0
    for value in values:
        total += value * scale
    return total / max(len(values), 1)
'''


def _file(lines: int) -> str:
    """A module of four training functions, each with a GL102 finding that has a fix, and
    ordinary helpers up to ``lines`` lines."""
    parts = ["import torch\n", *(_LOOP.format(n=n) for n in range(4))]
    n = 0
    while sum(p.count("\n") for p in parts) < lines:
        parts.append(_HELPER.format(n=n))
        n += 1
    return "".join(parts)


def test_linting_the_same_file_300_times_keeps_memory_flat() -> None:
    source = _file(440)
    first = lint_source(source, "loops.py")
    assert {d.code for d in first} == {"GL102"} and all(d.fix is not None for d in first)
    gc.collect()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    for _ in range(300):
        assert lint_source(source, "loops.py") == first
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak
    assert grown < 30 * 1024, f"peak memory grew by {grown / 1024:.1f} MB over 300 runs"
    assert len(layout._LAYOUTS) <= unit._MAX_MODELS  # those of the unit models kept across lints
    unit._MODELS.clear()
    gc.collect()
    assert len(layout._LAYOUTS) == 0  # no layout outlives its unit


def test_jobs_default_is_the_cpu_count_and_a_larger_request_is_capped() -> None:
    from gradlint.runner import MAX_JOBS_PER_CPU, capped_jobs

    cpus = default_jobs()
    assert cpus >= 1
    assert capped_jobs(1) == 1
    assert capped_jobs(10**9) == cpus * MAX_JOBS_PER_CPU
    assert capped_jobs(cpus) == cpus
