"""gradlint.model.positions: one code generation pass gives libcst's own syntactic positions."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from gradlint.model.positions import positions

SOURCE = '''\
if 1:
    def train(model, loader, optimizer, accum=4):
        """Docstring."""
        for step, (x, y) in enumerate(loader):
            loss = model(x).sum() / accum  # comment
            loss.backward()
            if (step + 1) % accum == 0 and not (
                    step == 0):
                optimizer.step(); optimizer.zero_grad()
        return {"lr": [g["lr"] for g in optimizer.param_groups], 'n': f"{step!r:>4}"}
'''


def test_positions_equal_those_of_the_metadata_wrapper() -> None:
    module = cst.parse_module(SOURCE)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    found = positions(module)
    assert len(found) == len(expected) > 100
    assert all(found[node] == rng for node, rng in expected.items())


def test_a_position_is_one_based_line_and_zero_based_column() -> None:
    module = cst.parse_module("x = 1\nif x:\n    y = x + 2\n")
    plus = module.body[1].body.body[0].body[0].value
    assert isinstance(plus, cst.BinaryOperation)
    rng = positions(module)[plus]
    assert (rng.start.line, rng.start.column, rng.end.line, rng.end.column) == (3, 8, 3, 13)
