"""The calls a module makes once per epoch (gradlint/project/epoch_calls.py): only from the body
of a loop whose header names the epoch, never from a nested function or another loop."""

from __future__ import annotations

import ast

from gradlint.project.epoch_calls import epoch_calls

SOURCE = '''
class Parser:
    def train(self, loader, epochs):
        for epoch in range(epochs):
            self._train(loader)
            for batch in loader:
                self.log(batch)
        for fold in range(3):
            self.reset()
        self.finish()

    def fit(self, epoch_counter):
        for _ in epoch_counter:
            def later():
                self.hidden()
            later()


def main(epochs):
    epoch = 0
    while epoch < epochs:
        run_epoch()
        epoch += 1
    for lr in (1e-3, 1e-4):
        sweep(lr)
'''


def test_calls_inside_epoch_loops_are_found() -> None:
    calls = epoch_calls(ast.parse(SOURCE))
    assert calls.methods == {"Parser": frozenset({"_train", "log"})}
    assert calls.functions == {"later", "run_epoch"}  # a loop header is not its body


def test_a_module_without_epoch_loops_has_none() -> None:
    calls = epoch_calls(ast.parse("for step in range(10):\n    train_step()\n"))
    assert calls.functions == frozenset()
    assert calls.methods == {}
