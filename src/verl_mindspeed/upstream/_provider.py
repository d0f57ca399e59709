"""The model bridge of each role executed for ``check --upstream``: its own values, and on the bridge-only line its
verdict on the overrides verl hands it.

- **Values** (megatron-core 0.16.1 with Megatron-Bridge 0.3.1, 0.12.1 with mbridge 0.15.1): the provider (or
  mbridge's config) is built for the launch's model folder and its values for :data:`PROVIDER_KEYS` replace what
  verl's converter would say, before the bridge view and the role's dict; the MindSpeed run then builds the config
  class with them, under MindSpeed's patches. No verdict comes from this step alone.
- **Verdict** (megatron-core 0.18.2 with Megatron-Bridge 0.5.1, the stack of MindSpeed core_r0.18.0, which cannot
  run here): the overrides verl 0.9.1 hands ``apply_overrides_and_finalize`` (:func:`provider_overrides`), without
  the keys of MindSpeed's argument namespace (on that stack megatron_adaptor decides whether the provider takes them;
  nothing here stands in for it). An AttributeError is an error; an exception of ``finalize`` is a warning, since
  MindSpeed's patches, absent here, may change that check.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any, Callable, Optional

from ..errors import Issue
from ..i18n import tr
from ..rules._base import error, note, warning
from ..simulate import MBRIDGE, MEGATRON_BRIDGE, Simulation
from ..stack import argument_namespace, provider_fields
from ._bridge_layer import BRIDGE_ONLY, LAYERS, layer_ready, providers
from ._sources import cache_root

RULE = "upstream-bridge"

#: The provider values taken from the executed bridge where verl's converter may say otherwise: the rope, the
#: fusions MindSpeed's fused kernels hang on, the softmax precision and the sequence length.
PROVIDER_KEYS = ("position_embedding_type", "seq_length", "moe_permute_fusion", "bias_activation_fusion",
                 "bias_dropout_fusion", "persist_layer_norm", "masked_softmax_fusion", "apply_rope_fusion",
                 "attention_softmax_in_fp32", "gradient_accumulation_fusion", "moe_grouped_gemm")

_SIZES = (("tensor_model_parallel_size", 1), ("pipeline_model_parallel_size", 1), ("expert_model_parallel_size", 1),
          ("expert_tensor_parallel_size", None), ("context_parallel_size", 1))


def provider_overrides(megatron: Any, given: Any) -> dict[str, Any]:
    """What verl 0.9.1's ``_build_tf_config`` hands the provider (verl/workers/engine/megatron/transformer_impl.py
    lines 354-372): the engine's sizes, its sequence_parallel (off at TP 1, verl/workers/config/engine.py line 236),
    verl's fixed values, then the role's dict over them."""
    vpp = megatron.get("virtual_pipeline_model_parallel_size")
    out: dict[str, Any] = {name: megatron.get(name, default) for name, default in _SIZES}
    tp = out["tensor_model_parallel_size"]
    out["sequence_parallel"] = bool(megatron.get("sequence_parallel", True)) and isinstance(tp, int) and tp > 1
    out.update({"virtual_pipeline_model_parallel_size": vpp,
                "overlap_p2p_comm": isinstance(vpp, int) and vpp > 1, "batch_p2p_comm": False,
                "variable_seq_lengths": True, "attention_backend": "flash", "moe_token_dispatcher_type": "alltoall",
                "moe_router_load_balancing_type": "none"})
    out.update(given)
    return out


def model_folder(path: Optional[str]) -> Optional[str]:
    """A folder holding the model's ``config.json`` (a copy in the cache when ``path`` is a file of another name)."""
    if not path:
        return None
    file = Path(path)
    if file.is_dir():
        return str(file) if (file / "config.json").is_file() else None
    if file.name == "config.json":
        return str(file.parent)
    folder = cache_root() / "model-configs" / hashlib.sha256(str(file.resolve()).encode()).hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(file, folder / "config.json")
    return str(folder)


def _cache_file(line: str, request: dict[str, Any]) -> Path:
    digest = hashlib.sha256(json.dumps([line, LAYERS[line], request], sort_keys=True).encode())
    digest.update((Path(request["model_dir"]) / "config.json").read_bytes())
    return cache_root() / "bridge-runs" / f"{digest.hexdigest()[:32]}.json"


def _cached_providers(line: str, requests: list[dict[str, Any]],
                      progress: Callable[[Any], None]) -> list[dict[str, Any]]:
    """:func:`providers`, each answer kept in the cache folder, keyed by the line's layer, the request and the model
    config it reads: the requests not yet answered run in one process, and a repeated check starts nothing."""
    files = [_cache_file(line, r) for r in requests]
    todo = [i for i, f in enumerate(files) if not f.is_file()]
    if todo:
        for i, run in zip(todo, providers(line, [requests[i] for i in todo], progress)):
            files[i].parent.mkdir(parents=True, exist_ok=True)
            files[i].write_text(json.dumps(run))
    return [json.loads(f.read_text()) for f in files]


def _value_request(model_dir: str) -> dict[str, Any]:
    return {"model_dir": model_dir, "overrides": {}, "keys": list(PROVIDER_KEYS)}


def warm(line: str, model_dirs: list[str], progress: Callable[[Any], None] = lambda text: None) -> None:
    """Run the bridge of ``line`` once for every model folder not yet in the cache (one process for all)."""
    if line in LAYERS and line not in BRIDGE_ONLY:
        _cached_providers(line, [_value_request(d) for d in model_dirs], progress)


def _json_safe(values: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(values, default=str))


