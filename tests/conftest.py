"""Shared test fixtures.

Tests that need the heavy stack (verl, megatron-core, torch, ray) call
``require("module")``: on a developer laptop without it they skip, but under
``.ci/run`` (``VERL_MINDSPEED_FULL_STACK=1``) a missing module is a failure, so
CI can never pass by skipping the real-component tests.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CORPUS = Path(os.environ.get("VERL_MINDSPEED_CORPUS", SHARED / "corpus" / "real-scripts"))
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def require(module: str):
    """Import ``module``; skip when absent, except under CI where absence fails the test."""
    try:
        return importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - any import failure means "not available"
        if os.environ.get("VERL_MINDSPEED_FULL_STACK") == "1":
            pytest.fail(f"{module} must be importable under .ci/run: {exc!r}")
        pytest.skip(f"{module} not importable here: {exc!r}")


@pytest.fixture(autouse=True)
def _reset_hydra():
    """Hydra keeps global state; clear it around every test."""
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    yield
    GlobalHydra.instance().clear()
