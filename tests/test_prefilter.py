"""The text tests of gradlint.prefilter: their verdicts, and that each text is judged once."""

from __future__ import annotations

from pathlib import Path

import pytest

import gradlint.engine as engine_module
import gradlint.prefilter as prefilter
from gradlint.engine import LoopScan, lint_source, training_loops
from gradlint.prefilter import EVERYTHING, Verdict, judge, worth_reading
from gradlint.catalogue import CATALOGUE
from gradlint.runner import run
from gradlint.settings import Settings, default_settings
from samples import BAD

EVERY_RULE = Settings(select=frozenset(CATALOGUE))


@pytest.mark.parametrize(("text", "verdict"), [
    ("x = 1\n", Verdict(training=False, loop=False, suppressions=False)),
    ("x = 1  # noqa: GL101\n", Verdict(training=False, loop=False, suppressions=True)),
    ("scheduler.step()\n", Verdict(training=True, loop=False, suppressions=False)),
    ("loss.backward()\nopt.step()  # gradlint: ignore\n", Verdict(training=True, loop=True, suppressions=True)),
    ("loss_scaler(loss, opt)\n", Verdict(training=True, loop=True, suppressions=False)),
    ("opt.step()\nsched.step()\n", Verdict(training=True, loop=True, suppressions=False)),  # an update scope
    ("opt.zero_grad()\nopt.step()\n", Verdict(training=True, loop=True, suppressions=False)),
])
def test_verdicts(text: str, verdict: Verdict) -> None:
    assert judge(text) == verdict


@pytest.mark.parametrize(("text", "training"), [
    ("# kept for backward compatibility\n", False),
    ('"""A backward-compatible alias."""\n', False),
    ("loss.backward()\n", True),
    ("scaler.scale(loss).backward ()\n", True),
    ("self.manual_backward(loss)\n", True),
    ("def backward(ctx, grad):\n    return grad\n", True),
    ("from torch.autograd import (\n    grad,\n    backward\n)\n", True),
    ("from torch.autograd import backward as bw\n", True),
    ("bwd = torch.autograd.backward\n", True),
])
def test_backward_counts_only_as_code(text: str, training: bool) -> None:
    """Prose that says "backward" makes no file worth analysing; every way code can spell the
    call does, and the bytes test gives the text test's answer."""
    assert judge(text).training is training
    assert worth_reading(text.encode(), default_settings()) is training


UPDATE_ONLY = """\
class Wrapper:
    def step(self):
        self._optim.step()
        clip_grad_norm_(self._params, 1.0)
"""


def test_a_module_without_backward_or_import_is_read_for_update_scopes() -> None:
    """A text with no backward and no import can still hold an update scope: it is analysed, on
    the fast path as in the full analysis."""
    assert judge(UPDATE_ONLY).loop
    for full in (False, True):
        found = lint_source(UPDATE_ONLY, "wrapper.py", EVERY_RULE, full=full)
        assert [(d.line, d.code) for d in found] == [(4, "GL301")]


def test_a_suppression_alone_is_worth_it_only_with_gl900() -> None:
    verdict = judge("x = 1  # noqa: GL101\n")
    assert verdict.worth(EVERY_RULE) and not verdict.worth(default_settings())
    assert worth_reading(b"x = 1  # noqa: GL101\n", EVERY_RULE)
    assert not worth_reading(b"x = 1  # noqa: GL101\n", default_settings())
    assert not judge("x = 1\n").worth(EVERY_RULE) and EVERYTHING.worth(default_settings())


def test_lint_source_follows_the_verdict_it_is_given() -> None:
    assert [d.code for d in lint_source(BAD, "train.py", default_settings())] == ["GL101", "GL104"]
    nothing = Verdict(training=False, loop=False, suppressions=False)
    assert lint_source(BAD, "train.py", default_settings(), verdict=nothing) == []
    syntax_only = Verdict(training=True, loop=False, suppressions=False)
    assert lint_source(BAD, "train.py", default_settings(), verdict=syntax_only) == []
    assert [d.code for d in lint_source("def (:\n", "x.py", default_settings(), verdict=syntax_only)] == ["GL000"]


def _count_judgements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    judged: list[str] = []
    real = prefilter.judge

    def counting(text: str) -> Verdict:
        judged.append(text)
        return real(text)

    monkeypatch.setattr(engine_module, "judge", counting)
    monkeypatch.setattr(prefilter, "judge", counting)
    return judged


def test_the_runner_judges_each_text_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "train.py").write_text(BAD)
    (tmp_path / "plain.py").write_text("x = 1\n")
    judged = _count_judgements(monkeypatch)
    result = run(sorted(tmp_path.iterdir()), default_settings())
    assert [d.code for d in result.diagnostics] == ["GL101", "GL104"]
    assert judged == [BAD]  # plain.py fails the test on its bytes: never decoded, never judged


def test_training_loops_is_a_result_not_a_union() -> None:
    scan = training_loops(BAD, "train.py", default_settings())
    assert isinstance(scan, LoopScan) and scan.error is None and len(scan.loops) == 1
    broken = training_loops("for x in y:\n    loss.backward(\n", "train.py", default_settings())
    assert broken.loops == [] and broken.error is not None
    assert (broken.error.code, broken.error.line) == ("GL000", 2)


def test_the_language_server_judges_each_text_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gradlint.lsp.server as server_module

    judged = _count_judgements(monkeypatch)
    monkeypatch.setattr(server_module, "judge", prefilter.judge)  # the counting one
    linted: list[str] = []
    real = server_module.lint_source

    def lint_source(source: str, path: str, settings: Settings, **kwargs) -> list:
        linted.append(source)
        return real(source, path, settings, **kwargs)

    monkeypatch.setattr(server_module, "lint_source", lint_source)
    server = server_module.GradlintServer()
    uri = (tmp_path / "train.py").as_uri()
    outcome = server._lint_job(uri, 1, BAD)
    assert [d.code for d in outcome.diagnostics] == ["GL101", "GL104"] and judged == [BAD] and linted == [BAD]
    assert server._lint_job(uri, 2, "x = 1\n").diagnostics == []
    assert judged == [BAD, "x = 1\n"] and linted == [BAD]  # a text that fails the test is not analysed
    server.lint_executor.shutdown()
