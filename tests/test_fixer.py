"""Applying fixes: fixpoint, idempotence, newlines, BOM and encodings, revert, atomic writes,
the command line, and properties over every fixture."""

from __future__ import annotations

import ast
import codecs
import difflib
import json
import os
import shutil
import stat
from collections import Counter
from pathlib import Path

import pytest
from conftest import FIXTURES
from fixture_results import Fixture, diagnostics, fixed, fixtures
from samples import gradlint

import gradlint.writer as writer
from gradlint.diagnostics import Applicability, Edit, Fix, Span
from gradlint.engine import lint_source
from gradlint.catalogue import CATALOGUE
from gradlint.fixer import apply_fixes, fix_source
from gradlint.rules import RULES, Finding
from gradlint.runner import Mode, run
from gradlint.settings import Settings
from gradlint.writer import FileFix

# GL102 (step per micro-batch) and GL101 (clip per micro-batch): the clip can only move once
# the step is at the boundary, so the fix takes two passes.
TWO_PASSES = '''\
def train(model, loader, optimizer, accum):
    for i, (x, y) in enumerate(loader):
        loss = model(x, y) / accum
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # clip
        optimizer.step()
        if (i + 1) % accum == 0:
            optimizer.zero_grad()
'''
FIXED = '''\
def train(model, loader, optimizer, accum):
    for i, (x, y) in enumerate(loader):
        loss = model(x, y) / accum
        loss.backward()
        if (i + 1) % accum == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # clip
            optimizer.step()
            optimizer.zero_grad()
'''
GL1 = Settings(select=frozenset({"GL101", "GL102"}))


def fix_file(path: Path, settings: Settings) -> FileFix:
    """Fix one file as ``gradlint check --fix`` does (no cache, no pool)."""
    return run([path], settings, mode=Mode.FIX).fixes[0]


def test_fixes_are_applied_to_a_fixpoint() -> None:
    result = fix_source(TWO_PASSES, "train.py", GL1)
    assert result.text == FIXED
    assert [d.code for d in result.fixed] == ["GL102", "GL101"]
    assert (result.remaining, result.reverted) == ([], [])


def test_a_second_run_changes_nothing() -> None:
    again = fix_source(FIXED, "train.py", GL1)
    assert (again.text, again.fixed) == (FIXED, [])


def test_crlf_line_endings_are_kept() -> None:
    result = fix_source(TWO_PASSES.replace("\n", "\r\n"), "train.py", GL1)
    assert result.text == FIXED.replace("\n", "\r\n")


def test_tab_indentation_is_kept() -> None:
    result = fix_source(TWO_PASSES.replace("    ", "\t"), "train.py", GL1)
    assert result.text == FIXED.replace("    ", "\t")


def test_a_last_line_without_newline_stays_so() -> None:
    result = fix_source(TWO_PASSES.rstrip("\n"), "train.py", GL1)
    assert result.text == FIXED.rstrip("\n")
    assert fix_source(result.text, "train.py", GL1).fixed == []
    # a statement moved after the last line
    source = "for x, y in loader:\n    model(x, y).backward()\n    optimizer.zero_grad()\n    optimizer.step()"
    fixed = fix_source(source, "train.py", Settings(select=frozenset({"GL305"})), unsafe=True)
    assert fixed.text == "for x, y in loader:\n    model(x, y).backward()\n    optimizer.step()\n    optimizer.zero_grad()"


def test_no_fix_where_a_lone_carriage_return_ends_a_line() -> None:
    source = TWO_PASSES.replace("loss.backward()\n", "loss.backward()\r")
    assert [d.code for d in lint_source(source, "train.py", GL1)] == ["GL101", "GL102"]
    result = fix_source(source, "train.py", GL1)
    assert (result.text, result.fixed, result.reverted) == (source, [], [])


def test_inserted_text_takes_the_file_newline() -> None:
    fix = Fix(Applicability.SAFE, "insert", (Edit(Span(2, 1, 2, 1), "x = 1\ny = 2\n"),))
    assert apply_fixes("a\r\nb\r\n", [fix]) == "a\r\nx = 1\r\ny = 2\r\nb\r\n"


