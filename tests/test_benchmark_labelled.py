"""The labelled real-code benchmark (benchmarks/labelled.py) and the mutation harness
(benchmarks/mutate.py), on the tiny local project tests/data/labelled/toyproj-1.0/."""

from __future__ import annotations

import difflib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
TREES = ROOT / "tests" / "data" / "labelled"
TOY = TREES / "toyproj-1.0" / "toyproj"
sys.path.insert(0, str(BENCH))

from mutations import KINDS, NotApplicable, helper_lines, mutate, parses  # noqa: E402

OK_ANCHORS = {"forward": 23, "scale": 24, "backward": 25, "gate": 26, "unscale": 27, "clip": 28,
              "step": 29, "scheduler": 31, "zero_grad": 32, "no_sync": 21, "counter": 33}


def toy_labels() -> dict[str, Any]:
    """Labels of the toy project: one correct loop, one defective, one correct loop
    gradlint flags, one unsure; ``warmup`` in train_bad.py is left unlabelled."""
    return {
        "package": "toyproj", "version": "1.0", "dist": "sdist", "project": "example/toyproj",
        "files": ["toyproj/train_ok.py", "toyproj/train_bad.py"],
        "loops": [
            {"id": "ok", "path": "toyproj/train_ok.py", "function": "train", "lines": [15, 37],
             "style": ["script", "counted-gate", "amp", "ddp"], "accumulates": True,
             "n": "accum_steps", "verdict": "correct", "anchors": dict(OK_ANCHORS)},
            {"id": "bad", "path": "toyproj/train_bad.py", "function": "train", "lines": [8, 14],
             "style": ["script", "counted-gate"], "accumulates": True, "verdict": "defective",
             "defects": [{"code": "GL101", "line": 11, "why": "clip per micro-batch"},
                         {"code": "GL401", "line": 12, "why": "no last-batch branch"}]},
            {"id": "ft", "path": "toyproj/train_bad.py", "function": "finetune",
             "lines": [19, 24], "style": ["script"], "accumulates": True, "verdict": "correct"},
            {"id": "probe", "path": "toyproj/train_bad.py", "function": "probe",
             "lines": [29, 34], "style": ["script"], "accumulates": True, "verdict": "unsure"},
        ],
    }


def write_labels(tmp_path: Path, *labels: dict[str, Any]) -> Path:
    folder = tmp_path / "labels"
    folder.mkdir(exist_ok=True)
    for lab in labels:
        (folder / f"{lab['package']}.json").write_text(json.dumps(lab))
    return folder


def run(script: str, labels: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH / script), "--labels-dir", str(labels),
                           "--source-dir", str(TREES), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)


# --- validation ---------------------------------------------------------------------------

def _set(path: list[Any], value: Any) -> dict[str, Any]:
    lab = toy_labels()
    node: Any = lab
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return lab


@pytest.mark.parametrize(("label", "message"), [
    (_set(["loops", 1, "defects", 0, "code"], "GL999"),
     "toyproj.json loop bad defect 1: unknown rule code 'GL999'"),
    (_set(["loops", 0, "anchors", "step"], 40),
     "toyproj.json loop ok: anchor 'step' line 40 is outside lines 15-37"),
    (_set(["loops", 0, "verdict"], "fine"),
     "toyproj.json loop ok: verdict must be one of correct, defective, unsure, not 'fine'"),
    (_set(["loops", 2, "function"], KeyError), "toyproj.json loop ft: missing key 'function'"),
    (_set(["loops", 2, "path"], "toyproj/other.py"),
     "toyproj.json loop ft: loop path 'toyproj/other.py' is not in 'files'"),
    (_set(["loops", 3, "style"], ["scripts"]), "toyproj.json loop probe: unknown style 'scripts'"),
    (_set(["loops", 2, "defects"], [{"code": "GL201", "line": 21, "why": "x"}]),
     "toyproj.json loop ft: a loop labelled correct has defects"),
    (_set(["loops", 0, "lines"], [15, 90]),
     "toyproj.json loop ok: lines end at 90, past the end of toyproj/train_ok.py (37 lines)"),
    (_set(["files", 1], "toyproj/missing.py"),
     "toyproj.json: file 'toyproj/missing.py' is not in toyproj-1.0"),
    (_set(["colour"], "blue"), "toyproj.json: unknown key 'colour'"),
])
def test_invalid_labels_exit_2_with_one_line(tmp_path: Path, label: dict[str, Any],
                                             message: str) -> None:
    if label["files"][1] == "toyproj/missing.py":
        label["loops"] = label["loops"][:1]
    proc = run("labelled.py", write_labels(tmp_path, label))
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [message]
    assert proc.stdout == ""


