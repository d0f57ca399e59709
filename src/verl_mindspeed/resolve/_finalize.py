"""The copies MindSpeed needs in the dict (mindspeed/megatron_adaptor.py repatch decides which patches apply from the dict alone)."""

from __future__ import annotations

from typing import Any

from .. import catalog
from ..catalog import universe
from ..errors import Issue
from ..rules._base import RoleView, fmt, issue
from ._normalize import PERMUTE, PERMUTE_MEGATRON


def is_process_wide(key: str) -> bool:
    """A MindSpeed switch: a catalogue flag marked so, or a key only MindSpeed registers."""
    flag = catalog.flag(key, "otc")
    if flag is not None:
        return flag.process_wide
    tc, _ = universe.transformer_config_fields()
    return key in universe.mindspeed_args() and key not in tc


def process_wide_items(otc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in otc.items() if is_process_wide(k)}


def finalize(view: RoleView, inherited: dict[str, Any], model: Any) -> tuple[dict[str, Any], list[Issue]]:
    """The dict to inject: the role's normalized dict, the actor's MindSpeed switches, and the copies below."""
    out = {**inherited, **view.otc}
    notes: list[Issue] = []

    def add(key: str, value: Any, why: str) -> None:
        if out.get(key) is None:
            out[key] = value
            notes.append(issue("note", view.key(key), f"added {key}={fmt(value)}: {why}", "inject"))

    # MindSpeed keeps its permute switch and megatron's equal; an inherited switch brings its twin.
    if isinstance(out.get(PERMUTE), bool) and out.get(PERMUTE_MEGATRON) is None:
        out[PERMUTE_MEGATRON] = out[PERMUTE]
    batch_invariant = out.get("use_flash_attn_npu_batch_invariant") is True
    add("use_flash_attn", not batch_invariant,
        "MindSpeed registers its attention patch only when it is on (verl 0.8+ sets the same default)")
    if view.cp > 1:
        add("context_parallel_size", view.cp, "MindSpeed's CP patches read the size from the dict")
    if out.get("use_ascend_mc2") is True:
        add("tensor_model_parallel_size", view.tp, "MindSpeed's MC2 patch reads TP from the dict")
        add("sequence_parallel", view.sequence_parallel, "MindSpeed's MC2 patch reads SP from the dict")
    if out.get("swap_optimizer") is True:
        add("use_distributed_optimizer", bool(view.megatron.get("use_distributed_optimizer", False)),
            "MindSpeed's swap-optimizer checks read it from the dict")
    if out.get("multi_head_latent_attention") is True and model is not None:
        from ..model import mla_dims

        for key, value in mla_dims(model).items():
            add(key, value, "MindSpeed's MLA needs the dimension in the dict; taken from the model's config.json")
    inherited_keys = sorted(k for k in inherited if k not in view.otc)
    if inherited_keys:
        notes.append(issue(
            "note", view.otc_path,
            f"{view.name} gets the actor's MindSpeed switches {', '.join(inherited_keys)} (process-wide patches)",
            "inject",
        ))
    return out, notes
