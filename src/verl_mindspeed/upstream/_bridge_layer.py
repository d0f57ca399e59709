"""The model bridges themselves, run on CPU: a layer next to a megatron-core line's environment, and the config each
builds (Megatron-Bridge's provider beside 0.16.1, mbridge's TransformerConfig beside 0.12.1).

The layer is a folder installed with ``pip --target`` by that environment's own pip (the bridge without its
dependencies, then transformers and the small packages its import needs), put on ``PYTHONPATH`` only for a
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
from ._env import _run, ensure, envs_dir

#: megatron-core line -> (bridge package, its release, what its import needs besides megatron-core and torch):
#: Megatron-Bridge beside 0.16.1 (the line core_r0.16.0 runs on), mbridge beside 0.12.1 (the only bridge that
#: imports there; verl's vanilla_mbridge=True path).
LAYERS = {"0.16.1": ("megatron-bridge", "0.3.1", ("transformers<5", "rich", "omegaconf")),
          "0.12.1": ("mbridge", "0.15.1", ("transformers<5",))}
PROBE = Path(__file__).resolve().parent / "_bridge_probe.py"


def layer_dir(line: str) -> Path:
    dist, version, _ = LAYERS[line]
    return envs_dir() / f"mcore-{line}-{dist}-{version}"


def _marker(line: str) -> str:
    dist, version, needs = LAYERS[line]
    return "\n".join([f"{dist}=={version}", *needs])


def layer_ready(line: str) -> bool:
    marker = layer_dir(line) / "layer-requirements.txt"
    return marker.exists() and marker.read_text() == _marker(line)


def ensure_layer(line: str, progress: Callable[[Any], None] = lambda text: None) -> Path:
    """The layer folder for ``line``, installed (with a progress line, pip's output kept out) if missing or stale."""
    if layer_ready(line):
        return layer_dir(line)
    python = ensure(line, progress)
    dist, version, needs = LAYERS[line]
    path = layer_dir(line)
    bridge = f"{dist} {version}"
    progress(tr("installing {bridge} beside megatron-core {line} in {path} (once, about a minute)", bridge=bridge,
                line=line, path=path))
    start = time.monotonic()
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--upgrade", "--target", str(path)]
    for args in ([*pip, "--no-deps", f"{dist}=={version}"], [*pip, *needs]):
        _run(args)
    (path / "layer-requirements.txt").write_text(_marker(line))
    progress(tr("bridge layer ready in {seconds} s", seconds=round(time.monotonic() - start)))
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
                           "groups": r.get("groups") or {}, "keys": list(r.get("keys") or ())}
                          for r in requests])
    done = subprocess.run([str(python), str(PROBE), LAYERS[line][0]], input=request, capture_output=True, text=True,
                          env=env, timeout=600)
    lines = [x for x in done.stdout.splitlines() if x.startswith("[")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"the Megatron-Bridge probe failed: {done.stderr[-3000:]}")
    return json.loads(lines[-1])


__all__ = ["LAYERS", "ensure_layer", "layer_dir", "layer_ready", "providers"]
