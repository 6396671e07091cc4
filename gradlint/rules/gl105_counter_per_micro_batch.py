"""GL105 counter-per-micro-batch: a step counter advanced per micro-batch drives cadence."""

from __future__ import annotations

from collections.abc import Iterator

from gradlint.catalogue import CATALOGUE
from gradlint.model.events import Role, TrainingLoop
from gradlint.names import counts_updates
from gradlint.rules.base import Finding, Invalid, Rule
from gradlint.rules.readers import per_micro_batch


class CounterPerMicroBatch(Rule):
    info = CATALOGUE["GL105"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        gate_counters = {g.counter for g in loop.gates}
        for event in per_micro_batch(loop, Role.COUNTER):
            name = event.receiver or ""
            if name in gate_counters or not counts_updates(name) or name not in loop.cadence_names:
                continue
            yield Finding(event.span, f"`{name}` counts micro-batches but is used as an optimizer-step count; "
                          "increment it once per update", detail="Eval, checkpoint, logging or LR cadence keyed on "
                          "it run N times too often; increment it once per update, at the update boundary.")

    VALID = (
        """\
def train(model, loader, optimizer, accum_steps):
    global_step = 0
    for step, (x, y) in enumerate(loader):
        (model(x, y) / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
            global_step += 1
            if global_step % 100 == 0:
                evaluate(model)
""",
        """\
def train(model, loader, optimizer, accum_steps):
    samples_seen = 0
    for step, (x, y) in enumerate(loader):
        (model(x, y) / accum_steps).backward()
        samples_seen += 1
        log(samples_seen)
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
        """\
def train(model, loader, optimizer, writer, accum_steps):
    global_step = 0
    for step, (x, y) in enumerate(loader):
        global_step += 1
        loss = model(x, y) / accum_steps
        loss.backward()
        writer.add_scalar("loss", loss.item(), global_step)
        print(f"step {global_step}: running loss {loss.item() / global_step:.4f}")
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
    )
    INVALID = (
        Invalid("""\
def train(model, loader, optimizer, accum_steps):
    global_step = 0
    for step, (x, y) in enumerate(loader):
        (model(x, y) / accum_steps).backward()
        global_step += 1
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
        if global_step % 100 == 0:
            evaluate(model)
""", ((5, "GL105"),)),
        Invalid("""\
def train(model, loader, optimizer, accum_steps, max_train_steps):
    total_train_steps = 0
    for step, (x, y) in enumerate(loader):
        total_train_steps += 1
        if max_train_steps > 0 and total_train_steps > max_train_steps:
            break
        (model(x, y) / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""", ((4, "GL105"),)),
        Invalid("""\
def train(model, loader, optimizer, accum_steps, save_every):
    it = 0
    for step, (x, y) in enumerate(loader):
        it += 1
        for group in optimizer.param_groups:
            group["lr"] = warmup_lr(it)
        (model(x, y) / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
        if should_save(it, save_every):
            save(model)
""", ((4, "GL105"),)),
    )
