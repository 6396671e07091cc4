"""Each fixable rule's fix, asserted on the exact text it produces, and where no fix is offered."""

from __future__ import annotations

import re
from typing import NamedTuple

import pytest

from gradlint.diagnostics import Applicability
from gradlint.engine import lint_source
from gradlint.fixer import fix_source
from gradlint.rule_docs import load_doc
from gradlint.catalogue import CATALOGUE
from gradlint.settings import Settings

class Case(NamedTuple):
    code: str
    name: str
    before: str
    after: str


def only(code: str) -> Settings:
    return Settings(select=frozenset({code}))


CASES = [
    Case('GL101', 'gl101_gate_amp', '''\
def train(model, loader, optimizer, scaler, accum_steps):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum_steps
        scaler.scale(loss).backward()
        # keep the norm bounded
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # per micro-batch
        if (step + 1) % accum_steps == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
            log(norm)
''', '''\
def train(model, loader, optimizer, scaler, accum_steps):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum_steps
        scaler.scale(loss).backward()
        if (step + 1) % accum_steps == 0:
            scaler.unscale_(optimizer)
            # keep the norm bounded
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # per micro-batch
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
            log(norm)
'''),
    Case('GL101', 'gl101_nested_last', '''\
def train(model, get_batch, optimizer, num_updates, accum_steps):
    for update in range(num_updates):
        for micro_step in range(accum_steps):
            loss = model(*get_batch()) / accum_steps
            loss.backward()
            if max_norm:
                torch.nn.utils.clip_grad_norm_(
                    model.parameters(), max_norm
                )
        optimizer.step()
        optimizer.zero_grad()
''', '''\
def train(model, get_batch, optimizer, num_updates, accum_steps):
    for update in range(num_updates):
        for micro_step in range(accum_steps):
            loss = model(*get_batch()) / accum_steps
            loss.backward()
        if max_norm:
            torch.nn.utils.clip_grad_norm_(
                model.parameters(), max_norm
            )
        optimizer.step()
        optimizer.zero_grad()
'''),
    Case('GL101', 'gl101_accelerate', '''\
def train(model, loader, optimizer):
    accelerator = Accelerator(gradient_accumulation_steps=4)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        with accelerator.accumulate(model):
            loss = model(**batch).loss
            accelerator.backward(loss)
            accelerator.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
''', '''\
def train(model, loader, optimizer):
    accelerator = Accelerator(gradient_accumulation_steps=4)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        with accelerator.accumulate(model):
            loss = model(**batch).loss
            accelerator.backward(loss)
            if accelerator.sync_gradients:
                accelerator.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
'''),
    Case('GL102', 'gl102_scaler_while', '''\
def train(model, loader, optimizer, scaler, accum, total):
    seen = micro = 0
    while seen < total:
        loss = model(next(loader)) / accum
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        seen += 1
        micro += 1
        if micro == accum:
            optimizer.zero_grad()
            micro = 0
''', '''\
def train(model, loader, optimizer, scaler, accum, total):
    seen = micro = 0
    while seen < total:
        loss = model(next(loader)) / accum
        scaler.scale(loss).backward()
        seen += 1
        micro += 1
        if micro == accum:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
            micro = 0
'''),
    Case('GL103', 'gl103_grad_none', '''\
def train(model, loader, optimizer, params, accum):
    for step, (x, y) in enumerate(loader):
        for p in params:
            p.grad = None
        loss = model(x, y) / accum
        loss.backward()
        if (step + 1) % accum == 0:
            optimizer.step()
            scheduler.step()
''', '''\
def train(model, loader, optimizer, params, accum):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum
        loss.backward()
        if (step + 1) % accum == 0:
            optimizer.step()
            for p in params:
                p.grad = None
            scheduler.step()
'''),
    Case('GL103', 'gl103_duplicate', '''\
def train(model, loader, optimizer, accum):
    for step, (x, y) in enumerate(loader):
        optimizer.zero_grad()
        loss = model(x, y) / accum
        loss.backward()
        if (step + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
''', '''\
def train(model, loader, optimizer, accum):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum
        loss.backward()
        if (step + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
'''),
    Case('GL103', 'gl103_accelerate_model', '''\
def train(model, loader, optimizer, scheduler):
    accelerator = Accelerator(gradient_accumulation_steps=4)
    model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)
    for batch in loader:
        with accelerator.accumulate(model):
            loss = model(**batch).loss
            accelerator.backward(loss)
            optimizer.step()
            scheduler.step()
            model.zero_grad()
''', '''\
def train(model, loader, optimizer, scheduler):
    accelerator = Accelerator(gradient_accumulation_steps=4)
    model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)
    for batch in loader:
        with accelerator.accumulate(model):
            loss = model(**batch).loss
            accelerator.backward(loss)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
'''),
    Case('GL104', 'gl104_guard', '''\
def train(model, loader, optimizer, scheduler, accum):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum
        loss.backward()
        scheduler.step()
        if (step + 1) % accum != 0:
            continue
        optimizer.step()
        optimizer.zero_grad()
''', '''\
def train(model, loader, optimizer, scheduler, accum):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum
        loss.backward()
        if (step + 1) % accum != 0:
            continue
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
'''),
    Case('GL106', 'gl106_trainer_total', '''\
import math


def train(model, loader, optimizer, epochs, accum):
    total_steps = len(loader) * epochs  # the schedule's length
    scheduler = get_cosine_schedule_with_warmup(optimizer, num_warmup_steps=0, num_training_steps=total_steps)
    for epoch in range(epochs):
        for i, (x, y) in enumerate(loader):
            (model(x, y) / accum).backward()
            if (i + 1) % accum == 0:
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
''', '''\
import math


def train(model, loader, optimizer, epochs, accum):
    total_steps = math.ceil(len(loader) / accum) * epochs  # the schedule's length
    scheduler = get_cosine_schedule_with_warmup(optimizer, num_warmup_steps=0, num_training_steps=total_steps)
    for epoch in range(epochs):
        for i, (x, y) in enumerate(loader):
            (model(x, y) / accum).backward()
            if (i + 1) % accum == 0:
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
'''),
    Case('GL107', 'gl107_multistep', '''\
def train(model, loader, optimizer, num_epochs):
    scheduler = MultiStepLR(optimizer, milestones=[num_epochs // 2])
    for epoch in range(num_epochs):
        for x, y in loader:
            model(x, y).backward()
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
        evaluate(model)
''', '''\
def train(model, loader, optimizer, num_epochs):
    scheduler = MultiStepLR(optimizer, milestones=[num_epochs // 2])
    for epoch in range(num_epochs):
        for x, y in loader:
            model(x, y).backward()
            optimizer.step()
            optimizer.zero_grad()
        scheduler.step()
        evaluate(model)
'''),
    Case('GL201', 'gl201_nested', '''\
def train(model, get_batch, optimizer, num_updates, accum):
    for update in range(num_updates):
        for _ in range(accum):
            loss = model(*get_batch())
            loss.backward()
        optimizer.step()
        optimizer.zero_grad()
''', '''\
def train(model, get_batch, optimizer, num_updates, accum):
    for update in range(num_updates):
        for _ in range(accum):
            loss = model(*get_batch())
            (loss / accum).backward()
        optimizer.step()
        optimizer.zero_grad()
'''),
    Case('GL201', 'gl201_final_window', '''\
def train(model, loader, optimizer, scaler, cfg):
    for step, batch in enumerate(loader):
        loss = model(**batch).loss
        scaler.scale(loss).backward()
        if (step + 1) % cfg.accum_steps == 0 or (step + 1) == len(loader):
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
''', '''\
def train(model, loader, optimizer, scaler, cfg):
    for step, batch in enumerate(loader):
        loss = model(**batch).loss
        scaler.scale(loss / min(cfg.accum_steps, len(loader) - step + step % cfg.accum_steps)).backward()
        if (step + 1) % cfg.accum_steps == 0 or (step + 1) == len(loader):
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
'''),
    Case('GL201', 'gl201_accelerate_arg', '''\
def train(model, loader, optimizer, accum):
    for step, batch in enumerate(loader):
        out = model(**batch)
        (out.loss + out.aux_loss).backward()
        if (step + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
''', '''\
def train(model, loader, optimizer, accum):
    for step, batch in enumerate(loader):
        out = model(**batch)
        ((out.loss + out.aux_loss) / accum).backward()
        if (step + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
'''),
    Case('GL204', 'gl204_assign', '''\
def train(model, loader, optimizer, args):
    accelerator = Accelerator(gradient_accumulation_steps=args.gradient_accumulation_steps)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        with accelerator.accumulate(model):
            loss = model(**batch).loss
            loss = loss / args.gradient_accumulation_steps
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
''', '''\
def train(model, loader, optimizer, args):
    accelerator = Accelerator(gradient_accumulation_steps=args.gradient_accumulation_steps)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        with accelerator.accumulate(model):
            loss = model(**batch).loss
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
'''),
    Case('GL204', 'gl204_inline', '''\
def train(model, loader, optimizer, args):
    accelerator = Accelerator(gradient_accumulation_steps=args.gradient_accumulation_steps)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        with accelerator.accumulate(model):
            accelerator.backward(model(**batch).loss / args.gradient_accumulation_steps)
            optimizer.step()
            optimizer.zero_grad()
''', '''\
def train(model, loader, optimizer, args):
    accelerator = Accelerator(gradient_accumulation_steps=args.gradient_accumulation_steps)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        with accelerator.accumulate(model):
            accelerator.backward(model(**batch).loss)
            optimizer.step()
            optimizer.zero_grad()
'''),
    Case('GL301', 'gl301_amp', '''\
def train(model, loader, optimizer, scaler):
    for x, y in loader:
        loss = model(x, y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.zero_grad()
''', '''\
def train(model, loader, optimizer, scaler):
    for x, y in loader:
        loss = model(x, y)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
'''),
    Case('GL302', 'gl302_gate', '''\
def train(model, loader, optimizer, scheduler, accum):
    for i, (x, y) in enumerate(loader):
        (model(x, y) / accum).backward()
        if (i + 1) % accum == 0:
            scheduler.step()
            optimizer.step()
            optimizer.zero_grad()
''', '''\
def train(model, loader, optimizer, scheduler, accum):
    for i, (x, y) in enumerate(loader):
        (model(x, y) / accum).backward()
        if (i + 1) % accum == 0:
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
'''),
    Case('GL303', 'gl303_move', '''\
def train(model, loader, optimizer, scaler):
    for x, y in loader:
        scaler.scale(model(x, y)).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.unscale_(optimizer)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
''', '''\
def train(model, loader, optimizer, scaler):
    for x, y in loader:
        scaler.scale(model(x, y)).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
'''),
    Case('GL305', 'gl305_plain', '''\
def train(model, loader, optimizer):
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        optimizer.zero_grad()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
''', '''\
def train(model, loader, optimizer):
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
'''),
    Case('GL404', 'gl404_guard_after_forward', '''\
def train(model, loader, optimizer, accum):
    for i, (x, y) in enumerate(loader):
        loss = model(x, y) / accum  # forward
        with model.no_sync():
            loss.backward()
        if (i + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
''', '''\
def train(model, loader, optimizer, accum):
    for i, (x, y) in enumerate(loader):
        with model.no_sync():
            loss = model(x, y) / accum  # forward
            loss.backward()
        if (i + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
'''),
    Case('GL407', 'gl407_self_sampler', '''\
class Trainer:
    def fit(self, epochs):
        for epoch in range(epochs):
            # one pass over the data
            for x, y in self.loader:
                self.model(x, y).backward()
                self.optimizer.step()
                self.optimizer.zero_grad()

    def setup(self, dataset):
        self.sampler = DistributedSampler(dataset)
        self.loader = DataLoader(dataset, sampler=self.sampler)
''', '''\
class Trainer:
    def fit(self, epochs):
        for epoch in range(epochs):
            self.sampler.set_epoch(epoch)
            # one pass over the data
            for x, y in self.loader:
                self.model(x, y).backward()
                self.optimizer.step()
                self.optimizer.zero_grad()

    def setup(self, dataset):
        self.sampler = DistributedSampler(dataset)
        self.loader = DataLoader(dataset, sampler=self.sampler)
'''),
    Case('GL501', 'gl501_trailing_comma', '''\
def train(model, loader, optimizer, scheduler, scaler, out):
    for x, y in loader:
        scaler.scale(model(x, y)).backward()
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()
        optimizer.zero_grad()
    torch.save({
        'model': model.state_dict(),
        'optimizer': optimizer.state_dict(),  # moments
    }, out)
''', '''\
def train(model, loader, optimizer, scheduler, scaler, out):
    for x, y in loader:
        scaler.scale(model(x, y)).backward()
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()
        optimizer.zero_grad()
    torch.save({
        'model': model.state_dict(),
        'optimizer': optimizer.state_dict(), 'scaler': scaler.state_dict(), 'scheduler': scheduler.state_dict(),  # moments
    }, out)
'''),
    Case('GL206', 'gl206_named_count', '''\
def step(model, batch):
    valid = batch.labels != -100
    n_valid = valid.sum()
    loss = (model(batch) * valid).sum() / n_valid  # per valid token
    loss.backward()
''', '''\
def step(model, batch):
    valid = batch.labels != -100
    n_valid = valid.sum()
    loss = (model(batch) * valid).sum() / n_valid.clamp(min=1)  # per valid token
    loss.backward()
'''),
    Case('GL306', 'gl306_comment_kept', '''\
def train(model, loader, optimizer, epochs):
    for epoch in range(epochs):
        # fp16 loss scaling
        scaler = torch.cuda.amp.GradScaler(growth_interval=500)
        for x, y in loader:
            scaler.scale(model(x, y)).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
''', '''\
def train(model, loader, optimizer, epochs):
    # fp16 loss scaling
    scaler = torch.cuda.amp.GradScaler(growth_interval=500)
    for epoch in range(epochs):
        for x, y in loader:
            scaler.scale(model(x, y)).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
'''),
    Case('GL307', 'gl307_nested', '''\
def train(model, get_batch, optimizer, scaler, updates, accum):
    for update in range(updates):
        for _ in range(accum):
            scaler.scale(model(*get_batch()) / accum).backward()
            scaler.update()  # adapt the scale
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        optimizer.zero_grad()
''', '''\
def train(model, get_batch, optimizer, scaler, updates, accum):
    for update in range(updates):
        for _ in range(accum):
            scaler.scale(model(*get_batch()) / accum).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()  # adapt the scale
        optimizer.zero_grad()
'''),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_fix_produces_the_canonical_text(case: Case) -> None:
    [diagnostic] = lint_source(case.before, "train.py", only(case.code))
    assert diagnostic.fix is not None and diagnostic.fix.applicability is CATALOGUE[case.code].fix
    result = fix_source(case.before, "train.py", only(case.code), unsafe=True)
    assert result.text == case.after
    assert [d.code for d in result.fixed] == [case.code]
    assert result.remaining == [] and result.reverted == []


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_fixed_text_is_a_fixpoint(case: Case) -> None:
    again = fix_source(case.after, "train.py", only(case.code), unsafe=True)
    assert (again.text, again.fixed) == (case.after, [])


@pytest.mark.parametrize("case", [c for c in CASES if CATALOGUE[c.code].fix is Applicability.UNSAFE],
                         ids=lambda c: c.name)
def test_unsafe_fixes_need_the_flag(case: Case) -> None:
    result = fix_source(case.before, "train.py", only(case.code), unsafe=False)
    assert (result.text, result.fixed, [d.code for d in result.remaining]) == (case.before, [], [case.code])


def test_every_rule_with_a_catalogued_fix_has_a_case() -> None:
    assert {case.code for case in CASES} == {code for code, info in CATALOGUE.items() if info.fix is not None}


def test_fix_json_carries_applicability_message_and_edits() -> None:
    [diagnostic] = lint_source(CASES[0].before, "train.py", only("GL101"))
    assert diagnostic.to_dict()["fix"] == {
        "applicability": "safe",
        "message": "Move `torch.nn.utils.clip_grad_norm_()` to the update boundary (unscale and clip once, "
                   "just before the step)",
        "edits": [
            {"line": 5, "column": 1, "end_line": 7, "end_column": 1, "content": ""},
            {"line": 8, "column": 1, "end_line": 8, "end_column": 1,
             "content": "            scaler.unscale_(optimizer)\n            # keep the norm bounded\n"
                        "            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # per micro-batch\n"},
        ],
    }


NO_FIX = {
    # the gate's body is on the `if` line: there is no block to move the step into
    "one_line_gate": ("GL102", '''\
def train(model, loader, optimizer, accum):
    for i, (x, y) in enumerate(loader):
        (model(x, y) / accum).backward()
        optimizer.step()
        if (i + 1) % accum == 0: optimizer.zero_grad()
'''),
    # AMP optional: whether a scaler exists to unscale (and which optimizer) is a guess
    "scaler_or_not": ("GL101", '''\
def train(model, loader, optimizer, scaler, accum):
    for i, (x, y) in enumerate(loader):
        (model(x, y) / accum).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if (i + 1) % accum == 0:
            if scaler is not None:
                scaler.step(optimizer)
                scaler.update()
            else:
                optimizer.step()
            optimizer.zero_grad()
'''),
    # the clip's result is read in the micro-batch body: moving it would read it before it exists
    "name_read_in_body": ("GL101", '''\
def train(model, loader, optimizer, accum):
    for i, (x, y) in enumerate(loader):
        (model(x, y) / accum).backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        norms.append(norm)
        if (i + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
'''),
    # the clip shares its line with the backward call
    "shared_line": ("GL101", '''\
def train(model, loader, optimizer, accum):
    for i, (x, y) in enumerate(loader):
        (model(x, y) / accum).backward(); torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if (i + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
'''),
    # GL101 under a scaler: unscaling in the micro-batch body would raise; GL101's fix unscales
    "scaler_reads_the_epoch": ("GL306", '''\
def train(model, loader, optimizer, epochs):
    for epoch in range(epochs):
        scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** (16 - epoch))
        for x, y in loader:
            scaler.scale(model(x, y)).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
'''),
    "clip_per_micro_batch_under_scaler": ("GL303", '''\
def train(model, loader, optimizer, scaler, accum):
    for i, (x, y) in enumerate(loader):
        scaler.scale(model(x, y) / accum).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if (i + 1) % accum == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
'''),
}


@pytest.mark.parametrize("name", list(NO_FIX))
def test_no_fix_rather_than_a_guess(name: str) -> None:
    code, source = NO_FIX[name]
    [diagnostic] = lint_source(source, "train.py", only(code))
    assert diagnostic.code == code and diagnostic.fix is None


def _python_block(markdown: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", markdown, re.DOTALL)
    assert len(blocks) == 1
    return blocks[0]


FIXABLE = [code for code, info in CATALOGUE.items() if info.fix is not None]


@pytest.mark.parametrize("code", FIXABLE)
def test_rule_doc_fixed_example_is_the_fix_of_its_example(code: str) -> None:
    doc = load_doc(code)
    assert doc is not None and doc.section("Fixed"), f"rules/{code}.md has no '## Fixed' section"
    example = _python_block(doc.section("Example"))
    result = fix_source(example, f"{code}.py", only(code), unsafe=True)
    assert [d.code for d in result.fixed] == [code]
    assert _python_block(doc.section("Fixed")) == result.text


def test_a_scheduler_step_the_boundary_already_has_is_removed_not_moved() -> None:
    source = '''\
def train(model, loader, optimizer, scheduler, accum_steps):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum_steps
        loss.backward()
        scheduler.step()
        if (step + 1) % accum_steps == 0 or step + 1 == len(loader):
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
'''
    result = fix_source(source, "train.py", only("GL104"), unsafe=True)
    assert [d.code for d in result.fixed] == ["GL104"]
    assert result.fixed[0].fix.message == "Remove `scheduler.step()`: the update boundary already advances it"
    assert result.text == source.replace("        scheduler.step()\n        if", "        if")
