"""Ground truth on the user's machine: run MindSpeed's and megatron-core's own Python on a launch.

``check --upstream`` and the Hydra callback's ``upstream`` option call :func:`judge` after the normal check.
It runs, in a subprocess (MindSpeed's patches are process-wide), every role's build in the era's order:
``repatch`` with the dict verl passes, megatron's parallel state on a single-process fake group, the config
class the model bridge builds, megatron's layer assignment per stage and virtual chunk, the recompute forward
over identity layers, and MindSpeed's patch-registration scan. Modules that exist only on an NPU (or a CUDA)
machine are stand-ins when absent; an installed module is always the real one. No device is initialized.

Public: :func:`judge`, :func:`locate` (the sources), :func:`prepare` (the environment, ``upstream-env``),
:func:`providers` (Megatron-Bridge's own provider, run beside the megatron-core line it imports with),
:class:`Pool` (workers and the verdict cache, also driven by the project's conformance tests).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

from ..i18n import default_lang, render, tr
from ._bridge_layer import BRIDGE_ONLY, LAYERS, ensure_layer, providers
from ._case import case_of, model_kwargs
from ._env import ensure, envs_dir, python_for, ready, requirements
from ._findings import HARNESS, RULE, UNAVAILABLE, findings, unavailable
from ._pool import Pool, Worker, WorkerError
from ._provider import bridge_verdict, executed_values, model_folder, warm
from ._sources import LINES, SourceError, Sources, cache_root, extract, locate

__all__ = ["BRIDGE_ONLY", "HARNESS", "LAYERS", "LINES", "Pool", "RULE", "SourceError", "Sources", "UNAVAILABLE",
           "Worker", "WorkerError", "cache_root", "case_of", "ensure", "ensure_layer", "envs_dir", "extract", "judge",
           "launch_case", "locate", "model_kwargs", "prepare", "providers", "python_for", "ready", "requirements",
           "warm"]

_POOL: Optional[Pool] = None


def _stderr(text: Any) -> None:
    print(f"verl-mindspeed: {render(text, default_lang())}", file=sys.stderr, flush=True)


def prepare(line: str, progress: Callable[[Any], None] = _stderr) -> Path:
    """Build (once) the environment for a megatron-core line, and the Megatron-Bridge layer beside it where a
    release imports with that line; its python. A bridge-only line (:data:`BRIDGE_ONLY`) is the bridge's own
    environment."""
    if line in BRIDGE_ONLY:
        return ensure_layer(line, progress) / "bin" / "python"
    python = ensure(line, progress)
    if line in LAYERS:
        ensure_layer(line, progress)
    return python


def launch_case(res: Any, line: str, progress: Callable[[Any], None] = _stderr) -> tuple[dict, dict, list]:
    """The worker's case for a resolved launch on ``line``, built on the executed bridge's values where that bridge
    runs beside the line (:mod:`._provider`): (case, ``{role: values}``, the notes on what the bridge ran)."""
    sim = res.simulation
    values: dict = {}
    issues: list = []
    if res.model is not None:
        values, issues = executed_values(sim, line, model_folder(getattr(res, "model_dir", None)), progress)
    return case_of(sim, res.model, values), values, issues


def judge(res: Any, *, mindspeed_src: Optional[str] = None, megatron_src: Optional[str] = None,
          megatron_core: Optional[str] = None, python: Optional[str] = None, sources: Optional[Sources] = None,
          pool: Optional[Pool] = None, progress: Callable[[Any], None] = _stderr) -> None:
    """Run upstream on a resolved launch and add its findings to ``res.issues``; ``res.upstream`` records
    what ran. Raises :class:`SourceError` when the sources or the interpreter cannot be found."""
    global _POOL
    src = sources or locate(mindspeed_src, megatron_src, megatron_core)
    sim = res.simulation
    info: dict[str, Any] = {"release": src.release, "mindspeed": str(src.mindspeed), "megatron": str(src.megatron),
                            "megatron_core": src.line, "megatron_core_from": src.line_from}
    if src.unrunnable:
        res.upstream = {**info, "verdict": "not-run", "seconds": 0.0, "unrunnable": list(src.unrunnable)}
        res.issues = [*res.issues, unavailable(src, sim)]
        if sim is not None and sim.order:
            model_dir = model_folder(getattr(res, "model_dir", None)) if res.model is not None else None
            res.issues = [*res.issues, *bridge_verdict(sim, src.release, src.line, res.model, model_dir, progress)]
        return
    exe, exe_from = python_for(src.line, python, progress)
    info.update(python=str(exe), python_from=exe_from)
    if sim is None or not sim.order:
        res.upstream = {**info, "verdict": "not-run", "seconds": 0.0}
        return
    case, values, bridge_issues = launch_case(res, src.line, progress)
    if values:
        info["bridge"] = {"line": src.line, "package": " ".join(LAYERS[src.line][:2]), "values": values}
    if pool is None:
        _POOL = _POOL or Pool()
        pool = _POOL
    start = time.perf_counter()
    cached = pool.cached(src, exe, case) is not None
    if not cached:
        progress(tr("running MindSpeed {release} on this launch (a few seconds)", release=src.release))
    try:
        verdict = pool.run(src, exe, [case])[0]
    except WorkerError as exc:
        verdict = {"verdict": "harness-error", "exc_type": "WorkerError", "message": f"{exc}: {exc.detail[-300:]}"}
    seconds = time.perf_counter() - start
    hand = list(res.issues)
    res.issues = [*hand, *findings(verdict, sim, release=src.release, line=src.line, hand=hand,
                                   model_known=res.model is not None, seconds=seconds, cached=cached), *bridge_issues]
    res.upstream = {**info, "verdict": verdict.get("verdict"), "seconds": round(seconds, 3), "cached": cached,
                    "detail": {k: verdict[k] for k in ("stage", "role", "exc_type", "message", "where", "unapplied")
                               if k in verdict}}