def test_bom_and_crlf_survive_a_written_fix(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_bytes(b"\xef\xbb\xbf" + TWO_PASSES.replace("\n", "\r\n").encode())
    outcome = fix_file(path, GL1)
    assert outcome.changed and outcome.error is None
    assert path.read_bytes() == b"\xef\xbb\xbf" + FIXED.replace("\n", "\r\n").encode()


def test_a_coding_cookie_is_honoured(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    source = "# -*- coding: latin-1 -*-\n# Schrödinger's gradient\n" + TWO_PASSES
    path.write_bytes(source.encode("latin-1"))
    fix_file(path, GL1)
    assert path.read_bytes() == ("# -*- coding: latin-1 -*-\n# Schrödinger's gradient\n" + FIXED).encode("latin-1")


class _BrokenFix:
    """A GL101 stand-in whose fix deletes a colon: the result cannot parse."""

    def __init__(self, rule) -> None:
        self.info = rule.info
        self.rule = rule

    def check(self, loop):
        for finding in self.rule.check(loop):
            span = Span(finding.span.line, 1, finding.span.line, 1)
            yield Finding(finding.span, finding.message,
                          Fix(Applicability.SAFE, "break it", (Edit(span, "if True\n"),)))


def test_a_fix_that_breaks_the_syntax_is_reverted_and_reported(monkeypatch) -> None:
    monkeypatch.setitem(RULES, "GL101", _BrokenFix(RULES["GL101"]))
    result = fix_source(TWO_PASSES, "train.py", GL1)
    # the good GL102 fix stays applied; the broken GL101 fix is taken back
    assert [d.code for d in result.fixed] == ["GL102"]
    assert [(r.diagnostic.code, r.error) for r in result.reverted] == [("GL101", "expected ':' (line 5)")]
    assert ast.parse(result.text) and "if True" not in result.text
    assert [d.code for d in result.remaining] == ["GL101"]


def test_cli_reports_a_reverted_fix(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(RULES, "GL101", _BrokenFix(RULES["GL101"]))
    Path("train.py").write_text(TWO_PASSES)
    result = gradlint("check", "--fix", "--format", "concise", "--select", "GL101,GL102", "train.py")
    assert result.stderr == ("gradlint: warning: train.py:5:9: GL101 fix reverted: the result does not parse "
                             "(expected ':' (line 5))\n")
    assert result.stdout.splitlines()[-2:] == ["Found 2 problems (1 fixed, 1 remaining).",
                                               "[*] 1 fixable with the --fix option."]


def test_a_failed_rename_leaves_the_file_intact(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "train.py"
    path.write_text(TWO_PASSES)

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer.os, "replace", refuse)
    outcome = fix_file(path, GL1)
    assert outcome.error == "not fixed: No space left on device"
    assert path.read_text() == TWO_PASSES
    assert [p.name for p in tmp_path.iterdir()] == ["train.py"]  # no temporary file left behind
    assert [d.code for d in outcome.remaining] == ["GL101", "GL102"] and outcome.fixed == []


def test_a_read_only_file_is_reported_and_not_changed(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(TWO_PASSES)
    path.chmod(0o444)
    outcome = fix_file(path, GL1)
    assert outcome.error == "not fixed: file is read-only"
    assert path.read_text() == TWO_PASSES and not outcome.changed


def test_permissions_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(TWO_PASSES)
    path.chmod(0o640)
    fix_file(path, GL1)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert path.read_text() == FIXED


def test_fixing_writes_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real.py"
    real.write_text(TWO_PASSES)
    link = tmp_path / "train.py"
    link.symlink_to(real)
    fix_file(link, GL1)
    assert link.is_symlink() and real.read_text() == FIXED


def test_a_notebook_cell_is_fixed_in_place(tmp_path: Path) -> None:
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": TWO_PASSES.splitlines(keepends=True)}
    notes = {"cell_type": "markdown", "metadata": {}, "source": ["# Training\n"]}
    document = {"cells": [notes, cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "train.ipynb"
    path.write_bytes(codecs.BOM_UTF8 + json.dumps(document, indent=1).encode())
    outcome = fix_file(path, GL1)
    assert outcome.error is None and sorted(d.code for d in outcome.fixed) == ["GL101", "GL102"]
    data = path.read_bytes()
    assert data.startswith(codecs.BOM_UTF8)
    written = json.loads(data[len(codecs.BOM_UTF8):])
    assert written["cells"][0] == notes and "".join(written["cells"][1]["source"]) == FIXED


# -- the command line ------------------------------------------------------------------------

def test_cli_fix_writes_and_summarizes(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("train.py").write_text(TWO_PASSES)
    result = gradlint("check", "--fix", "--format", "concise", "--select", "GL101,GL102", "train.py")
    assert (result.exit_code, result.stdout) == (0, "Found 2 problems (2 fixed, 0 remaining).\n")
    assert Path("train.py").read_text() == FIXED
    again = gradlint("check", "--fix", "--format", "concise", "--select", "GL101,GL102", "train.py")
    assert (again.exit_code, again.stdout) == (0, "All checks passed! (1 file checked)\n")
    assert Path("train.py").read_text() == FIXED


def test_cli_marks_fixable_findings_and_hints_at_the_flags(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("train.py").write_text(TWO_PASSES.replace("loss = model(x, y) / accum", "loss = model(x, y)"))
    result = gradlint("check", "--format", "concise", "--select", "GL102,GL201", "train.py")
    assert [line.split(" ")[1:3] for line in result.stdout.splitlines()[:2]] == [["GL201", "this"],
                                                                                   ["GL102", "[*]"]]
    assert result.stdout.splitlines()[-1] == (
        "[*] 1 fixable with the --fix option (1 hidden fix can be enabled with the --unsafe-fixes option).")
    unsafe = gradlint("check", "--format", "concise", "--unsafe-fixes", "--select", "GL102,GL201", "train.py")
    assert unsafe.stdout.splitlines()[0].split(" ")[1:3] == ["GL201", "[*]"]
    assert unsafe.stdout.splitlines()[-1] == "[*] 2 fixable with the --fix option."


def test_cli_unsafe_fixes_apply_only_with_the_flag(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    source = TWO_PASSES.replace("loss = model(x, y) / accum", "loss = model(x, y)")
    Path("train.py").write_text(source)
    safe = gradlint("check", "--fix", "--format", "concise", "--select", "GL201", "train.py")
    assert safe.exit_code == 1 and Path("train.py").read_text() == source
    unsafe = gradlint("check", "--fix", "--unsafe-fixes", "--format", "concise", "--select", "GL201", "train.py")
    assert (unsafe.exit_code, unsafe.stdout) == (0, "Found 1 problem (1 fixed, 0 remaining).\n")
    assert "        (loss / accum).backward()\n" in Path("train.py").read_text()


def test_cli_diff_prints_and_writes_nothing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("train.py").write_text(TWO_PASSES)
    result = gradlint("check", "--diff", "--select", "GL101,GL102", "train.py")
    assert result.exit_code == 1
    assert result.stdout == '''\
--- train.py
+++ train.py
@@ -2,7 +2,7 @@
     for i, (x, y) in enumerate(loader):
         loss = model(x, y) / accum
         loss.backward()
-        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # clip
-        optimizer.step()
         if (i + 1) % accum == 0:
+            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # clip
+            optimizer.step()
             optimizer.zero_grad()

'''
    assert result.stderr == "Would fix 2 problems:\n- train.py:\n    1 \u00d7 GL101 (clip-per-micro-batch)\n" \
                            "    1 \u00d7 GL102 (step-per-micro-batch)\n"
    assert Path("train.py").read_text() == TWO_PASSES
    Path("train.py").write_text(FIXED)
    clean = gradlint("check", "--diff", "--select", "GL101,GL102", "train.py")
    assert (clean.exit_code, clean.stdout, clean.stderr) == (0, "", "No problems would be fixed.\n")


def test_cli_show_fixes(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("train.py").write_text(TWO_PASSES)
    result = gradlint("check", "--fix", "--show-fixes", "--format", "concise", "--select", "GL101,GL102", "train.py")
    assert result.stdout == ("Fixed 2 problems:\n- train.py:\n    1 \u00d7 GL101 (clip-per-micro-batch)\n"
                             "    1 \u00d7 GL102 (step-per-micro-batch)\n"
                             "Found 2 problems (2 fixed, 0 remaining).\n")


def test_cli_read_only_file(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("train.py").write_text(TWO_PASSES)
    Path("train.py").chmod(0o444)
    result = gradlint("check", "--fix", "--format", "concise", "--select", "GL101,GL102", "train.py")
    assert result.exit_code == 1
    assert result.stderr == "gradlint: warning: train.py: not fixed: file is read-only\n"
    assert result.stdout.splitlines()[-2] == "Found 2 problems in 1 file."
    assert Path("train.py").read_text() == TWO_PASSES


def test_cli_diff_does_not_read_stdin() -> None:
    result = gradlint("check", "--diff", "-", input=TWO_PASSES)
    assert (result.exit_code, result.stderr) == (
        2, "gradlint: error: --diff does not read stdin; use --fix to print the fixed text\n")


# -- properties over every fixture -----------------------------------------------------------


def _callees(text: str) -> Counter:
    """How often each function or method name is called."""
    names: Counter = Counter()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Call):
            func = node.func
            names[func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "<expr>")] += 1
    return names


@pytest.mark.parametrize("fixture", fixtures(), ids=lambda f: f.id)
def test_fix_all_properties(fixture: Fixture) -> None:
    """With every fix applied (unsafe included): the code parses, the fixed diagnostics are
    gone, nothing new is reported, no call is lost, and fixing again changes nothing.

    One documented exception: GL201's fix divides by the fixed N where the window size
    cannot be read from the loop; GL202 then asks for the final window's actual size."""
    source, name = fixture.text, fixture.name
    before = diagnostics(fixture)
    result = fixed(source, name)
    ast.parse(result.text)
    assert result.reverted == []
    left = Counter(d.code for d in before) - Counter(d.code for d in result.fixed)
    new = Counter(d.code for d in result.remaining) - left
    fixed_gl201 = {d.line for d in result.fixed if d.code == "GL201"}
    assert all(d.code == "GL202" and d.line in fixed_gl201 for d in result.remaining if new[d.code])
    removed = {"zero_grad"} if any(d.fix.message.startswith("Remove") for d in result.fixed) else set()
    lost = _callees(source) - _callees(result.text)
    assert set(lost) <= removed
    again = fixed(result.text, name)
    assert (again.text, again.fixed) == (result.text, [])


@pytest.mark.parametrize("fixture", [f for f in fixtures() if any(d.fix for d in diagnostics(f))], ids=lambda f: f.id)
def test_safe_fixes_only(fixture: Fixture) -> None:
    """Without ``--unsafe-fixes``: only safe fixes are applied (a fixture whose fixes are all
    unsafe is left as it is), the code parses, nothing is reverted, no finding with a safe
    fix is left, and fixing again changes nothing. (A fixture without any fix has nothing to
    apply either way: ``test_fix_all_properties`` runs the fixer on it.)"""
    result = fixed(fixture.text, fixture.name, unsafe=False)
    ast.parse(result.text)
    assert result.reverted == []
    assert all(d.fix is not None and d.fix.applicability is Applicability.SAFE for d in result.fixed)
    assert (result.text == fixture.text) == (result.fixed == [])
    assert [d for d in result.remaining if d.fix is not None and d.fix.applicability is Applicability.SAFE] == []
    again = fixed(result.text, fixture.name, unsafe=False)
    assert (again.text, again.fixed) == (result.text, [])


# Reported without a fix on purpose: the clip lives in a helper the loop calls, and moving a
# call across functions is not a rewrite gradlint can prove correct; an unprepared scheduler
# inside accelerator.accumulate() needs `accelerator.prepare`, not a move; a guard whose forward
# is not the statement just before it, and nanoGPT's flag, have no unambiguous rewrite.
NO_FIX_BY_DESIGN = [
    "fixtures/rules/gl101/clip_before_last_micro_batch_gate.py:11 GL101",
    "fixtures/rules/gl101/clip_helper_every_micro_batch.py:25 GL101",  # the clip is in a helper other callers may share
    "fixtures/rules/gl101/helper_train_step.py:17 GL101",
    "fixtures/rules/gl101/torch_path_beside_deepspeed.py:23 GL101",  # in the else branch of a path test: moving it would leave the branch
    "fixtures/rules/gl102/repeat_loop_inside_window.py:18 GL101",  # a replay's own update: the boundary has one already
    "fixtures/rules/gl102/repeat_loop_inside_window.py:19 GL102",
    "fixtures/rules/gl102/repeat_loop_inside_window.py:21 GL103",
    "fixtures/rules/gl102/step_beside_gate_same_path.py:8 GL102",  # a step under its own condition
    "fixtures/rules/gl102/step_through_method_attribute.py:32 GL102",  # a window whose backward is in a helper
    "fixtures/rules/gl103/nonfinite_zero_without_skip.py:10 GL103",  # a guarded zero is never removed
    "fixtures/rules/gl103/partial_backward_helper.py:34 GL103",  # a window whose backward is in a helper
    "fixtures/rules/gl103/zero_before_branch_guards.py:8 GL103",
    "fixtures/rules/gl103/zero_when_accumulating.py:8 GL103",  # under a test of its own
    "fixtures/rules/gl104/accelerate_script_unprepared.py:20 GL104",
    "fixtures/rules/gl104/accelerate_trainer_unprepared.py:21 GL104",
    "fixtures/rules/gl104/accelerate_unlinked_script.py:18 GL104",  # where the sync test goes is the author's choice
    "fixtures/rules/gl104/accelerate_unlinked_trainer.py:20 GL104",
    "fixtures/rules/gl104/accelerate_unlinked_trainer.py:22 GL104",
    "fixtures/rules/gl104/accelerate_unprepared_scheduler.py:21 GL104",
    "fixtures/rules/gl106/trainer_built_in_init.py:19 GL106",  # built in __init__: no edit across methods
    "fixtures/rules/gl107/accelerate_steplr.py:19 GL107",  # not moved out of accelerator.accumulate()
    "fixtures/rules/gl301/clip_helper_two_branches_after_step.py:14 GL301",  # the clip is in a helper
    "fixtures/rules/gl301/dict_of_optimizers_clip_after_step.py:25 GL301",  # the step is in a helper
    "fixtures/rules/gl301/optional_second_optimizer.py:24 GL301",  # the clip is in a helper other callers may share
    "fixtures/rules/gl302/dict_of_schedulers_before_step.py:42 GL302",  # the schedulers are stepped in a helper
    "fixtures/rules/gl302/lightning_schedulers_helper_before_step.py:16 GL302",  # the schedulers are stepped in a helper
    "fixtures/rules/gl302/torch_schedule_copy.py:29 GL302",  # a closure step: no move offered yet
    "fixtures/rules/gl302/update_helper_scheduler_first.py:13 GL302",  # a closure step: no move offered yet
    "fixtures/rules/gl303/backward_helper_returns_loss.py:26 GL303",  # a window whose backward is in a helper: the move is not offered yet
    "fixtures/rules/gl303/partial_scaler_step.py:12 GL303",  # the step's optimizer is bound in the partial
    "fixtures/rules/gl303/update_function_unscale_after_clip.py:13 GL303",  # the unscale_ is guarded apart from the clip
    "fixtures/rules/gl305/helper_optimizer_parameter.py:15 GL305",  # the step is in a helper two optimizers share
    "fixtures/rules/gl305/local_closure_zero_before_step.py:15 GL305",  # the backward is in the local closure
    "fixtures/rules/gl305/zero_before_handed_step.py:29 GL305",  # the step is in the method handed to a helper
    "fixtures/rules/gl306/scaler_reads_epoch.py:8 GL306",  # the constructor reads the epoch
    "fixtures/rules/gl306/train_one_epoch_scaler.py:8 GL306",  # no "before the loop" in a per-epoch function
    "fixtures/rules/gl307/plain_loop_no_update.py:13 GL307",  # a missing update: where it goes is a guess
    "fixtures/rules/gl307/step_without_update.py:16 GL307",
    "fixtures/rules/gl404/backward_helper_receives_loss.py:22 GL404",  # the forward is in the caller
    "fixtures/rules/gl404/backward_helper_receives_loss.py:39 GL404",
    "fixtures/rules/gl404/nanogpt_flag_after_forward.py:17 GL404",
    "fixtures/rules/gl404/trainer_no_sync_backward_only.py:22 GL404",
    "fixtures/rules/gl407/conditional_sampler.py:18 GL407",  # a plain sampler on the other path has no epoch
    "fixtures/rules/gl407/conditional_sampler.py:28 GL407",
    "fixtures/rules/gl407/loader_from_helper.py:17 GL407",  # the sampler has no name the loop can read
    "fixtures/rules/gl407/loader_helper_distributed_when_asked.py:23 GL407",  # a plain sampler on the other path
    "fixtures/rules/gl501/entry_by_entry_no_scaler.py:31 GL501",  # no dict literal to add the entry to
    "fixtures/rules/gl501/extended_state_no_scaler.py:21 GL501",  # the dict is extended by a call: no literal to add to
    "fixtures/rules/gl501/helper_builds_dict.py:17 GL501",  # the dict is built in the helper, which is not handed the scheduler
    "fixtures/rules/gl501/load_method_without_scheduler.py:20 GL501",  # the checkpoint's key is unknown
    "fixtures/rules/gl501/optimizer_chosen_per_call_no_schedule.py:39 GL501",  # the checkpoint's key is unknown
    "fixtures/rules/gl501/resume_without_scheduler.py:18 GL501",  # the checkpoint's key is unknown
]


def _unfixed_fixable(text: str, name: str) -> list[str]:
    """``name:line code`` of what a rule with a fix still reports in the fully fixed ``text``."""
    again = fixed(text, name)  # nothing left to fix: its ``remaining`` is the lint of ``text``
    return [f"{name}:{d.line} {d.code}" for d in again.remaining if CATALOGUE[d.code].fix]


def test_every_fixable_marker_is_fixed() -> None:
    """Each fixture finding whose rule offers a fix gets one (and it is applied), except the
    findings that are reported without a fix by design."""
    unfixed = []
    for fixture in fixtures():
        fixable = {d.code for d in diagnostics(fixture) if CATALOGUE[d.code].fix}
        remaining = fixed(fixture.text, fixture.name).remaining
        unfixed += [f"{fixture.name}:{d.line} {d.code}" for d in remaining if d.code in fixable and d.code != "GL202"]
    assert unfixed == NO_FIX_BY_DESIGN


# --diff on a few files: one the fixes leave alone, the others changed (safe, unsafe, a notebook).
UNCHANGED = "idioms/amp/canonical.py"
DIFF_SAMPLE = [UNCHANGED, "rules/gl102/flat_gate.py", "rules/gl201/flat_gate.py", "rules/gl402/imagenet_amp_ema.py",
               "notebooks/accumulation.ipynb"]


def test_cli_fix_all_fixtures_matches_the_in_process_fix(tmp_path: Path, monkeypatch) -> None:
    """``--fix --unsafe-fixes`` over a copy of every fixture (notebooks too) writes exactly
    what the in-process fixer computes, leaving no finding of a fixable rule but the ones
    without a fix by design; ``--diff`` shows exactly the change ``--fix`` then writes."""
    tree = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, tree)
    monkeypatch.chdir(tree)
    files = [p for p in sorted(Path(".").rglob("*")) if p.suffix in (".py", ".ipynb")]
    before = {p: p.read_text(encoding="utf-8") for p in files}
    sample = [Path(name) for name in DIFF_SAMPLE]
    assert set(sample) <= set(files)
    shown = gradlint("check", "--diff", "--unsafe-fixes", *map(str, sample))
    assert shown.exit_code == 1
    assert {p: p.read_text(encoding="utf-8") for p in before} == before
    result = gradlint("check", "--fix", "--unsafe-fixes", "--format", "concise", ".")
    assert result.exit_code == 1  # the findings without a fix remain
    after = {p: p.read_text(encoding="utf-8") for p in files}
    for fixture in fixtures():
        assert after[fixture.path.relative_to(FIXTURES)] == fixed(fixture.text, fixture.name).text, fixture.id
    changed = [p for p in files if after[p] != before[p]]
    assert len(changed) > 50 and any(p.suffix == ".ipynb" for p in changed)
    assert "fixed" in result.stdout.splitlines()[-1]
    expected = []
    for path in sample:
        if after[path] != before[path]:
            name = path.as_posix()
            diff = "".join(difflib.unified_diff(before[path].splitlines(True), after[path].splitlines(True), name, name))
            expected.append(diff.removesuffix("\n"))
    # one block per file, a blank line after each (hunk lines are never empty)
    assert len(expected) == len(sample) - 1 and after[Path(UNCHANGED)] == before[Path(UNCHANGED)]
    assert sorted(shown.stdout.split("\n\n")) == sorted([*expected, ""])
    left = [item for f in fixtures() for item in _unfixed_fixable(after[f.path.relative_to(FIXTURES)], f.name)]
    assert left == NO_FIX_BY_DESIGN
