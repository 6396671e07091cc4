"""GL203 mean-of-means: per-token mean losses of unequal micro-batches averaged equally."""

from __future__ import annotations

from collections.abc import Iterator

from gradlint.catalogue import CATALOGUE
from gradlint.model.events import TrainingLoop
from gradlint.rules.base import Finding, Invalid, Rule
from gradlint.rules.readers import scaled_backwards


class MeanOfMeans(Rule):
    info = CATALOGUE["GL203"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        for event in scaled_backwards(loop):
            trace = event.loss_trace
            own = [d for d in trace.divisors if d.own_count]
            window = [d for d in trace.divisors if not d.own_count]
            if own and window and not any(d.counts_tokens for d in window):
                yield Finding(event.span, f"a per-micro-batch mean over {own[0].text} is divided by {window[0].text}: a "
                              "mean of means",
                              detail="The loss method divides by its own micro-batch's count, so micro-batches with "
                              "few valid tokens weigh as much as full ones; return the summed loss and divide by the "
                              "window's total count of valid tokens.")
                continue
            if not trace.divisors or not trace.token_mean:
                continue
            if any(d.counts_tokens for d in trace.divisors):
                continue  # already weighted by a count of valid tokens
            yield Finding(event.span, f"a per-token mean loss is divided by {trace.divisors[0].text}: a mean of "
                          "means; divide a summed loss by the window's valid tokens", detail="Micro-batches with few "
                          "valid tokens weigh as much as full ones; compute the loss with reduction=\"sum\" and "
                          "divide by the window's total count of valid tokens.")

    VALID = (
        """\
def train(model, loader, optimizer, accum_steps):
    for step, batch in enumerate(loader):
        logits = model(batch["input_ids"])
        loss = F.cross_entropy(logits, batch["labels"], ignore_index=-100, reduction="sum")
        (loss / num_tokens).backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
        """\
def collate(rows):
    ids = torch.stack([r["ids"] for r in rows])
    return ids, ids.masked_fill(ids == 0, -100)


def train(model, loader, optimizer, accum_steps, num_labels):
    for step, batch in enumerate(loader):
        loss = model.classify(batch, num_labels=num_labels)
        (loss / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
    )
    INVALID = (
        Invalid("""\
def train(model, loader, optimizer, accum_steps):
    for step, batch in enumerate(loader):
        logits = model(batch["input_ids"])
        loss = F.cross_entropy(logits, batch["labels"], ignore_index=-100)
        (loss / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""", ((5, "GL203"),)),
    )
