"""The fast path finds exactly what the full analysis finds.

The fast path skips work: files without training words (the text filter), files that
cannot form a training loop (no walk, no libcst), units without a step and a backward call
(no libcst). ``full=True`` turns every shortcut off and parses every function and top-level
statement with libcst. Both must report the same diagnostics, fixes included, on every
fixture and on generated training code; the only difference allowed is the spec's: a file
that fails the text filter is never reported as a syntax error (GL000).
"""

from __future__ import annotations

import ast

import pytest
from fixture_results import EVERY_RULE, Fixture, every_rule, fixtures
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

import gradlint.screen as screen_module
from gradlint.catalogue import SYNTAX_ERROR
from gradlint.engine import judge_syntax, lint_bytes, lint_source
from gradlint.prefilter import could_form_loop, might_hold_training_loop


def _dicts(diagnostics: list) -> list[dict]:
    return [d.to_dict() for d in diagnostics]


def assert_same_as_full(source: str, path: str = "example.py") -> None:
    """The fast path's diagnostics equal the full analysis's, fixes included."""
    full = lint_source(source, path, EVERY_RULE, full=True)
    if not might_hold_training_loop(source):
        full = [d for d in full if d.code != SYNTAX_ERROR.code]
    assert _dicts(lint_source(source, path, EVERY_RULE)) == _dicts(full)


def test_there_are_fixtures_with_findings() -> None:
    found = [f for f in fixtures() if every_rule(f.data, f.name)]
    assert len(fixtures()) > 50 and len(found) > 30


@pytest.mark.parametrize("fixture", fixtures(), ids=lambda f: f.id)
def test_fixture(fixture: Fixture) -> None:
    full = lint_bytes(fixture.data, fixture.name, EVERY_RULE, full=True)
    if not might_hold_training_loop(fixture.data.decode("latin-1")):
        full = [d for d in full if d.code != SYNTAX_ERROR.code]
    assert _dicts(every_rule(fixture.data, fixture.name)) == _dicts(full)


PREAMBLE = """\
import torch
from torch.autograd import backward as bw
from accelerate import Accelerator

accelerator = Accelerator(gradient_accumulation_steps=4)
optimizer = torch.optim.AdamW(model.parameters())
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
scaler = torch.cuda.amp.GradScaler()
"""

SHORTCUT_CASES = {
    "alias backward in a function": PREAMBLE + """
def train(loader):
    for i, batch in enumerate(loader):
        loss = model(batch) / 4
        bw(loss)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if (i + 1) % 4 == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
    "backward imported in compatibility characters": """\
import torch
from torch.autograd import \uff42\uff41\uff43\uff4b\uff57\uff41\uff52\uff44 as bw
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for i, batch in enumerate(loader):
    bw(model(batch))
    optimizer.step()
    if (i + 1) % 4 == 0:
        optimizer.zero_grad()
""",
    "training through a helper": PREAMBLE + """
def train_step(batch):
    loss = model(batch)
    loss.backward()

def fit(loader):
    for i, batch in enumerate(loader):
        train_step(batch)
        scheduler.step()
        if (i + 1) % 4 == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
    "a driver that trains only through helpers (one steps, one runs backward)": """
def sync_backward(accelerator, loss):
    accelerator.backward(loss)


def train_epoch(opt, sched, loader):
    for iteration, batch in enumerate(loader):
        opt.step()
        if (iteration + 1) % 2 == 0:
            sched.step()


def main(accelerator, loss, opt, sched, loader, flags):
    if flags:
        sync_backward(accelerator, loss)
    train_epoch(opt, sched, loader)
    if flags:
        train_epoch(opt, sched, loader)
""",
    "a loop that trains through a helper whose name does not say step": PREAMBLE + """
def update(batch):
    loss = model(batch)
    loss.backward()
    optimizer.step()

def train(loader):
    for i, batch in enumerate(loader):
        update(batch)
""",
    "module-level loop": PREAMBLE + """
for i, batch in enumerate(loader):
    loss = model(batch)
    loss.backward()
    optimizer.step()
    scheduler.step()
    if (i + 1) % 8 == 0:
        optimizer.zero_grad()
""",
    "step only (a scheduler)": "for epoch in range(3):\n    scheduler.step()\n",
    "backward only in text": "# call loss.backward() yourself\nx = 1\n",
    "syntax error with training words": "loss.backward(\nfor x in y:\n",
    "syntax error without training words": "def f(:\n    pass\n",
    "suppression without training words": "x = 1  # noqa: GL101\n",
    "nested function, lambda and class": PREAMBLE + """
def outer(loader):
    def inner():
        for batch in loader:
            model(batch).backward()
            optimizer.step()
            scheduler.step()
    closure = lambda: model(x).backward()
    class Trainer:
        def run(self):
            for i, b in enumerate(loader):
                self.model(b).backward()
                if i % 4 == 0:
                    self.optimizer.step()
    return inner
""",
    "closure step": PREAMBLE + """
def train(loader):
    for batch in loader:
        def closure():
            optimizer.zero_grad()
            loss = model(batch)
            loss.backward()
            return loss
        optimizer.step(closure)
""",
}