def test_invalid_json_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "labels"
    folder.mkdir()
    (folder / "toyproj.json").write_text('{"package": "toyproj",\n')
    proc = run("labelled.py", folder)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "toyproj.json: invalid JSON: Expecting property name enclosed in double quotes at line 2"]


def test_every_problem_is_listed(tmp_path: Path) -> None:
    lab = _set(["loops", 0, "anchors", "gate"], 1)
    lab["loops"][1]["defects"][1]["code"] = "GL4O1"
    proc = run("labelled.py", write_labels(tmp_path, lab))
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "toyproj.json loop ok: anchor 'gate' line 1 is outside lines 15-37",
        "toyproj.json loop bad defect 2: unknown rule code 'GL4O1'",
    ]


# --- precision and recall -----------------------------------------------------------------

def test_precision_recall_and_lists(tmp_path: Path) -> None:
    proc = run("labelled.py", write_labels(tmp_path, toy_labels()))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:5] == [
        "- packages 1, projects 1, loops 4 (correct 2, defective 1, unsure 1)",
        "- styles: amp 1, counted-gate 2, ddp 1, script 4",
        "- findings 3: 1 true, 2 false (1 unreviewed); 2 in unsure loops, not counted",
        "- precision 33.3% (1/3)",
        "- recall 50.0% (1/2)",
    ]
    assert lines[8:12] == [
        "| GL101 | 1 | 1 | 0 | 100.0% (1/1) | 1 | 1 | 100.0% (1/1) |",
        "| GL103 | 1 | 0 | 1 | 0.0% (0/1) | 0 | 0 | n/a (0/0) |",
        "| GL201 | 1 | 0 | 1 | 0.0% (0/1) | 0 | 0 | n/a (0/0) |",
        "| GL401 | 0 | 0 | 0 | n/a (0/0) | 1 | 0 | 0.0% (0/1) |",
    ]
    fp_at = lines.index("false positives (2):")
    assert lines[fp_at + 1].startswith("  toyproj/toyproj/train_bad.py:21 GL201 ")
    assert lines[fp_at + 1].endswith(" / in loop ft, labelled correct")
    assert lines[fp_at + 2].startswith("  toyproj/toyproj/train_bad.py:44 GL103 ")
    assert lines[fp_at + 2].endswith(" / unreviewed: outside every labelled loop")
    assert lines[fp_at + 3:fp_at + 5] == [
        "misses (1):",
        "  toyproj/toyproj/train_bad.py:12 GL401 (loop bad) / no last-batch branch",
    ]
    assert lines[fp_at + 5] == "findings in unsure loops, not counted (2):"
    assert [line.split()[:2] for line in lines[fp_at + 6:]] == [
        ["toyproj/toyproj/train_bad.py:31", "GL202"], ["toyproj/toyproj/train_bad.py:32", "GL102"]]


def test_json_and_select(tmp_path: Path) -> None:
    proc = run("labelled.py", write_labels(tmp_path, toy_labels()), "--json", "--select", "GL1")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert (data["findings"], data["true_positives"], data["defects"], data["found"]) == (2, 1, 2, 1)
    assert data["precision"] == 0.5 and data["recall"] == 0.5
    assert [(f["line"], f["code"]) for f in data["false_positive_list"]] == [(44, "GL103")]
    assert [(f["line"], f["code"]) for f in data["unsure_findings"]] == [(32, "GL102")]


