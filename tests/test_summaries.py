"""Function summaries (gradlint/model/collect.py): each unit is walked once per lint and spliced
at every call site that reaches it, to any call depth, ending on cycles and on call graphs that
fan out exponentially."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gradlint.engine import lint_source
from gradlint.model import collect, unit
from gradlint.settings import default_settings

DEEP_CHAIN = """\
def level0(opt):
    opt.step()


{levels}


def train(model, loader, opt, n):
    for i, x in enumerate(loader):
        (model(x) / n).backward()
        level{top}(opt)
        if (i + 1) % n == 0 or i + 1 == len(loader):
            opt.zero_grad()
"""


def _chain(depth: int) -> str:
    levels = "\n\n\n".join(f"def level{k}(opt):\n    level{k - 1}(opt)" for k in range(1, depth + 1))
    return DEEP_CHAIN.format(levels=levels, top=depth)


@pytest.mark.parametrize("depth", [1, 6, 12])
def test_a_step_any_number_of_calls_deep_is_placed_in_the_loop(tmp_path: Path, depth: int) -> None:
    """The step written ``depth`` calls below the loop runs on every micro-batch: GL102 at its line
    (and the fixed divisor of the loop's loss, GL202, at the backward)."""
    source = _chain(depth)
    found = lint_source(source, str(tmp_path / "deep.py"), default_settings())
    backward = source.splitlines().index("        (model(x) / n).backward()") + 1
    assert [(d.line, d.code) for d in found] == [(2, "GL102"), (backward, "GL202")]


SHARED_HELPER = """\
def update(opt, sched):
    opt.step()
    sched.step()
    opt.zero_grad()


def train_a(model, loader, opt, sched, n):
    for i, x in enumerate(loader):
        (model(x) / n).backward()
        if (i + 1) % n == 0 or i + 1 == len(loader):
            update(opt, sched)


def train_b(model, loader, opt, sched, n):
    for i, x in enumerate(loader):
        (model(x) / n).backward()
        if (i + 1) % n == 0 or i + 1 == len(loader):
            update(opt, sched)
        update(opt, sched)
"""


def test_a_helper_called_from_many_sites_is_walked_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    walked: list[str] = []
    real = collect._Walker.__init__

    def counting(self: collect._Walker, unit: object) -> None:
        walked.append(self_name(unit))
        real(self, unit)  # type: ignore[arg-type]

    def self_name(unit: object) -> str:
        return unit.unit.name  # type: ignore[attr-defined]

    monkeypatch.setattr(collect._Walker, "__init__", counting)
    monkeypatch.setattr(unit, "_MODELS", {})
    found = lint_source(SHARED_HELPER, str(tmp_path / "shared.py"), default_settings())
    assert sorted(walked) == ["train_a", "train_b", "update"]
    assert {(d.line, d.code) for d in found} >= {(2, "GL102"), (3, "GL104")}
    again = lint_source(SHARED_HELPER + "\n\nLR = 1e-4\n", str(tmp_path / "shared.py"), default_settings())
    assert sorted(walked) == ["train_a", "train_b", "update"] and again == found  # unchanged units: not walked again


def _fan_out(depth: int) -> str:
    levels = "\n\n\n".join(f"def f{k}(opt):\n    f{k - 1}(opt)\n    f{k - 1}(opt)" for k in range(1, depth + 1))
    return ("def f0(opt):\n    opt.zero_grad()\n\n\n" + levels + "\n\n\n"
            "def train(model, loader, opt):\n    for x in loader:\n        model(x).backward()\n"
            f"        f{depth}(opt)\n        opt.step()\n")


def test_a_call_graph_that_fans_out_exponentially_is_followed_within_a_budget(tmp_path: Path) -> None:
    """2**40 paths down to ``f0``: splicing stops at its budget instead of running forever."""
    started = time.perf_counter()
    lint_source(_fan_out(40), str(tmp_path / "fan.py"), default_settings())
    assert time.perf_counter() - started < 20
