"""The loss-contract, AMP-scaler and training-state rules (GL205, GL206, GL306, GL307, GL501,
GL502) in every output format, through the real CLI: each format names each code at its line,
with the level its severity maps to (info: SARIF ``note``, GitHub ``notice``, GitLab ``info``)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from samples import gradlint

SOURCE = '''\
import torch
import torch.nn as nn
from transformers import Trainer


class FocalTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        return focal(model(**inputs).logits, labels)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))


def train_step(model, batch, optimizer):
    mask = batch["labels"] != -100
    loss = (model(batch) * mask).sum() / mask.sum()
    loss.backward()


def train(loader, optimizer, scheduler, accum, path):
    model = Net()
    for i, (x, y) in enumerate(loader):
        scaler = torch.cuda.amp.GradScaler()
        with torch.autocast("cuda"):
            loss = model(x, y) / accum
        scaler.scale(loss).backward()
        if (i + 1) % accum == 0 or i + 1 == len(loader):
            scaler.step(optimizer)
            scheduler.step()
            optimizer.zero_grad()
        scaler.update()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
'''
SELECT = "GL205,GL206,GL306,GL307,GL501,GL502"
EXPECTED = {("GL205", 7, "warning"), ("GL502", 15, "info"), ("GL206", 20, "warning"), ("GL306", 27, "error"),
            ("GL307", 35, "error"), ("GL501", 36, "warning")}
SARIF = {"error": "error", "warning": "warning", "info": "note"}
GITHUB = {"error": "error", "warning": "warning", "info": "notice"}
GITLAB = {"error": "major", "warning": "minor", "info": "info"}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(SOURCE, encoding="utf-8")
    return tmp_path


def _check(*args: str) -> str:
    result = gradlint("check", "--select", SELECT, "--no-cache", *args, "train.py")
    assert result.exit_code == 1, result.output
    return result.stdout


def test_json_and_json_lines(project: Path) -> None:
    found = {(d["code"], d["line"], d["severity"]) for d in json.loads(_check("--format", "json"))}
    assert found == EXPECTED
    lines = [json.loads(line) for line in _check("--format", "json-lines").splitlines()]
    assert {(d["code"], d["line"], d["severity"]) for d in lines} == EXPECTED


@pytest.mark.parametrize("fmt", ["text", "concise", "full"])
def test_text_formats(project: Path, fmt: str) -> None:
    out = _check("--format", fmt)
    for code, line, _ in EXPECTED:
        assert any(row.startswith(f"train.py:{line}:") and f" {code} " in row for row in out.splitlines()), (code, out)


def test_sarif_levels(project: Path) -> None:
    results = json.loads(_check("--format", "sarif"))["runs"][0]["results"]
    found = {(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"], r["level"]) for r in results}
    assert found == {(code, line, SARIF[severity]) for code, line, severity in EXPECTED}


def test_github_annotations(project: Path) -> None:
    found = set()
    for row in _check("--format", "github").splitlines():
        level, _, rest = row[2:].partition(" ")
        fields = dict(part.split("=", 1) for part in rest.split("::", 1)[0].split(","))
        found.add((fields["title"].split(" ")[0], int(fields["line"]), level))
    assert found == {(code, line, GITHUB[severity]) for code, line, severity in EXPECTED}


def test_gitlab_code_quality(project: Path) -> None:
    issues = json.loads(_check("--format", "gitlab"))
    found = {(i["check_name"].split(" ")[0], i["location"]["lines"]["begin"], i["severity"]) for i in issues}
    assert found == {(code, line, GITLAB[severity]) for code, line, severity in EXPECTED}


def test_junit(project: Path) -> None:
    root = ET.fromstring(_check("--format", "junit"))
    types = sorted(f.get("type") for f in root.iter("failure"))
    assert types == sorted(code for code, _, _ in EXPECTED)