def test_update_results_rewrites_its_section(tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    results.write_text("# bench\n\nkept\n")
    labels = write_labels(tmp_path, toy_labels())
    for _ in range(2):
        proc = run("labelled.py", labels, "--update-results", "--results-file", str(results))
        assert proc.returncode == 0, proc.stderr
    text = results.read_text()
    assert text.startswith("# bench\n\nkept\n\n<!-- labelled-benchmark:begin -->\n")
    assert text.count("## Labelled real-code benchmark") == 1
    assert "- precision 33.3% (1/3)\n" in text
    assert text.endswith("<!-- labelled-benchmark:end -->\n")


# --- mutations ----------------------------------------------------------------------------

def diff(before: str, after: str) -> list[str]:
    return [line.rstrip("\n") for line in difflib.unified_diff(
        before.splitlines(True), after.splitlines(True), n=0)][2:]


EXPECTED_DIFFS = {
    "clip-into-micro-batch": (26, [
        "@@ -25,0 +26 @@",
        "+            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)",
        "@@ -28 +28,0 @@",
        "-            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)"]),
    "step-into-micro-batch": (26, [
        "@@ -25,0 +26 @@", "+            scaler.step(optimizer)",
        "@@ -29 +29,0 @@", "-            scaler.step(optimizer)"]),
    "zero-grad-into-micro-batch": (26, [
        "@@ -25,0 +26 @@", "+            optimizer.zero_grad()",
        "@@ -32 +32,0 @@", "-            optimizer.zero_grad()"]),
    "scheduler-into-micro-batch": (26, [
        "@@ -25,0 +26 @@", "+            scheduler.step()",
        "@@ -31 +31,0 @@", "-            scheduler.step()"]),
    "drop-scaling": (25, [
        "@@ -24 +24 @@", "-            loss = loss / window_size", "+            loss = loss"]),
    "clip-after-step": (29, [
        "@@ -27,0 +28 @@", "+            scaler.step(optimizer)",
        "@@ -29 +29,0 @@", "-            scaler.step(optimizer)"]),
    "scheduler-before-step": (29, [
        "@@ -28,0 +29 @@", "+            scheduler.step()",
        "@@ -31 +31,0 @@", "-            scheduler.step()"]),
    "unscale-after-clip": (27, [
        "@@ -26,0 +27 @@",
        "+            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)",
        "@@ -28 +28,0 @@",
        "-            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)"]),
    "drop-zero-grad": (29, ["@@ -32 +31,0 @@", "-            optimizer.zero_grad()"]),
    "zero-grad-before-step": (29, [
        "@@ -28,0 +29 @@", "+            optimizer.zero_grad()",
        "@@ -32 +32,0 @@", "-            optimizer.zero_grad()"]),
    "drop-no-sync": (24, [
        "@@ -21,5 +21,4 @@",
        "-        with sync_context:",
        '-            with torch.autocast("cuda", dtype=torch.float16):',
        "-                loss = torch.nn.functional.cross_entropy(model(inputs), targets)",
        "-            loss = loss / window_size",
        "-            scaler.scale(loss).backward()",
        '+        with torch.autocast("cuda", dtype=torch.float16):',
        "+            loss = torch.nn.functional.cross_entropy(model(inputs), targets)",
        "+        loss = loss / window_size",
        "+        scaler.scale(loss).backward()"]),
    "zero-based-gate": (26, [
        "@@ -26 +26 @@",
        "-        if (step + 1) % accum_steps == 0 or last:",
        "+        if step % accum_steps == 0 or last:"]),
}


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_each_kind_produces_its_mutant(kind: Any) -> None:
    text = (TOY / "train_ok.py").read_text()
    mutant = mutate(text, kind, OK_ANCHORS, accumulates=True)
    line, expected = EXPECTED_DIFFS[kind.name]
    assert diff(text, mutant.text) == expected
    assert mutant.expected_line == line
    assert parses(mutant.text)


def test_moves_keep_line_map_and_order() -> None:
    text = (TOY / "train_ok.py").read_text()
    kind = next(k for k in KINDS if k.name == "clip-after-step")
    mutant = mutate(text, kind, OK_ANCHORS, accumulates=True)
    lines = mutant.text.splitlines()
    assert lines[26:30] == ["            scaler.unscale_(optimizer)",
                            "            scaler.step(optimizer)",
                            "            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)",
                            "            scaler.update()"]
    assert (mutant.line_map[28], mutant.line_map[29], mutant.line_map[30]) == (29, 28, 30)


SCALE_SOURCES = [
    ("        (loss / accum_steps).backward()\n", "        loss.backward()\n"),
    ("        scaler.scale(loss / accum_steps).backward()\n", "        scaler.scale(loss).backward()\n"),
    ("        accelerator.backward(loss / accum_steps)\n", "        accelerator.backward(loss)\n"),
]


@pytest.mark.parametrize(("backward", "mutated"), SCALE_SOURCES)
def test_drop_scaling_inside_the_backward_call(backward: str, mutated: str) -> None:
    text = ("def train(model, loader, accum_steps):\n"
            "    for step, batch in enumerate(loader):\n"
            "        loss = model(batch)\n" + backward)
    kind = next(k for k in KINDS if k.code == "GL201")
    mutant = mutate(text, kind, {"backward": 4, "scale": None}, accumulates=True)
    assert mutant.text.splitlines(True)[3] == mutated


def test_drop_scaling_of_an_augmented_division_leaves_pass_when_needed() -> None:
    text = ("def train(model, loader, n):\n"
            "    for batch in loader:\n"
            "        loss = model(batch)\n"
            "        if n > 1:\n"
            "            loss /= n\n"
            "        loss.backward()\n")
    kind = next(k for k in KINDS if k.code == "GL201")
    mutant = mutate(text, kind, {"backward": 6, "scale": 5}, accumulates=True)
    assert mutant.text.splitlines()[3:] == ["        if n > 1:", "            pass",
                                            "        loss.backward()"]
    assert mutant.expected_line == 6


TWO_ARM_BACKWARD = """\
class Stepper:
    def step(self, batch):
        loss = self.model(batch) / self.accum_steps
        if self.use_scaler:
            self.scaler.scale(loss).backward()
        else:
            loss.backward()
        print(loss.item())
"""


def test_drop_scaling_expects_the_code_at_every_backward_of_the_loss() -> None:
    kind = next(k for k in KINDS if k.code == "GL201")
    mutant = mutate(TWO_ARM_BACKWARD, kind, {"backward": 5, "scale": 3}, accumulates=True, lines=(2, 8))
    assert mutant.text.splitlines()[2] == "        loss = self.model(batch)"
    assert (mutant.expected_line, mutant.also) == (5, frozenset({7}))


def test_a_drop_scaling_mutant_is_caught_on_the_other_arms_backward() -> None:
    from labelled_sources import Finding
    from mutate import Outcome, _Job, judge

    kind = next(k for k in KINDS if k.code == "GL201")
    mutant = mutate(TWO_ARM_BACKWARD, kind, {"backward": 5, "scale": 3}, accumulates=True, lines=(2, 8))
    job = _Job(Outcome("p", "s.py", "Stepper.step", kind.name, "GL201", 5, "unparseable"), mutant, frozenset())
    found = [Finding("s.py", 5, "GL201", ""), Finding("s.py", 7, "GL201", "")]
    assert judge(job, found).status == "caught"
    assert judge(job, [*found, Finding("s.py", 8, "GL201", "")]).status == "missed"


def test_drop_scaling_leaves_a_division_of_what_the_call_returns() -> None:
    """``training_step`` backpropagates inside the call: dividing its result changes only the
    logged value, so deleting that division injects no defect."""
    text = ("class T(Trainer):\n"
            "    def training_step(self, *args):\n"
            "        return super().training_step(*args) / self.world_size\n")
    kind = next(k for k in KINDS if k.code == "GL201")
    with pytest.raises(NotApplicable, match="backpropagated by the backward statement"):
        mutate(text, kind, {"backward": 3, "scale": None}, accumulates=True)


def test_the_harness_lints_mutants_with_its_own_checkout(tmp_path: Path) -> None:
    """``lint_text`` runs gradlint in the harness's process: from any directory it must import
    the checkout holding the harness, not another gradlint found first (here a decoy package
    in the working directory, standing for another checkout's installed one)."""
    (tmp_path / "gradlint").mkdir()
    (tmp_path / "gradlint" / "__init__.py").write_text("")
    code = f"import sys; sys.path.insert(1, {str(BENCH)!r}); import mutate, gradlint; print(gradlint.__file__)"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert Path(out.stdout.strip()).resolve().is_relative_to(ROOT)


def test_not_applicable() -> None:
    text = (TOY / "train_ok.py").read_text()
    by_name = {k.name: k for k in KINDS}
    with pytest.raises(NotApplicable, match="does not accumulate"):
        mutate(text, by_name["step-into-micro-batch"], OK_ANCHORS, accumulates=False)
    with pytest.raises(NotApplicable, match="no unscale anchor"):
        mutate(text, by_name["unscale-after-clip"], {**OK_ANCHORS, "unscale": None}, True)
    with pytest.raises(NotApplicable, match=r"no single `\(i \+ 1\) % N`"):
        mutate(text, by_name["zero-based-gate"], {**OK_ANCHORS, "gate": 34}, True)
    with pytest.raises(NotApplicable, match="not `x = expr / N`"):
        mutate(text, by_name["drop-scaling"], {**OK_ANCHORS, "scale": 23}, True)
    # a non-accumulating loop still gets the order mutations
    assert mutate(text, by_name["clip-after-step"], OK_ANCHORS, accumulates=False).code == "GL301"


ONE_UPDATE_CALL = """\
class Parser:
    def fit(self, loader, optimizer, history, n):
        for batch in loader:
            loss = self.model(batch) / n
            loss.backward()
            if history.step(n):
                self._step(optimizer)

    def _step(self, optimizer):
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
"""

WINDOW_IN_HELPER = """\
class Trainer:
    def train_batch(self, micro_batches):
        for micro_batch in micro_batches:
            self.model(micro_batch).backward()

    def train_step(self, batch):
        self.optim.zero_grad()
        self.train_batch(batch.chunk(4))
        self.clip()
        for group in self.optim.param_groups:
            group["lr"] = self.scheduler.get_lr(self.step)
        self.optim.step()
"""


def test_mutations_that_would_not_inject_one_defect_do_not_apply() -> None:
    by_name = {k.name: k for k in KINDS}
    # the labelled clip, step and scheduler are one helper call: moving it injects three defects
    with pytest.raises(NotApplicable, match="also holds the step anchor"):
        mutate(ONE_UPDATE_CALL, by_name["clip-into-micro-batch"],
               {"backward": 5, "clip": 7, "step": 7, "scheduler": 7}, accumulates=True)
    # the same call labelled as the step only: the helper it calls also clips and zeroes, and
    # moving the call moves them too
    with pytest.raises(NotApplicable, match="a helper the step statement calls also holds a clip call"):
        mutate(ONE_UPDATE_CALL, by_name["step-into-micro-batch"], {"backward": 5, "step": 7}, accumulates=True)
    only_step = ONE_UPDATE_CALL.replace("        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)\n", "")
    only_step = only_step.replace("        optimizer.zero_grad()\n", "")
    assert mutate(only_step, by_name["step-into-micro-batch"], {"backward": 5, "step": 7},
                  accumulates=True).expected_line == 6
    # beside a call that runs the whole micro-batch loop is after the window, not in it
    with pytest.raises(NotApplicable, match="calls a helper holding the whole micro-batch loop"):
        mutate(WINDOW_IN_HELPER, by_name["step-into-micro-batch"],
               {"backward": 8, "clip": 9, "step": 12}, accumulates=True)
    # a scheduler already before the step (it sets the coming update's rate): moving changes nothing
    with pytest.raises(NotApplicable, match="already comes before the step"):
        mutate(WINDOW_IN_HELPER, by_name["scheduler-before-step"],
               {"backward": 8, "scheduler": 10, "step": 12}, accumulates=True)
    # the unscale covers the clip of either arm: moving it into one arm unscales the other no more
    arms = ("def train(model, loader, optimizer, scaler, fsdp):\n"
            "    for batch in loader:\n"
            "        scaler.scale(model(batch)).backward()\n"
            "        scaler.unscale_(optimizer)\n"
            "        if fsdp:\n"
            "            model.clip_grad_norm_(1.0)\n"
            "        else:\n"
            "            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
            "        scaler.step(optimizer)\n")
    with pytest.raises(NotApplicable, match="another branch clips too"):
        mutate(arms, by_name["unscale-after-clip"], {"backward": 3, "unscale": 4, "clip": 8}, accumulates=False)
    one_arm = arms.replace("            model.clip_grad_norm_(1.0)\n", "            pass\n")
    assert mutate(one_arm, by_name["unscale-after-clip"], {"backward": 3, "unscale": 4, "clip": 8},
                  accumulates=False).expected_line == 7
    # a backward helper without a loop of its own is still a place in the window
    helper = WINDOW_IN_HELPER.replace("        for micro_batch in micro_batches:\n    ", "")
    assert mutate(helper, by_name["step-into-micro-batch"], {"backward": 7, "step": 11},
                  accumulates=True).expected_line == 8


HELPERS = """\
class Hook:
    def clip(self, params):
        return self.clip_norm(params)

    def clip_norm(self, params):
        torch.nn.utils.clip_grad_norm_(params, 1.0)

    def after_iter(self, runner):
        runner.loss.backward()
        runner.optimizer.step()
        self.clip(runner.model.parameters())


def unrelated():
    pass
"""


def test_helper_lines_are_the_functions_a_statement_reaches() -> None:
    # line 11 calls self.clip (lines 2-3), which calls self.clip_norm (lines 5-6)
    assert helper_lines(HELPERS, 11) == frozenset({2, 3, 5, 6})
    assert helper_lines(HELPERS, 11, depth=1) == frozenset({2, 3})
    assert helper_lines(HELPERS, 9) == frozenset()  # runner.loss.backward(): no function here
    assert helper_lines("def broken(:\n", 1) == frozenset()


HANDED = """\
class Learner:
    def _with_events(self, f, name):
        f()

    def _step(self):
        self.opt.step()

    def _do_grad_opt(self):
        self._with_events(self._step, 'step')
        self._with_events(self.opt, 'opt')
"""


def test_helper_lines_follow_a_function_handed_to_a_call() -> None:
    # line 9 hands self._step (lines 5-6) to self._with_events (lines 2-3), which runs it: the
    # step is reported where it is written; `self.opt` (line 10) names no function of the module
    assert helper_lines(HANDED, 9) == frozenset({2, 3, 5, 6})
    assert helper_lines(HANDED, 10) == frozenset({2, 3})


def test_a_mutant_is_caught_in_the_helper_its_moved_call_reaches() -> None:
    from labelled_sources import Finding
    from mutate import Outcome, _Job
    from mutations import Mutant

    mutant = Mutant("clip-after-step", "GL301", HELPERS, 11, {n: n for n in range(1, 16)})
    job = _Job(Outcome("p", "hook.py", "Hook.after_iter", "clip-after-step", "GL301", 11, "unparseable"),
               mutant, frozenset())

    def judged(*found: tuple[str, int]) -> str:
        from mutate import judge
        return judge(job, [Finding("hook.py", line, code, "") for code, line in found]).status

    assert judged(("GL301", 11)) == "caught"
    assert judged(("GL301", 6)) == "caught"  # the clip written in clip_norm, reached from line 11
    assert judged(("GL301", 14)) == "missed"  # in a function line 11 does not reach
    assert judged(("GL101", 6)) == "missed"
    assert judged(("GL301", 6), ("GL305", 10)) == "missed"
    assert judged(("GL301", 11), ("GL303", 11)) == "caught"  # a second code on the mutated line
    assert judged(("GL303", 11)) == "missed"  # only the second code
    assert judged(("GL301", 11), ("GL303", 12)) == "missed"  # something new elsewhere


def test_a_mutant_is_caught_in_a_helper_of_another_module_that_names_its_loop() -> None:
    """gradlint reports an event of a helper written in another module at the helper's line, its
    message naming the loop: that is the statement's call reached, not a finding elsewhere."""
    from labelled_sources import Finding
    from mutate import Outcome, _Job, judge
    from mutations import Mutant

    mutant = Mutant("drop-zero-grad", "GL304", HELPERS, 11, {n: n for n in range(1, 16)})
    job = _Job(Outcome("p", "hook.py", "Hook.after_iter", "drop-zero-grad", "GL304", 11, "unparseable"),
               mutant, frozenset())
    named = Finding("common/base.py", 40, "GL304", "opt.step() runs but ... (in the loop at hook.py:8)")
    other = Finding("common/base.py", 40, "GL304", "opt.step() runs but ... (in the loop at train.py:3)")
    assert judge(job, [named]).status == "caught"
    assert judge(job, [named]).reported == ("GL304:common/base.py:40",)
    assert judge(job, [other]).status == "missed"  # another file's loop: not this mutant's
    assert judge(job, [Finding("hook.py", 40, "GL304", "")]).status == "missed"  # line 40 of this file
    assert judge(job, [named, Finding("hook.py", 12, "GL303", "")]).status == "missed"


def test_a_mutant_that_does_not_compile_is_flagged() -> None:
    text = (TOY / "step_fn.py").read_text()
    kind = next(k for k in KINDS if k.code == "GL103")
    mutant = mutate(text, kind, {"backward": 8, "zero_grad": 12, "step": 11}, accumulates=True)
    assert mutant.text.splitlines()[7:11] == [
        "    loss.backward()",
        '    if optimizer.defaults.get("foreach"):',
        "        optimizer.zero_grad(set_to_none=True)",
        "        continue"]
    assert not parses(mutant.text)


def test_mutate_cli_scores_and_skips_unparseable(tmp_path: Path) -> None:
    lab = toy_labels()
    lab["files"].append("toyproj/step_fn.py")
    lab["loops"][0]["anchors"] = {"backward": 25, "gate": 26, "step": 29, "scheduler": 31}
    lab["loops"].append(
        {"id": "step_fn", "path": "toyproj/step_fn.py", "function": "train_step",
         "lines": [6, 15], "style": ["callback/hook", "multi-optimizer"], "accumulates": True,
         "verdict": "correct", "anchors": {"backward": 8, "zero_grad": 12}})
    proc = run("mutate.py", write_labels(tmp_path, lab))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "correct loops with anchors: 2, mutants: 5"
    rows = {line.split(" | ")[0][2:]: line for line in lines if line.startswith("| ")}
    assert rows["step-into-micro-batch"] == "| step-into-micro-batch | GL102 | 1 | 0 | 0 | 100.0% |"
    assert rows["zero-grad-into-micro-batch"] == \
        "| zero-grad-into-micro-batch | GL103 | 0 | 0 | 1 | n/a |"
    assert rows["scheduler-before-step"] == "| scheduler-before-step | GL302 | 1 | 0 | 0 | 100.0% |"
    assert rows["zero-based-gate"] == "| zero-based-gate | GL403 | 1 | 0 | 0 | 100.0% |"
    assert rows["overall"] == "| overall |  | 4 | 0 | 1 | 100.0% |"
    assert lines[-2:] == ["missed (0):", "findings on the unmutated correct loops (0):"]


def test_marked_sections_survive_a_rewrite_of_the_rest() -> None:
    from results import keeping_sections, marked, sections, with_section

    old = f"# old timings\n\n{marked('labelled-benchmark', 'figures')}\n\n{marked('runtime-overhead', 'ms')}\n"
    assert sections(old) == ["<!-- labelled-benchmark:begin -->\nfigures\n<!-- labelled-benchmark:end -->",
                             "<!-- runtime-overhead:begin -->\nms\n<!-- runtime-overhead:end -->"]
    assert keeping_sections("# new timings\n", old) == "\n\n".join(["# new timings", *sections(old)]) + "\n"
    assert sections(with_section(old, "runtime-overhead", "faster")) == [
        sections(old)[0], "<!-- runtime-overhead:begin -->\nfaster\n<!-- runtime-overhead:end -->"]
    assert with_section("# t\n", "x", "body") == "# t\n\n<!-- x:begin -->\nbody\n<!-- x:end -->\n"
    assert keeping_sections("# new\n", "# old\n") == "# new\n"


def test_only_names_a_package_without_labels(tmp_path: Path) -> None:
    proc = run("labelled.py", write_labels(tmp_path, toy_labels()), "--only", "nosuch")
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["no label file for nosuch in labels"]


def test_missing_source_tree_is_one_line(tmp_path: Path) -> None:
    lab = toy_labels()
    lab["version"] = "2.0"
    proc = run("labelled.py", write_labels(tmp_path, lab))
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"labelled: toyproj-2.0: no folder toyproj-2.0 in {TREES}"]


