"""The property tests run derandomized with a fixed budget under CI, and a test's own
``max_examples`` still wins over the profile's."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import PROFILE, ROOT, hypothesis_profile
from hypothesis import settings
from test_reliability_cli import FUZZ


def test_the_loaded_profile_is_the_one_the_environment_asks_for() -> None:
    assert PROFILE == hypothesis_profile(os.environ)
    assert settings.default == settings.get_profile(PROFILE)


@pytest.mark.parametrize(("environ", "profile"), [
    ({"CI": "true"}, "ci"), ({"CI": "1"}, "ci"), ({"CI": "True"}, "ci"),
    ({}, "dev"), ({"CI": ""}, "dev"), ({"CI": "false"}, "dev"), ({"CI": "0"}, "dev")])
def test_the_ci_variable_chooses_the_profile(environ: dict[str, str], profile: str) -> None:
    assert hypothesis_profile(environ) == profile


def test_the_profiles() -> None:
    ci = settings.get_profile("ci")
    assert (ci.derandomize, ci.max_examples, ci.deadline, ci.print_blob, ci.database) == (True, 50, None, True, None)
    dev = settings.get_profile("dev")
    assert (dev.derandomize, dev.max_examples, dev.deadline, dev.print_blob) == (False, 50, None, True)
    assert dev.database is not None


def test_a_test_s_own_budget_wins() -> None:
    assert FUZZ.max_examples == 120


def test_ci_true_loads_the_ci_profile() -> None:
    probe = "import conftest; from hypothesis import settings; print(settings.default.derandomize)"
    env = {**os.environ, "CI": "true", "PYTHONPATH": str(ROOT / "tests")}
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout == "True\n"
