"""Re-lint latency of the language server on a 2,000-line training script (issue 6).

    python benchmarks/lsp_relint.py              # 30 edits per mode
    python benchmarks/lsp_relint.py --edits 100 --lines 4000

Starts ``python -m gradlint lsp`` as an editor would (a subprocess on stdio), opens a
generated training script of ``--lines`` lines, then types: each edit is one incremental
``didChange`` (a learning-rate literal toggled). It measures, per edit:

- pull: the round trip of ``textDocument/diagnostic`` sent right after the change (what a
  pull client such as Neovim 0.10+ waits for);
- push: from the change to the ``publishDiagnostics`` of that version, minus the server's
  debounce (what a push client waits for once the user stops typing);
- server: the lint time the server logs for each re-lint (``window/logMessage``), as wall
  time and as CPU time of the lint thread (which does not grow when other processes compete
  for the cores).

The target is a median below 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import time

from common import REPO, gradlint_env
from lsprotocol import types
from pygls.lsp.client import LanguageClient

TARGET_MS = 100.0
DEBOUNCE_MS = 200.0  # gradlint.lsp.server.DEBOUNCE_SECONDS
LR_LINE = "LEARNING_RATE = 3e-4\n"

HEADER = '''"""A training script of the size real projects grow to: several models, loops and helpers."""
import argparse
import logging
import math

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

logger = logging.getLogger(__name__)
''' + LR_LINE

SUPPORT = '''

class Dataset{n}(Dataset):
    """Synthetic token windows, variant {n}."""

    def __init__(self, size, length=128, vocab=32000):
        self.size = size
        self.length = length
        self.vocab = vocab

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        generator = torch.Generator().manual_seed(index + {n})
        tokens = torch.randint(0, self.vocab, (self.length + 1,), generator=generator)
        return {{"input_ids": tokens[:-1], "labels": tokens[1:]}}


class Model{n}(torch.nn.Module):
    def __init__(self, vocab=32000, width=256, depth=4):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width)
        layer = torch.nn.TransformerEncoderLayer(width, 4, 4 * width, batch_first=True)
        self.body = torch.nn.TransformerEncoder(layer, depth)
        self.head = torch.nn.Linear(width, vocab)

    def forward(self, input_ids, labels=None):
        hidden = self.body(self.embed(input_ids))
        logits = self.head(hidden)
        if labels is None:
            return logits
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten())


@torch.no_grad()
def evaluate{n}(model, loader, device):
    model.eval()
    total = count = 0
    for batch in loader:
        batch = {{k: v.to(device) for k, v in batch.items()}}
        total += model(**batch).item()
        count += 1
    model.train()
    return math.exp(total / max(count, 1))

'''

LOOPS = '''

def train{n}(args, device):
    model = Model{n}().to(device)
    loader = DataLoader(Dataset{n}(4096), batch_size=args.batch_size, shuffle=True)
    eval_loader = DataLoader(Dataset{n}(256), batch_size=64)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=0.1)
    updates = math.ceil(len(loader) / args.accumulation_steps) * args.epochs
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, LEARNING_RATE, total_steps=updates)
    scaler = torch.cuda.amp.GradScaler()
    completed = 0
    for epoch in range(args.epochs):
        for step, batch in enumerate(loader):
            batch = {{k: v.to(device) for k, v in batch.items()}}
            with torch.autocast(device.type, dtype=torch.bfloat16):
                loss = model(**batch) / args.accumulation_steps
            scaler.scale(loss).backward()
            if (step + 1) % args.accumulation_steps == 0 or step + 1 == len(loader):
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad(set_to_none=True)
                scheduler.step()
                completed += 1
                if completed % args.eval_every == 0:
                    logger.info("update %d: perplexity %.2f", completed, evaluate{n}(model, eval_loader, device))
        logger.info("epoch %d done after %d updates", epoch, completed)
    return model


def train_windows{n}(model, windows, optimizer, scheduler):
    for window in windows:
        for batch in window:
            loss = model(**batch) / len(window)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
'''

FOOTER = '''

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--accumulation_steps", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--max_grad_norm", type=float, default=1.0)
    parser.add_argument("--eval_every", type=int, default=100)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train0(args, device)


if __name__ == "__main__":
    main()
'''


def training_script(lines: int, loops: int) -> str:
    """A deterministic script of exactly ``lines`` lines: datasets, models, evaluation and
    ``loops`` pairs of training functions, spread evenly: an AMP loop with a counted gate that
    also steps on the last partial window (GL202) and a nested micro-batch loop that clips per
    micro-batch (GL101)."""
    support = [SUPPORT.format(n=n) for n in range(lines // SUPPORT.count("\n") + 1)]
    every = max(1, len(support) // max(loops, 1))
    parts: list[str] = []
    for n, block in enumerate(support):
        parts.append(block)
        if n % every == 0 and n // every < loops:
            parts.append(LOOPS.format(n=n))
    body = (HEADER + "".join(parts)).splitlines(keepends=True)
    footer = FOOTER.splitlines(keepends=True)
    keep = lines - len(footer)
    while body[keep - 1].startswith((" ", "\t")):  # cut between two top-level definitions
        keep -= 1
    return "".join(body[:keep] + ["\n"] * (lines - len(footer) - keep) + footer)


def summary(name: str, values: list[float]) -> str:
    """One result row: median, p90, min and max in milliseconds."""
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    verdict = "meets" if statistics.median(values) < TARGET_MS else "misses"
    return (f"| {name} | {len(values)} | {statistics.median(values):.1f} | {p90:.1f} | {ordered[0]:.1f} | "
            f"{ordered[-1]:.1f} | {verdict} the {TARGET_MS:.0f} ms target |")


class Session:
    """One server process with a client that records pushes and the lint times it logs."""

    def __init__(self) -> None:
        self.client = LanguageClient("lsp-relint-benchmark", "1")
        self.published: dict[int, float] = {}
        self.lint_ms: list[float] = []
        self.cpu_ms: list[float] = []

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: types.PublishDiagnosticsParams) -> None:
            if params.version is not None:
                self.published[params.version] = time.perf_counter()

        @self.client.feature(types.WINDOW_LOG_MESSAGE)
        def logged(params: types.LogMessageParams) -> None:
            match = re.search(r"diagnostics in ([0-9.]+) ms \(CPU ([0-9.]+) ms\)$", params.message)
            if match:
                self.lint_ms.append(float(match.group(1)))
                self.cpu_ms.append(float(match.group(2)))

    async def start(self, pull: bool) -> None:
        await self.client.start_io(sys.executable, "-m", "gradlint", "lsp", env=gradlint_env(), cwd=str(REPO))
        capabilities = types.ClientCapabilities(text_document=types.TextDocumentClientCapabilities(
            diagnostic=types.DiagnosticClientCapabilities() if pull else None,
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True)))
        await self.client.initialize_async(types.InitializeParams(capabilities=capabilities))
        self.client.initialized(types.InitializedParams())

    def edit(self, uri: str, version: int, line: int, value: str) -> None:
        """Replace the learning-rate literal on ``line`` (0-based) with ``value``."""
        start = LR_LINE.index("3e-4")
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(line, start), types.Position(line, start + 4)), text=value)]))

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


async def measure(text: str, edits: int, pull: bool) -> tuple[list[float], Session, int]:
    """Per-edit latencies (ms), the session (with the lint times the server logged) and the
    diagnostics count."""
    session = Session()
    await session.start(pull)
    uri = (REPO / "benchmarks" / "_lsp_relint_script.py").as_uri()  # never written to disk
    session.client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    line = text.splitlines().index(LR_LINE.strip())
    latencies: list[float] = []
    count = 0
    for version in range(2, edits + 2):
        session.edit(uri, version, line, "1e-4" if version % 2 else "3e-4")
        sent = time.perf_counter()
        if pull:
            report = await session.client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
                text_document=types.TextDocumentIdentifier(uri=uri)))
            latencies.append((time.perf_counter() - sent) * 1000)
            count = len(report.items)
        else:
            while version not in session.published:
                await asyncio.sleep(0.001)
            latencies.append((session.published[version] - sent) * 1000 - DEBOUNCE_MS)
    await session.stop()
    del session.lint_ms[0], session.cpu_ms[0]  # the first lint (on open) warms up
    return latencies, session, count


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=2000, help="length of the script (default 2000)")
    parser.add_argument("--edits", type=int, default=30, help="edits measured per mode (default 30)")
    parser.add_argument("--loops", type=int, default=3,
                        help="pairs of training functions in the script (default 3: six loops)")
    args = parser.parse_args()
    text = training_script(args.lines, args.loops)
    pull, pull_session, count = await measure(text, args.edits, pull=True)
    push, push_session, _ = await measure(text, args.edits, pull=False)
    print(f"script: {text.count(chr(10))} lines, {2 * args.loops} training loops, {count} diagnostics; "
          f"{args.edits} edits per mode; "
          f"Python {sys.version.split()[0]}")
    print()
    print("| measurement | edits | median ms | p90 ms | min ms | max ms | |")
    print("|---|---|---|---|---|---|---|")
    print(summary("pull: change -> textDocument/diagnostic answered", pull))
    print(summary(f"push: change -> publishDiagnostics, minus the {DEBOUNCE_MS:.0f} ms debounce", push))
    print(summary("server: lint wall time it logs", pull_session.lint_ms + push_session.lint_ms))
    print(summary("server: lint thread CPU time it logs", pull_session.cpu_ms + push_session.cpu_ms))
    print()
    print("Wall times include waiting for a core: on a busy machine they exceed the CPU time.")


if __name__ == "__main__":
    asyncio.run(main())