def test_a_file_that_does_not_parse_has_no_mutants() -> None:
    with pytest.raises(NotApplicable, match="the original does not parse"):
        mutate("def train(:\n", KINDS[0], OK_ANCHORS, accumulates=True)



def _drop_zero(body: str, zero: int, backward: int | None = 3) -> Any:
    """Drop the zeroing on line ``zero`` of a loop (lines 2 on) whose backward and step are on
    lines 3 and 4."""
    text = ("def train(model, loader, optimizer, opt_d, fused, mode):\n    for x in loader:\n"
            "        model(x).backward()\n        optimizer.step()\n" + body)
    kind = next(k for k in KINDS if k.name == "drop-zero-grad")
    lines = (2, len(text.splitlines()))
    return text, mutate(text, kind, {"backward": backward, "step": 4, "zero_grad": zero}, False, lines)


def test_drop_zero_grad_deletes_the_if_of_alternative_zeroings() -> None:
    text, mutant = _drop_zero("        if fused:\n            optimizer.zero_grad()\n"
                              "        else:\n            optimizer.zero_grad(set_to_none=True)\n", 6)
    assert diff(text, mutant.text)[1:] == [
        "-        if fused:", "-            optimizer.zero_grad()", "-        else:",
        "-            optimizer.zero_grad(set_to_none=True)"]
    assert mutant.expected_line == 4


