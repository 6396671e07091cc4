"""Fixes change only what their finding is about (issue 18, point 1): a step moved to a
boundary that already steps is removed, not doubled; a guarded step keeps its guard (no fix)."""

from __future__ import annotations

from gradlint import lint_source
from gradlint.fixer import fix_source
from gradlint.settings import default_settings

_DOUBLED = '''\
import torch


def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum_steps
        loss.backward()
        optimizer.step()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
'''

_GUARDED = '''\
import torch


def train(model, loader, optimizer, accum_steps, eager):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum_steps
        loss.backward()
        if eager:
            optimizer.step()
        if (step + 1) % accum_steps == 0:
            optimizer.zero_grad()
'''


def _steps(text: str) -> list[int]:
    return [n for n, line in enumerate(text.splitlines(), 1) if line.strip() == "optimizer.step()"]


def test_a_step_the_boundary_already_has_is_removed_not_doubled() -> None:
    found = [d for d in lint_source(_DOUBLED, "t.py") if d.code == "GL102"]
    assert [(d.line, d.fix is not None) for d in found] == [(8, True)]
    assert found[0].fix is not None
    assert found[0].fix.message == "Remove `optimizer.step()`: the update boundary already steps this optimizer"
    fixed = fix_source(_DOUBLED, "t.py", default_settings(), False).text
    assert _steps(fixed) == [9]  # one step, under the gate
    assert fixed == _DOUBLED.replace("        optimizer.step()\n        if", "        if", 1)
    assert not [d for d in lint_source(fixed, "t.py") if d.code == "GL102"]


def test_a_step_under_its_own_condition_gets_no_fix() -> None:
    found = [d for d in lint_source(_GUARDED, "t.py") if d.code == "GL102"]
    assert [(d.line, d.fix) for d in found] == [(9, None)]
    assert fix_source(_GUARDED, "t.py", default_settings(), True).text == _GUARDED
