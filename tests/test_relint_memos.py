"""Re-lints of an edited text, as the language server makes them (one project index, unit
models, listings and generated texts kept across lints): every edit gives the edited text's
findings, never those of a kept memo."""

from __future__ import annotations

from pathlib import Path

from samples import BAD

from gradlint.engine import Reads, lint_source
from gradlint.project.index import ProjectIndex
from gradlint.settings import default_settings

OTHER = '''

def evaluate(model, loader):
    with torch.no_grad():
        return sum(model(x).item() for x in loader)
'''


def _findings(project: ProjectIndex, path: Path, text: str) -> list[tuple[int, str, str]]:
    project.use_text(path, text)
    found = lint_source(text, str(path), default_settings(), project=project, reads=Reads())
    return [(d.span.line, d.code, d.message) for d in found]


def test_each_edit_gives_the_findings_of_the_edited_text(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    path = tmp_path / "train.py"
    original = BAD + OTHER
    path.write_text(original, encoding="utf-8")
    project = ProjectIndex()
    renamed = original.replace("scheduler", "sched")
    unclipped = original.replace("            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)\n", "")
    clip = "torch.nn.utils.clip_grad_norm_() runs on every micro-batch; clip once, just before optimizer.step()"
    first = _findings(project, path, original)
    assert first == [
        (12, "GL101", clip),
        (13, "GL104", "scheduler.step() runs on every micro-batch; step it once per update, right after optimizer.step()"),
    ]
    assert _findings(project, path, renamed) == [
        (12, "GL101", clip),
        (13, "GL104", "sched.step() runs on every micro-batch; step it once per update, right after optimizer.step()"),
    ]
    assert _findings(project, path, unclipped) == [
        (12, "GL104", "scheduler.step() runs on every micro-batch; step it once per update, right after optimizer.step()"),
    ]
    assert _findings(project, path, original) == first