def test_drop_zero_grad_deletes_the_if_whose_other_branch_zeroes_in_a_loop() -> None:
    """``if multi_gpu: optimizer.zero_grad() else: for p in ...: p.grad = None``: both branches
    are zeroings, so the defect is the whole ``if`` gone, not one branch (which would leave the
    other path zeroed)."""
    text, mutant = _drop_zero("        if fused:\n            optimizer.zero_grad()\n        else:\n"
                              "            for p in model.parameters():\n                p.grad = None\n", 6)
    assert diff(text, mutant.text)[1:] == [
        "-        if fused:", "-            optimizer.zero_grad()", "-        else:",
        "-            for p in model.parameters():", "-                p.grad = None"]
    assert mutant.expected_line == 4


@pytest.mark.parametrize("body", [
    "        optimizer.zero_grad()\n        optimizer.zero_grad(set_to_none=True)\n",
    "        optimizer.zero_grad()\n        model.zero_grad()\n",
    "        model.zero_grad()\n        optimizer.zero_grad()\n",
    "        optimizer.zero_grad()\n        for p in model.parameters():\n            p.grad = None\n",
])
def test_drop_zero_grad_skips_a_redundant_zeroing(body: str) -> None:
    """Another zeroing of the same gradients remains on the path (the same optimizer, or a
    model's or parameters' zeroing that may clear them): no defect to inject."""
    with pytest.raises(NotApplicable, match="another zeroing of the same gradients"):
        _drop_zero(body, 5)


