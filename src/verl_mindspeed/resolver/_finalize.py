"""The companions MindSpeed needs in the dict, which only a launch through verl-mindspeed injects.

``mindspeed/megatron_adaptor.py`` ``repatch`` decides which patches apply from the dict alone, and
several features read a companion key from MindSpeed's namespace, which only the dict fills
(MC2 reads TP and SP; the MoE overlap features the dispatcher; tp-extend-ep ``num_experts``;
fused RoPE ``position_embedding_type``; MLA its dimensions). A plain verl launch passes the dict as is
(plus FA and the CP size on verl 0.8+), so there the rules report a missing companion as the failure
it will be; a launch through a preset, the callback or the launcher gets it injected, reported as a note.
"""

from __future__ import annotations

from typing import Any, Optional

from ..catalog import PERMUTE, PERMUTE_MEGATRON
from ..errors import Issue
from ..i18n import tr
from ..rules._base import note
from ..simulate import MEGATRON_BRIDGE, Build, fmt

OVERLAP = ("moe_alltoall_overlap_comm", "moe_allgather_overlap_comm")


def injected_dict(view: Build, shared: dict[str, Any], model: Any) -> tuple[dict[str, Any], list[Issue]]:
    """The dict verl-mindspeed writes for a role: its normalized dict, ``shared`` switches, the companions."""
    out = {**shared, **view.otc}
    notes: list[Issue] = []
    if out.get(PERMUTE) is True or out.get(PERMUTE_MEGATRON) is True:
        out[PERMUTE] = out[PERMUTE_MEGATRON] = True  # a shared switch brings its megatron twin along

    def add(key: str, value: Any, why: Any) -> None:
        if out.get(key) is None and value is not None:
            out[key] = value
            notes.append(note(view.key(key), tr("added {key}={value}: {why}", key=key, value=fmt(value), why=why),
                              "inject"))

    batch_invariant = out.get("use_flash_attn_npu_batch_invariant") is True
    add("use_flash_attn", not batch_invariant,
        tr("MindSpeed registers its attention patch only when it is on (verl 0.8+ sets the same default)"))
    if view.cp > 1:
        add("context_parallel_size", view.cp, tr("MindSpeed's CP patches read the size from the dict"))
    if out.get("use_ascend_mc2") is True:
        add("tensor_model_parallel_size", view.tp, tr("MindSpeed's MC2 patch reads TP from the dict"))
        add("sequence_parallel", view.sequence_parallel is not False,
            tr("MindSpeed's MC2 patch reads SP from the dict"))
    if out.get("swap_optimizer") is True:
        add("use_distributed_optimizer", view.megatron.get("use_distributed_optimizer") is not False,
            tr("MindSpeed's swap-optimizer check reads it from the dict"))
    if model is not None and model.is_moe and view.bridge.get("position_embedding_type") == "rope" \
            and PERMUTE not in out and PERMUTE_MEGATRON not in out:
        for key in (PERMUTE, PERMUTE_MEGATRON):
            add(key, True, tr("Megatron-Bridge turns permute fusion on for this MoE model; MindSpeed registers its "
                              "NPU permute only when the switch is in the dict"))
    if any(out.get(k) is True for k in (*OVERLAP, "moe_tp_extend_ep", PERMUTE, PERMUTE_MEGATRON)):
        add("moe_token_dispatcher_type", _dispatcher(view),
            tr("MindSpeed applies its MoE overlap and dispatcher-specific permute patches only when the dispatcher "
               "is in the dict"))
    if out.get("moe_tp_extend_ep") is True and model is not None and model.is_moe:
        add("num_experts", model.num_experts,
            tr("MindSpeed's tp-extend-ep check reads num_experts from the dict; taken from the model's config.json"))
    if out.get("use_fused_rotary_pos_emb") is True and view.bridge_kind != MEGATRON_BRIDGE:
        add("position_embedding_type", "rope",
            tr("MindSpeed's fused RoPE check reads it, and this model bridge does not set it"))
    if out.get("multi_head_latent_attention") is True and model is not None:
        from ..model import mla_dims

        for key, value in mla_dims(model).items():
            add(key, value, tr("MindSpeed's MLA needs the dimension in the dict; taken from the model's config.json"))
    inherited = sorted(k for k in shared if k not in view.otc)
    if inherited:
        notes.append(note(view.otc_path, tr(
            "{role} gets the MindSpeed switches {keys} of the roles it shares a process with (process-wide patches)",
            role=view.name, keys=", ".join(inherited)), "inject"))
    return out, notes


def _dispatcher(view: Build) -> Optional[str]:
    value = view.bridge.get("moe_token_dispatcher_type")
    return value if isinstance(value, str) else "alltoall"