def executed_values(sim: Simulation, line: str, model_dir: Optional[str],
                    progress: Callable[[Any], None]) -> tuple[dict[str, dict[str, Any]], list[Issue]]:
    """``{role: the executed bridge's values for PROVIDER_KEYS}`` for the roles whose bridge runs beside ``line``,
    and a note saying what ran (or why nothing did)."""
    kind = {"megatron-bridge": MEGATRON_BRIDGE, "mbridge": MBRIDGE}[LAYERS[line][0]] if line in LAYERS else None
    roles = [name for name in sim.order if sim.builds[name].bridge_kind == kind]
    if not roles or line in BRIDGE_ONLY:
        return {}, []
    key = sim.builds[roles[0]].otc_path
    bridge = f"{LAYERS[line][0]} {LAYERS[line][1]}"
    if model_dir is None:
        return {}, [note(key, tr("upstream: {bridge} was not run (no model config.json; give --model-config): the "
                                 "config build used verl's converter's values", bridge=bridge), RULE)]
    runs = _cached_providers(line, [_value_request(model_dir)], progress) * len(roles)
    out: dict[str, dict[str, Any]] = {}
    for name, run in zip(roles, runs):
        if run["error"] is None:
            out[name] = {k: v for k, v in run["values"].items() if v != "<absent>"}
    failed = [(name, run["error"]) for name, run in zip(roles, runs) if run["error"] is not None]
    issues = [warning(sim.builds[name].otc_path, tr(
        "upstream: {bridge} could not build the config of {role} for this model: {type}: {message}", bridge=bridge,
        role=name, type=err["type"], message=err["message"]), RULE, source=f"{err['file']}:{err['line']}")
        for name, err in failed]
    issues.append(note(key, tr("upstream: {bridge} executed on megatron-core {line} for {roles}; the config build "
                               "took its values ({keys})", bridge=bridge, line=line, roles=", ".join(out) or "-",
                               keys=", ".join(PROVIDER_KEYS)), RULE))
    return {name: _json_safe(values) for name, values in out.items()}, issues


def held_back(release: str, line: str, mla: bool) -> frozenset[str]:
    """The keys not sent to the bridge-only line's provider: MindSpeed's argument namespace less the provider's
    fields; megatron_adaptor decides them there (the hand rule ``bridge-refuses-unknown`` notes the same keys)."""
    return argument_namespace(release) - provider_fields(line, LAYERS[line][1], mla)


def bridge_verdict(sim: Simulation, release: str, line: str, model: Any, model_dir: Optional[str],
                   progress: Callable[[Any], None]) -> list[Issue]:
    """On a bridge-only line (MindSpeed cannot run): Megatron-Bridge driven as verl 0.9.1 drives it, per role."""
    near = next((name for name in BRIDGE_ONLY if name.split(".")[:2] == line.split(".")[:2]), None)
    roles = [name for name in sim.order if sim.builds[name].bridge_kind == MEGATRON_BRIDGE]
    if near is None or not roles:
        return []
    key = sim.builds[roles[0]].otc_path
    bridge = f"Megatron-Bridge {LAYERS[near][1]}"
    if model_dir is None:
        return [note(key, tr("upstream: {bridge} was not run (no model config.json; give --model-config)",
                             bridge=bridge), RULE)]
    if not layer_ready(near):
        return [note(key, tr("upstream: {bridge} on megatron-core {line} can judge this launch's overrides once its "
                             "environment is built: verl-mindspeed upstream-env {line} (once, about 7 GB)",
                             bridge=bridge, line=near), RULE)]
    held_keys = held_back(release, near, model.is_mla)
    groups: dict[str, list[str]] = {}  # roles handed the same overrides (a ref inheriting the actor's dict) run once
    held: dict[str, list[str]] = {}
    for name in roles:
        build = sim.builds[name]
        given = {k: v for k, v in build.given.items() if k not in held_keys}
        held[name] = sorted(set(build.given) - set(given))
        request = {"model_dir": model_dir, "overrides": _json_safe(provider_overrides(build.megatron, given)),
                   "keys": []}
        groups.setdefault(json.dumps(request, sort_keys=True), []).append(name)
    issues: list[Issue] = []
    runs = _cached_providers(near, [json.loads(text) for text in groups], progress)
    for members, run in zip(groups.values(), runs):
        name = "actor" if "actor" in members else members[0]  # filed where the user wrote the dict
        build, err, who = sim.builds[name], run["error"], ", ".join(members)
        if err is not None:
            where = f"{err['file']}:{err['line']}"
            named = next((k for k in sorted(build.given, key=len, reverse=True) if f"'{k}'" in err["message"]), None)
            text = tr("{bridge} on megatron-core {line} refuses the overrides verl hands it for {role}: {type}: "
                      "{message}", bridge=bridge, line=near, role=who, type=err["type"], message=err["message"])
            if err["type"] == "AttributeError":
                issues.append(error(build.key(named) if named else build.otc_path, text, RULE, tr(
                    "raised at {where}; MindSpeed {release} never ran here", where=where, release=release),
                    source=where, **({"override": f"~{build.key(named)}"} if named else {})))
            else:
                issues.append(warning(build.otc_path, text, RULE, tr(
                    "raised at {where} by megatron-core's own check, without MindSpeed {release} (which cannot run "
                    "here and may change it on an NPU)", where=where, release=release), source=where))
        issues.append(note(build.otc_path, tr(
            "upstream: {bridge} on megatron-core {line} built the provider of {role} with verl 0.9.1's overrides: "
            "{verdict}; held back as MindSpeed's (megatron_adaptor decides them, and never ran): {held}", bridge=bridge,
            line=near, role=who, verdict="error" if err else "ok", held=", ".join(held[name]) or "-"), RULE))
    return issues


__all__ = ["PROVIDER_KEYS", "RULE", "bridge_verdict", "executed_values", "held_back", "model_folder",
           "provider_overrides", "warm"]
