"""The model bridges themselves, run on CPU: a layer next to a megatron-core line's environment, and the config each
builds (Megatron-Bridge's provider beside 0.16.1 and 0.18.2, mbridge's TransformerConfig beside 0.12.1).

On the MindSpeed lines (0.12.1, 0.16.1) the layer is a folder installed with ``pip --target`` by that environment's
own pip (the bridge without its dependencies, then transformers and the small packages its import needs), put on
``PYTHONPATH`` only for a provider run: the MindSpeed environment itself never sees transformers (see :mod:`._env`).
Megatron-Bridge 0.3.1 imports with megatron-core 0.16.1; 0.4+ need 0.17/0.18 and Python 3.12.

The 0.18.2 line (Megatron-Bridge 0.5.1, the stack verl documents with MindSpeed core_r0.18.0) is a bridge-only
environment (:data:`BRIDGE_ONLY`): Python 3.12, whose only torch on the package index is the CUDA build (it imports
on CPU; about 7 GB with its ``nvidia-*`` wheels, two to three minutes to build), megatron-core 0.18.2, then the
bridge and what its import needs, in the environment itself. No MindSpeed runs there: core_r0.18.0 imports
``megatron_adaptor``, which is not on the package index (``_sources.unrunnable``).

:func:`providers` runs ``_bridge_probe.py`` in that environment: the provider for a HF model folder, overridden the
way verl 0.9.1's ``_build_tf_config`` overrides it, finalized, and the values asked for.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

from ..i18n import tr
from ._env import _run, ensure, envs_dir
from ._sources import SourceError

#: megatron-core line -> (bridge package, its release, what its import needs besides megatron-core and torch):
#: Megatron-Bridge beside 0.16.1 (the line core_r0.16.0 runs on), mbridge beside 0.12.1 (the only bridge that
#: imports there; verl's vanilla_mbridge=True path).
LAYERS = {"0.16.1": ("megatron-bridge", "0.3.1", ("transformers<5", "rich", "omegaconf")),
          "0.12.1": ("mbridge", "0.15.1", ("transformers<5",)),
          "0.18.2": ("megatron-bridge", "0.5.1", ("transformers>=5.8.1,<5.9", "rich", "omegaconf", "nvidia-modelopt",
                                                  "requests"))}
#: Lines with no MindSpeed environment: the bridge's own environment, (Python, what is installed before the bridge).
#: torch 2.9.1 is the release megatron-core 0.18.2 resolves to on Python 3.12 (CUDA build; imports on CPU).
BRIDGE_ONLY = {"0.18.2": ("3.12", ("torch==2.9.1", "megatron-core==0.18.2", "psutil", "einops"))}
PROBE = Path(__file__).resolve().parent / "_bridge_probe.py"


def layer_dir(line: str) -> Path:
    dist, version, _ = LAYERS[line]
    if line in BRIDGE_ONLY:
        return envs_dir() / f"mcore-{line}-py{BRIDGE_ONLY[line][0]}-{dist}-{version}"
    return envs_dir() / f"mcore-{line}-{dist}-{version}"


def _marker(line: str) -> str:
    dist, version, needs = LAYERS[line]
    base = BRIDGE_ONLY[line][1] if line in BRIDGE_ONLY else ()
    return "\n".join([*base, f"{dist}=={version}", *needs])


def layer_ready(line: str) -> bool:
    marker = layer_dir(line) / "layer-requirements.txt"
    return marker.exists() and marker.read_text() == _marker(line)


def python_of_version(version: str) -> Path:
    """An interpreter of this Python version: ``VERL_MINDSPEED_PYTHON<major><minor>``, ``python<version>`` on PATH, or
    pyenv's; else a :class:`SourceError` saying how to name one."""
    var = f"VERL_MINDSPEED_PYTHON{version.replace('.', '')}"
    pyenv = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates = [os.environ.get(var), shutil.which(f"python{version}"),
                  *sorted(glob.glob(f"{pyenv}/versions/{version}.*/bin/python{version}"), reverse=True)]
    for found in filter(None, candidates):  # a pyenv shim of a version not selected is on PATH but does not run
        if subprocess.run([found, "-c", "pass"], capture_output=True).returncode == 0:
            return Path(found)
    raise SourceError(tr("Python {version} is needed for this bridge and was not found; name it with {var}",
                         version=version, var=var))


def _layer_python(line: str) -> Path:
    return layer_dir(line) / "bin" / "python" if line in BRIDGE_ONLY else ensure(line)


def ensure_layer(line: str, progress: Callable[[Any], None] = lambda text: None) -> Path:
    """The layer folder for ``line``, installed (with a progress line, pip's output kept out) if missing or stale."""
    if layer_ready(line):
        return layer_dir(line)
    dist, version, needs = LAYERS[line]
    path = layer_dir(line)
    bridge = f"{dist} {version}"
    start = time.monotonic()
    if line in BRIDGE_ONLY:
        python_version, base = BRIDGE_ONLY[line]
        progress(tr("building a Python {python} environment for {bridge} on megatron-core {line} in {path} (once, "
                    "about 7 GB: the only torch for Python {python} is the CUDA build)", python=python_version,
                    bridge=bridge, line=line, path=path))
        _run([str(python_of_version(python_version)), "-m", "venv", "--clear", str(path)])
        pip = [str(path / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        for args in ([*pip, *base], [*pip, "--no-deps", f"{dist}=={version}"], [*pip, *needs]):
            _run(args)
    else:
        python = ensure(line, progress)
        progress(tr("installing {bridge} beside megatron-core {line} in {path} (once, about a minute)", bridge=bridge,
                    line=line, path=path))
        pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--upgrade", "--target",
               str(path)]
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
    python = _layer_python(line)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    if line not in BRIDGE_ONLY:
        env["PYTHONPATH"] = str(layer)
    request = json.dumps([{"model_dir": r["model_dir"], "overrides": r.get("overrides") or {},
                           "groups": r.get("groups") or {}, "keys": list(r.get("keys") or ())}
                          for r in requests])
    done = subprocess.run([str(python), str(PROBE), LAYERS[line][0]], input=request, capture_output=True, text=True,
                          env=env, timeout=600)
    lines = [x for x in done.stdout.splitlines() if x.startswith("[")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"the Megatron-Bridge probe failed: {done.stderr[-3000:]}")
    return json.loads(lines[-1])


__all__ = ["BRIDGE_ONLY", "LAYERS", "ensure_layer", "layer_dir", "layer_ready", "providers", "python_of_version"]