@pytest.mark.parametrize("source", SHORTCUT_CASES.values(), ids=SHORTCUT_CASES.keys())
def test_shortcut_cases(source: str) -> None:
    assert_same_as_full(source)


def test_the_shortcuts_do_skip_work() -> None:
    assert not could_form_loop("for epoch in range(3):\n    scheduler.step()\n")
    assert could_form_loop(SHORTCUT_CASES["alias backward in a function"])
    assert could_form_loop(SHORTCUT_CASES["backward imported in compatibility characters"])


# Generated training code: loops, gates and calls in random order and nesting.
CALLS = [
    "loss = model(batch)", "loss = model(batch) / accum", "loss = loss / accum", "loss.backward()",
    "scaler.scale(loss).backward()", "accelerator.backward(loss)", "bw(loss)", "self.manual_backward(loss)",
    "optimizer.step()", "scaler.step(optimizer)", "scaler.update()", "optimizer.zero_grad()",
    "model.zero_grad()", "scheduler.step()", "scaler.unscale_(optimizer)",
    "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)", "accelerator.clip_grad_norm_(model.parameters(), 1.0)",
    "global_step += 1", "log(global_step)", "HELPER(batch)", "optimizer.step(closure)", "continue",
]
HEADERS = [
    "for i, batch in enumerate(loader):", "for micro in range(accum):", "if (i + 1) % accum == 0:",
    "if i % accum == 0:", "if accelerator.sync_gradients:", "with accelerator.accumulate(model):",
    "while step < total:", "with model.no_sync():", "if (i + 1) % accum != 0:", "else:",
]


HELPER_ONLY = ["HELPER(batch)", "global_step += 1", "log(global_step)"]
"""A driver that trains only through the helper."""


def _block(draw: st.DrawFn, depth: int, indent: str, calls: list[str] = CALLS) -> list[str]:
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        if depth < 3 and draw(st.booleans()):
            header = draw(st.sampled_from(HEADERS))
            if header == "else:" and not (lines and lines[-1].lstrip().startswith("if ")):
                header = "if finished:"
            lines.append(indent + header)
            lines.extend(_block(draw, depth + 1, indent + "    ", calls))
        else:
            lines.append(indent + draw(st.sampled_from(calls)))
    return lines


