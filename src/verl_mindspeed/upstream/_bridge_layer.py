"""Megatron-Bridge itself, run on CPU: a layer next to a megatron-core line's environment, and the provider it builds.

The layer is a folder installed with ``pip --target`` by that environment's own pip (Megatron-Bridge without its
dependencies, then transformers and the two small packages its import needs), put on ``PYTHONPATH`` only for a
provider run: the MindSpeed environment itself never sees transformers (see :mod:`._env`). Megatron-Bridge 0.3.1
imports with megatron-core 0.16.1 (0.4+ need 0.17/0.18 and Python 3.12, which this machine's package index serves
with a ~7 GB CUDA torch only).

:func:`provider` runs ``_bridge_probe.py`` in that environment: the provider for a HF model folder, overridden the
way verl 0.9.1's ``_build_tf_config`` overrides it, finalized, and the values asked for.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

from ..i18n import tr
from ._env import ensure, envs_dir

#: megatron-core line -> (Megatron-Bridge release, what its import needs besides megatron-core and torch).
LAYERS = {"0.16.1": ("0.3.1", ("transformers<5", "rich", "omegaconf"))}
PROBE = Path(__file__).resolve().parent / "_bridge_probe.py"


def layer_dir(line: str) -> Path:
    return envs_dir() / f"mcore-{line}-megatron-bridge-{LAYERS[line][0]}"


def _marker(line: str) -> str:
    bridge, needs = LAYERS[line]
    return "\n".join([f"megatron-bridge=={bridge}", *needs])


def layer_ready(line: str) -> bool:
    marker = layer_dir(line) / "layer-requirements.txt"
    return marker.exists() and marker.read_text() == _marker(line)


def ensure_layer(line: str, progress: Callable[[Any], None] = lambda text: None) -> Path:
    """The layer folder for ``line``, installed (with a progress line, pip's output kept out) if missing or stale."""
    if layer_ready(line):
        return layer_dir(line)
    python = ensure(line, progress)
    bridge, needs = LAYERS[line]
    path = layer_dir(line)
    progress(tr("installing Megatron-Bridge {bridge} beside megatron-core {line} in {path} (once, about a minute)",
                bridge=bridge, line=line, path=path))
    start = time.monotonic()
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--upgrade", "--target", str(path)]
    for args in ([*pip, "--no-deps", f"megatron-bridge=={bridge}"], [*pip, *needs]):
        done = subprocess.run(args, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)}: {done.stderr[-2000:]}")
    (path / "layer-requirements.txt").write_text(_marker(line))
    progress(tr("Megatron-Bridge layer ready in {seconds} s", seconds=round(time.monotonic() - start)))
    return path


def providers(line: str, requests: list[dict[str, Any]],
              progress: Callable[[Any], None] = lambda text: None) -> list[dict[str, Any]]:
    """Megatron-Bridge's provider for each request (``{"model_dir", "overrides", "keys"}``), the overrides applied as
    verl 0.9.1 applies them, in one process: ``{"class": ..., "values": {key: value}, "error": None}``, or with the
    exception the overrides or ``finalize`` raised (``"error": {"type", "message", "file", "line"}``)."""
    layer = ensure_layer(line, progress)
    python = ensure(line, progress)
    env = {**os.environ, "PYTHONPATH": str(layer), "PYTHONWARNINGS": "ignore"}
    request = json.dumps([{"model_dir": r["model_dir"], "overrides": r.get("overrides") or {},
                           "keys": list(r.get("keys") or ())} for r in requests])
    done = subprocess.run([str(python), str(PROBE)], input=request, capture_output=True, text=True, env=env,
                          timeout=600)
    lines = [x for x in done.stdout.splitlines() if x.startswith("[")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"the Megatron-Bridge probe failed: {done.stderr[-3000:]}")
    return json.loads(lines[-1])


__all__ = ["LAYERS", "ensure_layer", "layer_dir", "layer_ready", "providers"]
