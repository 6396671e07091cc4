"""The distribution: `python -m build` makes a wheel and an sdist that `twine check` accepts,
published as ``torch-gradlint``, and the installed wheel gives a working ``gradlint``.

The build runs without isolation (hatchling comes from the test extra), so no network is needed.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from conftest import ROOT

from gradlint.catalogue import CATALOGUE

DIST_NAME = "torch-gradlint"
BAD_LOOP = """\
import torch

def train(model, loader, optimizer, accumulation_steps):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accumulation_steps
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if (step + 1) % accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
                   check=True, capture_output=True, text=True)
    return out


def _wheel(dist: Path) -> Path:
    (wheel,) = dist.glob("*.whl")
    return wheel


def test_wheel_and_sdist_are_named_for_the_free_distribution_name(dist: Path) -> None:
    assert _wheel(dist).name.startswith("torch_gradlint-")
    (sdist,) = dist.glob("*.tar.gz")
    assert sdist.name.startswith("torch_gradlint-")
    with zipfile.ZipFile(_wheel(dist)) as wheel:
        metadata_name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(wheel.read(metadata_name).decode())
        entry_points = wheel.read(metadata_name.replace("METADATA", "entry_points.txt")).decode()
        names = wheel.namelist()
    assert metadata["Name"] == DIST_NAME
    assert "gradlint = gradlint.entry:main" in entry_points
    # `gradlint rule` and the SARIF help read every rule's document from the package
    assert {f"gradlint/docs/{code}.md" for code in CATALOGUE} <= set(names)
    with tarfile.open(sdist) as archive:
        assert any(member.endswith("/rules/GL101.md") for member in archive.getnames())


def test_twine_accepts_both(dist: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, dist.iterdir())],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("PASSED") == 2


def test_the_installed_wheel_runs(dist: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                    "--target", str(target), str(_wheel(dist))], check=True)
    script = tmp_path / "train.py"
    script.write_text(BAD_LOOP)
    # Only the installed copy may be importable as gradlint: run from tmp_path, not the checkout.
    env = {"PYTHONPATH": str(target), "PYTHONNOUSERSITE": "1", "NO_COLOR": "1"}
    probe = subprocess.run([sys.executable, "-c", "import gradlint; print(gradlint.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert probe.stdout.startswith(str(target))
    check = subprocess.run([sys.executable, "-m", "gradlint", "check", "--format", "text", "--no-cache", "train.py"],
                           cwd=tmp_path, env=env, capture_output=True, text=True)
    assert check.returncode == 1, check.stderr
    assert check.stdout.splitlines()[0].startswith("train.py:7:9: GL101 ")
    rule = subprocess.run([sys.executable, "-m", "gradlint", "rule", "GL101"],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    assert rule.returncode == 0 and "clip-per-micro-batch" in rule.stdout


def test_the_wheel_in_a_fresh_venv_gives_a_working_command(dist: Path, tmp_path: Path) -> None:
    """A new virtual environment, the wheel installed into it (its dependencies are this
    environment's, read through a path file: no network), and the ``gradlint`` script pip writes."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    "--no-index", str(_wheel(dist))], check=True)
    # appended after the venv's own folder, whose gradlint (the wheel's) therefore wins; a path
    # file's folder is not a site folder, so this checkout's editable install is not loaded
    Path(purelib, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    command = venv / "bin" / "gradlint"
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "NO_COLOR": "1", "PYTHONNOUSERSITE": "1"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(command), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    where = subprocess.run([str(python), "-c", "import gradlint; print(gradlint.__file__)"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(purelib)
    assert run("-V").stdout == "gradlint 0.1.0\n"
    helped = run("--help")
    assert helped.returncode == 0 and "check" in helped.stdout and "explain" in helped.stdout
    (tmp_path / "train.py").write_text(BAD_LOOP)
    checked = run("check", "--no-cache", "--format", "concise", "train.py")
    assert checked.returncode == 1, checked.stderr
    assert checked.stdout.splitlines()[0].startswith("train.py:7:9: GL101 [*] ")
    assert run("rule", "GL101").stdout.startswith("# GL101: clip-per-micro-batch")
