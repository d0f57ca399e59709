"""The companions MindSpeed needs in the dict, which only a launch through verl-mindspeed injects.

``mindspeed/megatron_adaptor.py`` ``repatch`` decides which patches apply from the dict alone, and
several features read a companion key from MindSpeed's namespace, which only the dict fills
(MC2 reads TP and SP; the MoE overlap features the dispatcher; tp-extend-ep ``num_experts``;
fused RoPE ``position_embedding_type``; MLA its dimensions). A plain verl launch passes the dict as is
(plus FA and the CP size on verl 0.8+), so there the rules report a missing companion as the failure
it will be; a launch through a preset, the callback or the launcher gets it injected, reported as a note.

What is injected, when and why is catalogue data (``Feature.injects``); this module only reads the values
(:data:`~verl_mindspeed.catalog.SOURCES`) and decides the conditions (:data:`~verl_mindspeed.catalog.CONDITIONS`).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..catalog import PERMUTE, PERMUTE_MEGATRON, From, Injection, injections
from ..errors import Issue
from ..i18n import text, tr
from ..rules._base import note
from ..simulate import MBRIDGE, MEGATRON_BRIDGE, Build, fmt

_Read = Callable[[Build, Any, dict], Any]

SOURCES: dict[str, _Read] = {
    "engine.tp": lambda view, model, d: view.tp,
    "engine.cp": lambda view, model, d: view.cp,
    "engine.sequence_parallel": lambda view, model, d: view.sequence_parallel is not False,
    "engine.use_distributed_optimizer": lambda view, model, d: view.megatron.get("use_distributed_optimizer")
    is not False,
    "bridge.moe_token_dispatcher_type": lambda view, model, d: _dispatcher(view),
    "model.num_experts": lambda view, model, d: model.num_experts if model is not None else None,
    "model.mla_dims": lambda view, model, d: _mla_dims(model),
    "dict.not_batch_invariant": lambda view, model, d: d.get("use_flash_attn_npu_batch_invariant") is not True,
}
"""How each catalogue source is read (same keys as ``catalog.SOURCES``, which says each in words)."""

CONDITIONS: dict[str, _Read] = {
    "engine.cp>1": lambda view, model, d: view.cp > 1,
    "model": lambda view, model, d: model is not None,
    "model.moe": lambda view, model, d: model is not None and model.is_moe,
    "bridge.not_megatron_bridge": lambda view, model, d: view.bridge_kind != MEGATRON_BRIDGE,
    "bridge.not_converter": lambda view, model, d: view.bridge_kind in (MEGATRON_BRIDGE, MBRIDGE),
    "bridge.permute_fusion": lambda view, model, d: model is not None and model.is_moe
    and view.bridge.get("position_embedding_type") == "rope" and PERMUTE not in d and PERMUTE_MEGATRON not in d,
}
"""How each catalogue condition is decided, on the dict as the user wrote it (same keys as ``catalog.CONDITIONS``)."""


def injected_dict(view: Build, shared: dict[str, Any], model: Any) -> tuple[dict[str, Any], list[Issue]]:
    """The dict verl-mindspeed writes for a role: its normalized dict, ``shared`` switches, the companions."""
    out = {**shared, **view.otc}
    notes: list[Issue] = []
    if out.get(PERMUTE) is True or out.get(PERMUTE_MEGATRON) is True:
        out[PERMUTE] = out[PERMUTE_MEGATRON] = True  # a shared switch brings its megatron twin along
    written = dict(out)
    pending = [inj for inj in injections() if all(CONDITIONS[c](view, model, written) for c in inj.requires)]
    added = True
    while added:  # an injected switch can call for another injection (permute fusion -> the dispatcher)
        added = False
        for inj in list(pending):
            if inj.when and not any(out.get(switch) is True for switch in inj.when):
                continue
            pending.remove(inj)
            for key, value in _values(inj, view, model, written):
                if out.get(key) is None and value is not None:
                    out[key] = value
                    added = True
                    notes.append(note(view.key(key), tr("added {key}={value}: {why}", key=key, value=fmt(value),
                                                        why=text(inj.why)), "inject"))
    inherited = sorted(k for k in shared if k not in view.otc)
    if inherited:
        notes.append(note(view.otc_path, tr(
            "{role} gets the MindSpeed switches {keys} of the roles it shares a process with (process-wide patches)",
            role=view.name, keys=", ".join(inherited)), "inject"))
    return out, notes


def _values(inj: Injection, view: Build, model: Any, written: dict) -> list[tuple[str, Any]]:
    value = SOURCES[inj.value.source](view, model, written) if isinstance(inj.value, From) else inj.value
    if inj.key is None:  # a source of several keys
        return list((value or {}).items())
    return [(inj.key, value)]


def _mla_dims(model: Any) -> Optional[dict[str, Any]]:
    if model is None:
        return None
    from ..model import mla_dims

    return mla_dims(model)


def _dispatcher(view: Build) -> Optional[str]:
    value = view.bridge.get("moe_token_dispatcher_type")
    return value if isinstance(value, str) else "alltoall"
