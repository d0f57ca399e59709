"""The code style as a contract: ``ruff check`` with pyproject.toml's ``[tool.ruff]`` settings passes on the
whole repository."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import full_stack

ROOT = Path(__file__).resolve().parents[2]


def test_ruff_finds_nothing():
    if importlib.util.find_spec("ruff") is None:
        reason = 'ruff is not installed in this environment (pip install "ruff>=0.6", or the [test] extra)'
        if full_stack():
            pytest.fail(f"{reason}; it must be under tools/test.sh (VERL_MINDSPEED_FULL_STACK=1)")
        pytest.skip(reason)
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", str(ROOT)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, f"ruff check failed:\n{proc.stdout[-8000:]}{proc.stderr[-2000:]}"
