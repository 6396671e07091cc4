"""The composite GitHub Action: its gradlint steps, run as GitHub would run them (bash, env, outputs)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from samples import BAD, GOOD

yaml = pytest.importorskip("yaml", reason="PyYAML (installed with pre-commit, in the test extra) reads action.yml")
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
STEPS = {step.get("name", step.get("uses")): step for step in ACTION["runs"]["steps"]}

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="the action's steps are bash scripts")


def run_step(name: str, cwd: Path, args: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run one ``run:`` step with the inputs GitHub would pass; return it and its outputs file."""
    outputs = cwd / "github_output"
    outputs.write_text("")
    env = {**os.environ, "GRADLINT_ARGS": args, "GRADLINT_SARIF": "gradlint.sarif", "GITHUB_OUTPUT": str(outputs),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    script = STEPS[name]["run"]
    result = subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=300)
    return result, outputs.read_text()


def test_action_is_composite_and_uploads_sarif() -> None:
    assert ACTION["runs"]["using"] == "composite"
    upload = STEPS["Upload SARIF"]
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@")
    assert upload["with"]["sarif_file"] == "${{ inputs.sarif-file }}"
    assert ACTION["inputs"]["sarif-file"]["default"] == "gradlint.sarif"


def test_sarif_step_writes_the_report_and_records_findings(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(BAD)
    result, outputs = run_step("Run gradlint (SARIF)", tmp_path, ". --select GL101")
    assert result.returncode == 0, result.stderr
    assert outputs == "exit-code=1\n"
    log = json.loads((tmp_path / "gradlint.sarif").read_text())
    assert [r["ruleId"] for r in log["runs"][0]["results"]] == ["GL101"]
    annotate, _ = run_step("Annotate and fail on findings", tmp_path, ". --select GL101")
    assert annotate.returncode == 1
    assert annotate.stdout.startswith("::error file=train.py,line=12,col=13,")


def test_sarif_step_on_a_clean_tree_and_on_a_bad_configuration(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(GOOD)
    result, outputs = run_step("Run gradlint (SARIF)", tmp_path, ".")
    assert (result.returncode, outputs) == (0, "exit-code=0\n")
    (tmp_path / "gradlint.toml").write_text("selekt = []\n")
    result, outputs = run_step("Run gradlint (SARIF)", tmp_path, ".")
    assert (result.returncode, outputs) == (2, "exit-code=2\n")
    assert "unknown key 'selekt'" in result.stderr
