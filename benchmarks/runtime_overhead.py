"""Overhead of ``gradlint.runtime.watch``: time per optimizer update with and without it, on small CPU models.

One update: zero, N micro-batches of forward + backward (loss / N), clip, step, scheduler step.
Each configuration runs ``--repeats`` rounds of ``--updates`` updates with and without the watch
(alternating, after a warm-up), and reports the median time per update. Time is the process's
CPU time (``time.process_time``) with torch on one thread, so other jobs on a shared machine do
not count.

    python benchmarks/runtime_overhead.py [--repeats 15] [--updates 50]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import torch
from torch import nn

from gradlint.runtime import watch

MICRO_BATCHES = 4


def mlp(width: int, depth: int) -> nn.Module:
    layers: list[nn.Module] = [nn.Linear(32, width), nn.ReLU()]
    for _ in range(depth - 2):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 10))


CONFIGS: dict[str, Callable[[], nn.Module]] = {
    "MLP 32-64-10 (4 tensors)": lambda: mlp(64, 2),
    "MLP 32-256x6-10 (14 tensors)": lambda: mlp(256, 7),
    "MLP 32-64x24-10 (50 tensors)": lambda: mlp(64, 25),
}


def rounds(model: nn.Module, watched: bool, repeats: int, updates: int, micro_size: int) -> list[float]:
    """CPU seconds per update of each round."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1000)
    inputs = torch.randn(MICRO_BATCHES, micro_size, 32)
    targets = torch.randint(0, 10, (MICRO_BATCHES, micro_size))
    results = []
    for _ in range(repeats):
        guard: AbstractContextManager[Any] = (
            watch(optimizer, accumulation_steps=MICRO_BATCHES, scheduler=scheduler) if watched else nullcontext())
        with guard:
            start = time.process_time()
            for _ in range(updates):
                for micro in range(MICRO_BATCHES):
                    loss = nn.functional.cross_entropy(model(inputs[micro]), targets[micro]) / MICRO_BATCHES
                    loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                optimizer.zero_grad()
                scheduler.step()
            results.append((time.process_time() - start) / updates)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--updates", type=int, default=50)
    parser.add_argument("--micro-batch", type=int, default=16, help="samples per micro-batch")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, Python {platform.python_version()}, 1 thread, {MICRO_BATCHES} micro-batches "
          f"of {args.micro_batch} per update, AdamW, clip, StepLR; CPU time, median of {args.repeats} rounds of "
          f"{args.updates} updates\n")
    print("| model | without watch (ms/update) | with watch (ms/update) | overhead (ms) | overhead |")
    print("| --- | --- | --- | --- | --- |")
    for name, build in CONFIGS.items():
        model = build()
        rounds(model, False, 2, args.updates, args.micro_batch)  # warm-up
        bare: list[float] = []
        watched: list[float] = []
        for _ in range(args.repeats):  # alternate, so drifts of the machine hit both
            bare += rounds(model, False, 1, args.updates, args.micro_batch)
            watched += rounds(model, True, 1, args.updates, args.micro_batch)
        without, with_ = statistics.median(bare) * 1e3, statistics.median(watched) * 1e3
        print(f"| {name} | {without:.3f} | {with_:.3f} | {with_ - without:+.3f} | {(with_ / without - 1) * 100:+.1f}% |")


if __name__ == "__main__":
    main()
