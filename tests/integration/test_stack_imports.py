"""The stack facts that were established by running code, run again: Megatron-Bridge 0.3.1 (from the package index)
imported next to megatron-core 0.12.1, the line MindSpeed 2.x/26.x patches, stops where stack.py says it does."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


def test_megatron_bridge_0_3_does_not_import_on_megatron_core_0_12(tmp_path):
    pytest.importorskip("megatron.core")
    import megatron.core

    if not megatron.core.__version__.startswith("0.12."):
        pytest.skip(f"needs megatron-core 0.12.x (installed: {megatron.core.__version__})")
    target = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                           "--target", str(target), "megatron-bridge==0.3.1"], capture_output=True, text=True,
                          timeout=600)
    if proc.returncode != 0:
        pytest.skip(f"megatron-bridge 0.3.1 could not be downloaded here: {proc.stderr[-500:]}")
    code = "import sys; sys.path.insert(0, sys.argv[1]); from megatron.bridge import AutoBridge"
    run = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True, text=True, timeout=600)
    assert run.returncode != 0
    assert "ModuleNotFoundError: No module named 'megatron.core.activations'" in run.stderr
    assert "megatron/bridge/models/conversion/model_bridge.py\", line 39" in run.stderr

    from verl_mindspeed.stack import bridge_imports_with

    assert not bridge_imports_with("0.3.1", megatron.core.__version__) and bridge_imports_with("0.3.1", "0.16.1")
