"""Rules on MoE dispatch, fused permute and MC2."""

from __future__ import annotations

from typing import Iterable

from ..errors import Issue
from ._base import Context, RoleView, error, fmt, rule, warning

PERMUTE = "use_fused_moe_token_permute_and_unpermute"
_OVERLAP = ("moe_tp_extend_ep", "moe_alltoall_overlap_comm", "moe_allgather_overlap_comm")


@rule("permute-fusion-flags-agree", cites="mindspeed/features_manager/fusions/fused_moe_permute.py")
def permute_flags_agree(role: RoleView, ctx: Context) -> Iterable[Issue]:
    a, b = role.otc.get(PERMUTE), role.otc.get("moe_permute_fusion")
    if isinstance(a, bool) and isinstance(b, bool) and a != b:
        yield error(
            role.key("moe_permute_fusion"),
            f"{PERMUTE}={fmt(a)} and moe_permute_fusion={fmt(b)} must be equal (MindSpeed keeps them in sync)",
            "permute-fusion-flags-agree", override=role.set_line("moe_permute_fusion", a),
        )


@rule("permute-fusion-dispatcher", cites="mindspeed/features_manager/fusions/fused_moe_permute.py")
def permute_fusion_dispatcher(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """Fused permute fails with the allgather dispatcher; an unset dispatcher comes from the model bridge."""
    if not (role.on(PERMUTE) or role.on("moe_permute_fusion")):
        return
    if role.otc.get("moe_token_dispatcher_type") == "allgather":
        yield error(
            role.key("moe_token_dispatcher_type"),
            "fused permute/unpermute and moe_token_dispatcher_type=allgather cannot be combined",
            "permute-fusion-dispatcher", override=role.set_line("moe_token_dispatcher_type", "alltoall"),
        )
    if role.otc.get("moe_expert_capacity_factor") is not None and not role.on("moe_pad_expert_input_to_capacity"):
        yield error(
            role.key("moe_expert_capacity_factor"),
            "fused permute/unpermute with moe_expert_capacity_factor requires moe_pad_expert_input_to_capacity=True",
            "permute-fusion-dispatcher", override=role.set_line("moe_pad_expert_input_to_capacity", True),
        )


@rule("moe-async-comm-alone", cites="mindspeed/features_manager/moe/tp_extend_ep.py (no patch of its own)")
def moe_async_comm_alone(role: RoleView, ctx: Context) -> Iterable[Issue]:
    if role.on("moe_permutation_async_comm") and not any(role.on(k) for k in _OVERLAP):
        yield warning(
            role.key("moe_permutation_async_comm"),
            "moe_permutation_async_comm=True has no effect on its own: it is a precondition of "
            + ", ".join(_OVERLAP),
            "moe-async-comm-alone",
            hint="with moe_token_dispatcher_type=alltoall, add e.g. moe_alltoall_overlap_comm=True "
                 "(needs moe_grouped_gemm=True)",
        )


@rule("moe-overlap-prerequisites", cites="mindspeed/features_manager/moe/*.py")
def moe_overlap_prerequisites(role: RoleView, ctx: Context) -> Iterable[Issue]:
    for feature in _OVERLAP:
        if not role.on(feature):
            continue
        for need in ("moe_permutation_async_comm", "moe_grouped_gemm"):
            if not role.on(need):
                yield error(role.key(need), f"{feature}=True requires {need}=True", "moe-overlap-prerequisites",
                            override=role.set_line(need, True))
        wanted = "allgather" if feature == "moe_allgather_overlap_comm" else "alltoall"
        dispatcher = role.otc.get("moe_token_dispatcher_type")
        if dispatcher is not None and dispatcher != wanted:
            yield error(
                role.key("moe_token_dispatcher_type"),
                f"{feature}=True requires moe_token_dispatcher_type={wanted} (got {dispatcher})",
                "moe-overlap-prerequisites", override=role.set_line("moe_token_dispatcher_type", wanted),
            )


@rule("mc2-requires-sp-tp", cites="mindspeed/features_manager/tensor_parallel/mc2.py")
def mc2_requires_sp_tp(role: RoleView, ctx: Context) -> Iterable[Issue]:
    if not role.on("use_ascend_mc2"):
        return
    if role.tp == 1:
        yield error(
            role.mkey("tensor_model_parallel_size"), "use_ascend_mc2=True requires tensor_model_parallel_size > 1",
            "mc2-requires-sp-tp", override=role.mset_line("tensor_model_parallel_size", 2),
        )
    elif not role.sequence_parallel:
        yield error(
            role.key("sequence_parallel"), "use_ascend_mc2=True requires sequence_parallel=True",
            "mc2-requires-sp-tp", override=role.set_line("sequence_parallel", True),
        )


@rule("mc2-conflicts", cites="mindspeed/features_manager/tensor_parallel/mc2.py; MindSpeed MC2 docs")
def mc2_conflicts(role: RoleView, ctx: Context) -> Iterable[Issue]:
    if not role.on("use_ascend_mc2"):
        return
    for other in ("use_ascend_coc", "moe_alltoall_overlap_comm", "moe_allgather_overlap_comm",
                  "use_pipe_experts", "use_nanopipe"):
        if role.on(other):
            yield error(role.key(other), f"use_ascend_mc2=True and {other}=True cannot be combined", "mc2-conflicts")
    if role.ep > 1 or role.otc.get("num_moe_experts"):
        yield warning(
            role.key("use_ascend_mc2"),
            "use_ascend_mc2=True on a MoE model: MindSpeed's documentation says MC2 is not for MoE models",
            "mc2-conflicts",
        )