@st.composite
def training_programs(draw: st.DrawFn) -> str:
    parts = [PREAMBLE]
    calls = draw(st.sampled_from([CALLS, HELPER_ONLY]))
    if calls is HELPER_ONLY or draw(st.booleans()):  # a helper; its name may or may not say "step"
        parts.append("def HELPER(batch):\n" + "\n".join(_block(draw, 1, "    ")) + "\n")
    where = draw(st.sampled_from(["function", "method", "module"]))
    body = _block(draw, 0, "    " if where == "function" else "        " if where == "method" else "", calls)
    if where == "function":
        parts.append("def train(loader, accum):\n" + "\n".join(body) + "\n")
    elif where == "method":
        parts.append("class Trainer:\n    def fit(self, loader, accum):\n" + "\n".join(body) + "\n")
    else:
        parts.append("\n".join(body) + "\n")
    return "\n".join(parts).replace("HELPER", draw(st.sampled_from(["train_step", "update", "run_backward"])))


def _compiles(source: str) -> bool:
    try:
        compile(source, "example.py", "exec")
    except SyntaxError:
        return False
    return True


@hypothesis_settings(suppress_health_check=[HealthCheck.too_slow])  # the profile sets the budget
@given(training_programs())
def test_generated_training_code(source: str) -> None:
    assert_same_as_full(source)


def test_generated_code_holds_findings() -> None:
    """The generator reaches the rules (else the property above proves little)."""
    source = PREAMBLE + "\n".join([
        "def train(loader, accum):",
        "    for i, batch in enumerate(loader):",
        "        loss = model(batch)",
        "        loss.backward()",
        "        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)",
        "        if (i + 1) % accum == 0:",
        "            optimizer.step()",
        "            optimizer.zero_grad()",
    ]) + "\n"
    assert _compiles(source)
    codes = {d.code for d in lint_source(source, "example.py", EVERY_RULE)}
    assert {"GL101", "GL201"} <= codes
    assert_same_as_full(source)


@pytest.mark.parametrize("source", [
    "x = 1\n", "return 1\n", "def f():\n    nonlocal x\n", "await x\n", "break\n", "x = (\n", "def f(:\n",
    "x = '\\d'\n", "a is 1\n", "f(**x, *y)\n", "print 'hi'\n", "x = [" * 300 + "]" * 300 + "\n",
])
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::SyntaxWarning")
def test_judge_syntax_agrees_with_the_parser(source: str) -> None:
    try:
        ast.parse(source)
    except (SyntaxError, RecursionError, MemoryError) as exc:
        with pytest.raises(type(exc)) as judged:
            judge_syntax(source)
        assert str(judged.value) == str(exc)
    else:
        judge_syntax(source)


class _ReferenceWalk(screen_module._Collector):
    """The collector with ast.NodeVisitor's own walk: every node, no shortcut."""

    visit = ast.NodeVisitor.visit
    generic_visit = ast.NodeVisitor.generic_visit


def _collected(collector: screen_module._Collector, tree: ast.Module) -> tuple:
    collector.visit(tree)
    return (collector.units, collector.other_units, collector.imports, collector.callers,
            [(ast.dump(t), ast.dump(v)) for t, v in collector.assignments], collector.facts)


@pytest.mark.parametrize("fixture", fixtures()[::4], ids=lambda f: f.id)
def test_the_screen_walk_skips_only_leaves(fixture: Fixture) -> None:
    tree = ast.parse(fixture.data)
    fast = _collected(screen_module._Collector(screen_module.ModuleFacts(), every_unit=True), tree)
    full = _collected(_ReferenceWalk(screen_module.ModuleFacts(), every_unit=True), tree)
    assert fast == full


def test_the_skipped_leaves_have_no_visit_method() -> None:
    leaves = [cls for cls in vars(ast).values()
              if isinstance(cls, type) and issubclass(cls, screen_module.LEAVES)]
    own = {name for klass in screen_module._Collector.__mro__ if klass not in (ast.NodeVisitor, object)
           for name in vars(klass)}
    legacy = {"visit_Num", "visit_Str", "visit_Bytes", "visit_NameConstant", "visit_Ellipsis"}  # via visit_Constant
    assert len(leaves) > 30
    assert not {f"visit_{cls.__name__}" for cls in leaves} & own
    assert not legacy & own
