"""Small training scripts and a CLI runner shared by the command-line tests."""

from __future__ import annotations

from click.testing import CliRunner, Result

from gradlint.cli import main

# GL101 at 12:13 (clip per micro-batch) and GL104 at 13:13 (scheduler per micro-batch).
BAD = '''import torch


def train(model, get_batch, num_updates, accum_steps, scheduler):
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for update in range(num_updates):
        for micro_step in range(accum_steps):
            inputs, targets = get_batch()
            loss = torch.nn.functional.cross_entropy(model(inputs), targets)
            loss = loss / accum_steps
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            scheduler.step()
        optimizer.step()
        optimizer.zero_grad()
'''

GOOD = '''import torch


def train(model, get_batch, num_updates, accum_steps):
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for update in range(num_updates):
        for micro_step in range(accum_steps):
            inputs, targets = get_batch()
            loss = torch.nn.functional.cross_entropy(model(inputs), targets)
            loss = loss / accum_steps
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        optimizer.zero_grad()
'''


def gradlint(*args: str, input: str | bytes | None = None, env: dict[str, str] | None = None) -> Result:
    """Run ``gradlint ARGS`` in-process (stdout and stderr kept apart)."""
    return CliRunner().invoke(main, list(args), input=input, env=env, catch_exceptions=False)


def codes(result: Result) -> list[tuple[str, str]]:
    """``(location, code)`` of each ``text``-format line of ``result``."""
    found = []
    for line in result.stdout.splitlines():
        head, sep, rest = line.partition(": ")
        if sep and rest[:2] == "GL":
            found.append((head, rest.split(" ")[0]))
    return found