@pytest.mark.parametrize("body", [
    "        optimizer.zero_grad()\n        opt_d.zero_grad()\n",  # another optimizer's
    "        if mode:\n            optimizer.zero_grad()\n        else:\n            print(mode)\n"
    "            model.zero_grad()\n",
    "        try:\n            optimizer.zero_grad()\n        except RuntimeError:\n"
    "            optimizer.zero_grad()\n",
])
def test_drop_zero_grad_keeps_a_zeroing_off_the_path_or_of_another_optimizer(body: str) -> None:
    zero = 5 if body.startswith("        optimizer") else 6
    text, mutant = _drop_zero(body, zero)
    assert mutant.expected_line == 4
    assert mutant.text.count("zero_grad") == text.count("zero_grad") - 1


def test_drop_zero_grad_needs_a_backward_in_the_loop() -> None:
    with pytest.raises(NotApplicable, match="no backward in the loop"):
        _drop_zero("        optimizer.zero_grad()\n", 5, backward=None)


HELPER_WINDOW = """\
class Trainer:
    def train_batch(self, batch):
        for micro in batch.split(4):
            self.model(micro).backward()

    def train_step(self, batch):
        self.optim.zero_grad()
        self.train_batch(batch)
        self.optim.step()
"""


@pytest.mark.parametrize("name", ["zero-grad-into-micro-batch", "step-into-micro-batch"])
def test_into_micro_batch_needs_a_backward_in_the_window(name: str) -> None:
    """The backward anchor calls the helper holding the whole micro-batch loop: a call moved
    after it stays after the window (at the boundary), no micro-batch defect."""
    kind = next(k for k in KINDS if k.name == name)
    with pytest.raises(NotApplicable, match="helper holding the whole micro-batch loop"):
        mutate(HELPER_WINDOW, kind, {"backward": 8, "zero_grad": 7, "step": 9}, True, (6, 9))


