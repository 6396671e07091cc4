"""Multi-module projects (fixtures/projects/): kinds across a class hierarchy and calls followed
into other modules, each finding reported in the file where its call is written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, expected_markers
from samples import gradlint

from gradlint import runner as runner_module
from gradlint.cache import CACHE_DIR_NAME, Cache
from gradlint.engine import Reads, lint_source
from gradlint.project.index import ProjectIndex
from gradlint.runner import Mode, run
from gradlint.settings import default_settings

PROJECTS = FIXTURES / "projects"
NAMES = sorted(p.name for p in PROJECTS.iterdir() if p.is_dir())


def _markers(project: Path) -> set[tuple[str, int, str]]:
    return {(path.relative_to(project).as_posix(), line, code) for path in project.rglob("*.py")
            for line, code in expected_markers(path.read_text(encoding="utf-8"))}


@pytest.fixture
def copies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The projects, each under its own root marker."""
    shutil.copytree(PROJECTS, tmp_path / "projects")
    for name in NAMES:
        (tmp_path / "projects" / name / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path / "projects"


def test_every_project_layout_is_there() -> None:
    assert NAMES == ["callback_loop", "class_hierarchy", "counter_helpers", "ddp_caller", "distributed_data",
                     "epoch_driver", "handover_helpers", "helper_defects", "hf_trainer_subclass", "loss_contracts",
                     "mixin_update", "nested_package", "runner_hooks", "schedule_factory", "script_layout",
                     "trainer_package", "window_counter"]
    assert all(_markers(PROJECTS / name) for name in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_a_project_reports_exactly_its_markers(copies: Path, name: str) -> None:
    result = gradlint("check", str(copies / name), "--format", "json", "--no-cache")
    found = {(Path(d["path"]).resolve().relative_to((copies / name).resolve()).as_posix(), d["span"]["line"]
              if "span" in d else d["line"], d["code"]) for d in json.loads(result.stdout)}
    assert result.exit_code == 1
    assert found == _markers(PROJECTS / name)


@pytest.mark.parametrize(("name", "loop_file"), [
    ("trainer_package", "trainer/loop.py"),
    ("class_hierarchy", "trainers/classifier.py"),
    ("callback_loop", "loop.py"),
    ("ddp_caller", "training/loop.py"),
    ("nested_package", "release/parsing/tagger.py"),
    ("counter_helpers", "trainer/loop.py"),
])
def test_a_loop_file_alone_knows_nothing_of_its_helpers(tmp_path: Path, name: str, loop_file: str) -> None:
    """Without the module that steps (or builds the optimizer) the loop has no update: nothing
    is reported, where the project reports the marked defect."""
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / ".git").mkdir()
    source = (PROJECTS / name / loop_file).read_text(encoding="utf-8")
    (alone / "loop.py").write_text(source, encoding="utf-8")
    assert lint_source(source, str(alone / "loop.py"), default_settings()) == []
    in_project = lint_source(source, str(PROJECTS / name / loop_file), default_settings())
    assert {(d.line, d.code) for d in in_project} == expected_markers(source)


def test_diagnostics_are_for_the_linted_file_only(copies: Path) -> None:
    """A defect written in a helper of another module is not reported under the caller's path."""
    project = copies / "trainer_package"
    helper = project / "trainer" / "helpers.py"
    helper.write_text(helper.read_text(encoding="utf-8").replace(
        "    optimizer.step()\n    optimizer.zero_grad()\n", "    optimizer.zero_grad()\n    optimizer.step()\n"),
        encoding="utf-8")
    loop = project / "trainer" / "loop.py"
    found = lint_source(loop.read_text(encoding="utf-8"), str(loop), default_settings(), project=ProjectIndex())
    assert {(d.path, d.line, d.code) for d in found} == {(str(loop), 15, "GL201")}


def test_a_defect_in_a_helper_is_reported_in_the_helper_with_the_loop_named(copies: Path) -> None:
    """Checking main.py alone reports the defects its loop makes of the helpers in steps.py,
    at the helper's lines and path, each message naming the loop (file from the root, line)."""
    result = gradlint("check", "projects/helper_defects/main.py", "--no-cache", "--output-format", "concise")
    assert result.exit_code == 1
    lines = [line for line in result.stdout.splitlines() if ": GL" in line]
    assert [line.split(" ", 2)[:2] for line in lines] == [
        ["projects/helper_defects/main.py:12:9:", "GL202"],
        ["projects/helper_defects/steps.py:5:5:", "GL104"],
        ["projects/helper_defects/steps.py:9:5:", "GL305"],
    ]
    assert lines[1].endswith("(in the loop at main.py:10)") and lines[2].endswith("(in the loop at main.py:10)")
    assert "main.py:10" not in lines[0]


def test_lint_source_hands_the_helpers_diagnostics_over_apart_without_fixes(copies: Path) -> None:
    main = copies / "helper_defects" / "main.py"
    reads = Reads()
    own = lint_source(main.read_text(encoding="utf-8"), str(main), default_settings(), project=ProjectIndex(),
                      reads=reads)
    assert [(d.line, d.code) for d in own] == [(12, "GL202")]
    steps = str((copies / "helper_defects" / "steps.py").absolute())
    assert [(d.path, d.line, d.code, d.fix) for d in reads.elsewhere] == [(steps, 5, "GL104", None),
                                                                         (steps, 9, "GL305", None)]
    assert Path(steps) in reads.uses


def test_a_helper_comment_suppresses_what_its_callers_find_there(copies: Path) -> None:
    steps = copies / "helper_defects" / "steps.py"
    steps.write_text(steps.read_text(encoding="utf-8").replace("# expect: GL104", "# noqa: GL104"), encoding="utf-8")
    result = gradlint("check", "projects/helper_defects/main.py", "--no-cache", "--output-format", "concise",
                      "--extend-select", "GL900")
    assert [line.split(" ", 2)[1] for line in result.stdout.splitlines() if ": GL" in line] == ["GL202", "GL305"]


def test_two_callers_of_one_helper_report_its_defect_once(copies: Path) -> None:
    project = copies / "helper_defects"
    (project / "again.py").write_text((project / "main.py").read_text(encoding="utf-8"), encoding="utf-8")
    result = run([project / "main.py", project / "again.py", project / "steps.py"], default_settings())
    assert [(Path(d.path).name, d.line, d.code) for d in result.diagnostics] == [
        ("again.py", 12, "GL202"), ("main.py", 12, "GL202"), ("steps.py", 5, "GL104"), ("steps.py", 9, "GL305")]


def test_fixing_a_caller_leaves_the_helper_as_it_is_and_reports_its_defect(copies: Path) -> None:
    """A fix edits only the file being fixed: the helper's defect is reported, not fixed."""
    project = copies / "helper_defects"
    before = (project / "steps.py").read_bytes()
    result = run([project / "main.py"], default_settings(), mode=Mode.FIX, unsafe=True)
    assert (project / "steps.py").read_bytes() == before
    assert [f.path.name for f in result.fixes] == ["main.py"]
    assert ("steps.py", 9, "GL305") in {(Path(d.path).name, d.line, d.code) for d in result.diagnostics}


def test_a_cached_caller_still_reports_its_helpers_defects(copies: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = copies / "helper_defects"
    main = Path("projects/helper_defects/main.py")
    first = run([main], default_settings(), cache=Cache(project / CACHE_DIR_NAME))
    linted: list[Path] = []
    real = runner_module._lint_task

    def counting(task: runner_module._Task, cache: Cache | None) -> object:
        linted.append(task.path)
        return real(task, cache)

    monkeypatch.setattr(runner_module, "_lint_task", counting)
    again = run([main], default_settings(), cache=Cache(project / CACHE_DIR_NAME))
    assert linted == [] and again.diagnostics == first.diagnostics
    assert [(d.path, d.line) for d in again.diagnostics][1:] == [("projects/helper_defects/steps.py", 5),
                                                                 ("projects/helper_defects/steps.py", 9)]
    steps = project / "steps.py"
    steps.write_text(steps.read_text(encoding="utf-8").replace("    scheduler.step()", "    pass"), encoding="utf-8")
    edited = run([main], default_settings(), cache=Cache(project / CACHE_DIR_NAME))
    assert linted == [main] and [(d.line, d.code) for d in edited.diagnostics] == [(12, "GL202"), (9, "GL305")]


def _write(root: Path, files: dict[str, str]) -> None:
    (root / ".git").mkdir(parents=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def test_calls_that_cycle_between_modules_end(tmp_path: Path) -> None:
    _write(tmp_path, {
        "a.py": "import b\n\n\ndef train(model, loader, opt, n):\n    for i, x in enumerate(loader):\n"
                "        model(x).backward()\n        if (i + 1) % n == 0 or i + 1 == len(loader):\n"
                "            b.update(opt, n)\n\n\ndef again(opt, n):\n    b.update(opt, n - 1)\n",
        "b.py": "import a\n\n\ndef update(opt, n):\n    opt.step()\n    opt.zero_grad()\n    if n:\n"
                "        a.again(opt, n)\n",
    })
    found = lint_source((tmp_path / "a.py").read_text(), str(tmp_path / "a.py"), default_settings())
    assert [(d.line, d.code) for d in found] == [(6, "GL201")]


OPTIMIZERS_IN_A_LIST = """\
import torch


class Pair:
    def __init__(self, g, d):
        self.updaters = [torch.optim.Adam(g.parameters()), torch.optim.Adam(d.parameters())]

    def train(self, loader, n):
        for i, x in enumerate(loader):
            self.g(x).backward()
            for u in self.updaters:
                u.step()  # runs on every micro-batch
            if (i + 1) % n == 0 or i + 1 == len(loader):
                for u in self.updaters:
                    u.zero_grad()
"""


def test_a_loop_variable_over_a_list_of_optimizers_is_an_optimizer(tmp_path: Path) -> None:
    _write(tmp_path, {"pair.py": OPTIMIZERS_IN_A_LIST})
    found = lint_source(OPTIMIZERS_IN_A_LIST, str(tmp_path / "pair.py"), default_settings())
    assert ("GL102", 12) in {(d.code, d.line) for d in found}


ONE_OPTIMIZER = """\
import torch


class Trainer:
    def __init__(self, model):
        self.optimizer = torch.optim.Adam(model.parameters())

    def train(self, loader, n):
        for i, x in enumerate(loader):
            self.model(x).backward()
            self.optimizer.step()
            if (i + 1) % n == 0 or i + 1 == len(loader):
                self.optimizer.zero_grad()
"""

LATER_A_SCHEDULER = """
    def reset(self):
        self.optimizer = torch.optim.lr_scheduler.StepLR(self.base, 3)
"""


def test_an_attribute_of_two_kinds_has_none(tmp_path: Path) -> None:
    """``self.optimizer`` holds an optimizer in one method and a scheduler in another: its
    ``step()`` is neither, so no rule that needs the kind fires (its name says optimizer)."""
    _write(tmp_path / "one", {"t.py": ONE_OPTIMIZER})
    found = lint_source(ONE_OPTIMIZER, str(tmp_path / "one" / "t.py"), default_settings())
    assert ("GL102", 11) in {(d.code, d.line) for d in found}
    clashing = ONE_OPTIMIZER + LATER_A_SCHEDULER
    _write(tmp_path / "two", {"t.py": clashing})
    assert lint_source(clashing, str(tmp_path / "two" / "t.py"), default_settings()) == []


def test_editing_a_helper_re_lints_the_files_that_use_it(copies: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cached result records the digests of the project modules it read: unchanged, the
    run is answered from the cache; once the helper no longer steps, the loop is linted again
    and has no update left to check."""
    project = copies / "trainer_package"
    loop = Path("projects/trainer_package/trainer/loop.py")
    cache = Cache(project / CACHE_DIR_NAME)
    first = run([loop], default_settings(), cache=cache)
    assert [(d.line, d.code) for d in first.diagnostics] == [(15, "GL201")]
    linted: list[Path] = []
    real = runner_module._lint_task

    def counting(task: runner_module._Task, cache: Cache | None) -> object:
        linted.append(task.path)
        return real(task, cache)

    monkeypatch.setattr(runner_module, "_lint_task", counting)
    again = run([loop], default_settings(), cache=Cache(project / CACHE_DIR_NAME))
    assert linted == [] and [(d.line, d.code) for d in again.diagnostics] == [(15, "GL201")]
    helper = project / "trainer" / "helpers.py"
    helper.write_text(helper.read_text(encoding="utf-8").replace("    optimizer.step()\n", ""), encoding="utf-8")
    edited = run([loop], default_settings(), cache=Cache(project / CACHE_DIR_NAME))
    assert linted == [loop] and edited.diagnostics == []


MISSING_HELPER_LOOP = """\
from helpers import update


def train(model, loader, opt, n):
    for i, x in enumerate(loader):
        (model(x) / n).backward()
        if (i + 1) % n == 0 or i + 1 == len(loader):
            update(opt)
"""

HELPER = "def update(opt):\n    opt.zero_grad()\n    opt.step()\n"


def _counting_lints(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    linted: list[Path] = []
    real = runner_module._lint_task

    def counting(task: runner_module._Task, cache: Cache | None) -> object:
        linted.append(task.path)
        return real(task, cache)

    monkeypatch.setattr(runner_module, "_lint_task", counting)
    return linted


def test_a_module_that_appears_or_disappears_re_lints_its_importers(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The cached result of a file whose import finds no module records the files it looked
    for as absent: once ``helpers.py`` is written, the file is linted again (and the helper's
    defect found); once it is deleted, again (and nothing found)."""
    _write(tmp_path, {"main.py": MISSING_HELPER_LOOP})
    monkeypatch.chdir(tmp_path)
    linted = _counting_lints(monkeypatch)

    def check() -> list[tuple[str, int, str]]:
        result = run([Path("main.py")], default_settings(), cache=Cache(tmp_path / CACHE_DIR_NAME))
        return [(d.path, d.line, d.code) for d in result.diagnostics]

    assert check() == [] and linted == [Path("main.py")]
    assert check() == [] and linted == [Path("main.py")]  # answered from the cache
    (tmp_path / "helpers.py").write_text(HELPER, encoding="utf-8")
    assert check() == [("helpers.py", 2, "GL305"), ("main.py", 6, "GL202")] and len(linted) == 2
    assert check() == [("helpers.py", 2, "GL305"), ("main.py", 6, "GL202")] and len(linted) == 2
    (tmp_path / "helpers.py").unlink()
    assert check() == [] and len(linted) == 3


def test_a_shared_index_reads_an_importer_again_when_its_module_appears(tmp_path: Path) -> None:
    """The language server's index keeps symbols by content digest: a module that appears
    (the file the import looked for) makes the importer's symbols be read again."""
    _write(tmp_path, {"main.py": MISSING_HELPER_LOOP})
    index = ProjectIndex()
    main = tmp_path / "main.py"

    def lint() -> list[tuple[int, str]]:
        reads = Reads()
        lint_source(MISSING_HELPER_LOOP, str(main), default_settings(), project=index, reads=reads)
        assert (tmp_path / "helpers.py") in reads.uses
        return [(d.line, d.code) for d in reads.elsewhere]

    assert lint() == []
    (tmp_path / "helpers.py").write_text(HELPER, encoding="utf-8")
    assert lint() == [(2, "GL305")]


NEW_MIXER = """\
from .base import AmpTemplate
from .updates.sgd import UnzeroedUpdate


class ScaledUnzeroed(UnzeroedUpdate[int], AmpTemplate[int]):
    pass
"""


def test_a_class_mixing_a_mixin_in_anew_re_lints_the_mixin(copies: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A mixin's ``self`` calls reach the one definition the classes mixing it in give it, found
    by searching the project: its cached result holds while no Python file appears, disappears
    or changes there. A new module mixing ``UnzeroedUpdate`` into a second template makes its
    step ambiguous (nothing said); an edit of a module that names no mixin does too."""
    project = copies / "mixin_update"
    monkeypatch.chdir(project)
    mixin = Path("strategies/updates/sgd.py")
    linted = _counting_lints(monkeypatch)

    def check() -> list[tuple[str, int, str]]:
        result = run([mixin], default_settings(), cache=Cache(project / CACHE_DIR_NAME))
        return sorted((Path(d.path).as_posix(), d.line, d.code) for d in result.diagnostics)

    found = [("strategies/base.py", 22, "GL304"), ("strategies/updates/sgd.py", 31, "GL305")]
    assert check() == found and linted == [mixin]
    assert check() == found and linted == [mixin]  # answered from the cache
    (project / "strategies" / "more.py").write_text(NEW_MIXER, encoding="utf-8")
    assert check() == [("strategies/updates/sgd.py", 31, "GL305")] and len(linted) == 2
    (project / "strategies" / "more.py").unlink()
    assert check() == found and len(linted) == 3
    init = project / "strategies" / "__init__.py"
    init.write_text(init.read_text(encoding="utf-8") + "\n" + NEW_MIXER.replace("from .", "from strategies."),
                    encoding="utf-8")
    assert check() == [("strategies/updates/sgd.py", 31, "GL305")] and len(linted) == 4
