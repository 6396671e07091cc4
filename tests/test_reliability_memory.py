"""Bounded memory and bounded parallelism (issue 18, point 5)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from samples import BAD

from gradlint.runner import default_jobs
from gradlint.settings import default_settings

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


_MEASURE = """
import gc, resource, sys
sys.path.insert(0, sys.argv[1])
from test_reliability_memory import _file
from gradlint import lint_source
from gradlint.fixes import layout
from gradlint.model import unit

source = _file(440)
assert source.count("\\n") >= 440
first = lint_source(source, "loops.py")
assert {d.code for d in first} == {"GL102"} and all(d.fix is not None for d in first)
gc.collect()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for _ in range(300):
    assert lint_source(source, "loops.py") == first
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak
kept = len(layout._LAYOUTS)
assert kept <= unit._MAX_MODELS, kept  # those of the unit models kept across lints
unit._MODELS.clear()
gc.collect()
print(grown, len(layout._LAYOUTS))
"""


def test_linting_the_same_file_300_times_keeps_memory_flat() -> None:
    """In a fresh interpreter (the peak of this one is whatever earlier tests reached), the
    peak resident memory grows by less than 30 MB over 300 lints of a 440-line file."""
    done = subprocess.run([sys.executable, "-c", _MEASURE, str(Path(__file__).parent)], capture_output=True,
                          text=True, timeout=600, check=True)
    grown_kib, layouts = map(int, done.stdout.split())
    assert grown_kib < 30 * 1024, f"peak memory grew by {grown_kib / 1024:.1f} MB over 300 runs"
    assert layouts == 0  # no layout outlives its unit


def test_a_huge_jobs_request_starts_a_pool_of_the_capped_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gradlint.runner as runner_module
    from gradlint.runner import capped_jobs, run

    sizes: list[int] = []
    real = runner_module._context

    class Recording:
        def Pool(self, processes: int, **kwargs: object):  # noqa: N802 (multiprocessing's name)
            sizes.append(processes)
            return real().Pool(processes, **kwargs)

    monkeypatch.setattr(runner_module, "_context", Recording)
    paths = []
    for n in range(3 * capped_jobs(10**9)):
        paths.append(tmp_path / f"train_{n}.py")
        paths[-1].write_text(BAD)
    result = run(paths, default_settings(), jobs=10**6)
    assert sizes == [capped_jobs(10**6)]
    assert len([d for d in result.diagnostics if d.code == "GL101"]) == len(paths)


def test_jobs_default_is_the_cpu_count_and_a_larger_request_is_capped() -> None:
    from gradlint.runner import MAX_JOBS_PER_CPU, capped_jobs

    cpus = default_jobs()
    assert cpus >= 1
    assert capped_jobs(1) == 1
    assert capped_jobs(10**9) == cpus * MAX_JOBS_PER_CPU
    assert capped_jobs(cpus) == cpus