ACCUMULATE = """\
def train(accelerator, model, loader, optimizer):
    for batch in loader:
        with accelerator.accumulate(model):
            optimizer.zero_grad()
            accelerator.backward(model(batch))
            optimizer.step()
"""


def test_zero_grad_after_the_backward_under_accumulate_is_a_zero_before_step() -> None:
    """Accelerate skips a prepared optimizer's zero_grad until the boundary micro-batch, where
    it runs between that backward and the step: GL305, not GL103. A model's zero_grad is not
    skipped: GL103."""
    kind = next(k for k in KINDS if k.name == "zero-grad-into-micro-batch")
    mutant = mutate(ACCUMULATE, kind, {"backward": 5, "zero_grad": 4, "step": 6}, True, (2, 6))
    assert (mutant.code, mutant.expected_line) == ("GL305", 5)
    model_zero = ACCUMULATE.replace("optimizer.zero_grad()", "model.zero_grad()")
    assert mutate(model_zero, kind, {"backward": 5, "zero_grad": 4, "step": 6}, True, (2, 6)).code == "GL103"


def test_zero_grad_into_micro_batch_needs_a_zeroing_apart_from_the_step() -> None:
    """``self._step(optimizer)`` steps and zeroes: moved next to the backward, the loop steps
    every micro-batch (no window left to wipe)."""
    text = ("def fit(self, loader, optimizer, n):\n    for i, batch in enumerate(loader):\n"
            "        (self.loss(batch) / n).backward()\n        if (i + 1) % n == 0:\n"
            "            self._step(optimizer)\n")
    kind = next(k for k in KINDS if k.name == "zero-grad-into-micro-batch")
    with pytest.raises(NotApplicable, match="the zero_grad statement also holds the step anchor"):
        mutate(text, kind, {"backward": 3, "gate": 4, "step": 5, "zero_grad": 5}, True, (2, 5))


