"""Overhead of ``gradlint.runtime.watch``: time per optimizer update with and without it, on small CPU models.

One update: zero, N micro-batches of forward + backward (loss / N), clip, step, scheduler step.
Each configuration runs ``--repeats`` rounds of ``--updates`` updates with and without the watch
(alternating, after a warm-up), and reports the median time per update. Time is the process's
CPU time (``time.process_time``) with torch on one thread, so other jobs on a shared machine do
not count.

    python benchmarks/runtime_overhead.py [--repeats 15] [--updates 50] [--write]

``--write`` puts the table into ``benchmarks/RESULTS.md`` as its "Runtime overhead of watch"
section (replacing that section, leaving the rest of the file alone).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import torch
from results import RESULTS, write_section
from torch import nn

from gradlint.runtime import watch

MICRO_BATCHES = 4
HEADING = "## Runtime overhead of watch"


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


def table(repeats: int, updates: int, micro_size: int) -> list[str]:
    """The markdown table: one row per model."""
    lines = ["| model | without watch (ms/update) | with watch (ms/update) | overhead (ms) | overhead |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for name, build in CONFIGS.items():
        model = build()
        rounds(model, False, 2, updates, micro_size)  # warm-up
        bare: list[float] = []
        watched: list[float] = []
        for _ in range(repeats):  # alternate, so drifts of the machine hit both
            bare += rounds(model, False, 1, updates, micro_size)
            watched += rounds(model, True, 1, updates, micro_size)
        without, with_ = statistics.median(bare) * 1e3, statistics.median(watched) * 1e3
        lines.append(f"| {name} | {without:.3f} | {with_:.3f} | {with_ - without:+.3f} | "
                     f"{(with_ / without - 1) * 100:+.1f}% |")
        print(lines[-1], flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--updates", type=int, default=50)
    parser.add_argument("--micro-batch", type=int, default=16, help="samples per micro-batch")
    parser.add_argument("--write", action="store_true", help="put the table into benchmarks/RESULTS.md")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    setup = (f"torch {torch.__version__}, Python {platform.python_version()}, 1 thread; one update = "
             f"{MICRO_BATCHES} micro-batches of {args.micro_batch} (forward, backward), clip_grad_norm_, AdamW step, "
             f"zero_grad, StepLR step; CPU time (process_time), median of {args.repeats} alternating rounds of "
             f"{args.updates} updates")
    print(setup + "\n")
    load = os.getloadavg()[0]
    rows = table(args.repeats, args.updates, args.micro_batch)
    if args.write:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=RESULTS.parent).stdout.strip() or "unknown"
        when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        write_section("runtime-overhead", "\n".join([
            HEADING, "",
            f"Produced by `python benchmarks/runtime_overhead.py --write` on {when}, commit {commit}, "
            f"{platform.processor() or platform.machine()} ({platform.platform()}, {os.cpu_count()} cores, load average "
            f"{load:.1f} at the start). {setup}.", "",
            *rows, "",
            "The cost is a Python call per parameter tensor per backward (the gradient hook that counts "
            "backward calls) plus a few wrapped calls per update: it grows with the number of parameter "
            "tensors, not with their size, so it shrinks relative to the update as layers get wider (or "
            "move to a GPU). The machine is shared (2 cores): rows vary by a few tenths of a millisecond "
            "between runs.", ""]))
        print(f"\nwrote {RESULTS}")


if __name__ == "__main__":
    main()