@pytest.mark.parametrize("name", ["drop-zero-grad", "zero-grad-before-step"])
def test_zeroing_moves_need_a_zeroing_apart_from_the_backward(name: str) -> None:
    """``self.accumulate_grad()`` zeroes on the window's first call and backpropagates: deleting
    or moving it drops or moves the backward too (not one zeroing defect)."""
    text = ("def observe(self, done):\n    if done:\n        self.accumulate_grad()\n"
            "        if self.n_backward == self.batchsize:\n            self.optimizer.step()\n")
    kind = next(k for k in KINDS if k.name == name)
    with pytest.raises(NotApplicable, match="the zero_grad statement also holds the backward anchor"):
        mutate(text, kind, {"backward": 3, "zero_grad": 3, "gate": 4, "step": 5}, False, (1, 5))


ACCUMULATE_CLIP = """\
def train(accelerator, model, loader, optimizer):
    for batch in loader:
        with accelerator.accumulate(model):
            accelerator.backward(model(batch))
            if accelerator.sync_gradients:
                accelerator.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
"""


def test_step_into_micro_batch_under_accumulate_is_a_step_before_the_clip() -> None:
    """Accelerate skips a prepared optimizer's step until the boundary wherever it stands: moved
    next to the backward, it runs at the boundary before the clip (GL301 on the clip call), and
    with no clip in between it changes nothing. A GradScaler's step is not held back."""
    kind = next(k for k in KINDS if k.name == "step-into-micro-batch")
    anchors = {"backward": 4, "clip": 5, "step": 7, "zero_grad": 8}
    mutant = mutate(ACCUMULATE_CLIP, kind, anchors, True, (2, 8))
    assert (mutant.code, mutant.expected_line) == ("GL301", 7)
    assert mutant.text.splitlines()[4] == "            optimizer.step()"
    with pytest.raises(NotApplicable, match="changes nothing"):
        mutate(ACCUMULATE, kind, {"backward": 5, "zero_grad": 4, "step": 6}, True, (2, 6))
    scaled = ACCUMULATE_CLIP.replace("optimizer.step()", "scaler.step(optimizer)")
    assert mutate(scaled, kind, anchors, True, (2, 8)).code == "GL102"
