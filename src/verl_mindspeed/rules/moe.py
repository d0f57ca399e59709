"""Rules on MoE dispatch, fused permute and MC2."""

from __future__ import annotations

from typing import Iterable

from ..errors import Issue
from ._base import Context, RoleView, error, fmt, release_at_least, rule, warning

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


@rule("moe-overlap-prerequisites", cites="mindspeed/features_manager/moe/{moe_alltoall_overlap,"
      "moe_allgather_overlap,tp_extend_ep}.py")
def moe_overlap_prerequisites(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """Prerequisites of MindSpeed's MoE overlap features; a dispatcher the user did not set comes from the bridge."""
    dispatcher = role.otc.get("moe_token_dispatcher_type")
    key = "moe-overlap-prerequisites"
    if role.on("moe_alltoall_overlap_comm"):
        if dispatcher is not None and dispatcher not in ("alltoall", "alltoall_seq"):
            yield error(role.key("moe_token_dispatcher_type"), f"moe_alltoall_overlap_comm=True requires "
                        f"moe_token_dispatcher_type=alltoall or alltoall_seq (got {dispatcher})", key,
                        override=role.set_line("moe_token_dispatcher_type", "alltoall"))
        if not role.on("moe_grouped_gemm"):
            yield error(role.key("moe_grouped_gemm"), "moe_alltoall_overlap_comm=True requires moe_grouped_gemm=True",
                        key, override=role.set_line("moe_grouped_gemm", True))
        if dispatcher == "alltoall_seq" and not role.on("moe_permutation_async_comm"):
            yield error(role.key("moe_permutation_async_comm"), "moe_alltoall_overlap_comm=True with "
                        "moe_token_dispatcher_type=alltoall_seq requires moe_permutation_async_comm=True", key,
                        override=role.set_line("moe_permutation_async_comm", True))
        if dispatcher == "alltoall" and role.on("moe_tp_extend_ep"):
            yield error(role.key("moe_tp_extend_ep"), "moe_alltoall_overlap_comm=True with "
                        "moe_token_dispatcher_type=alltoall and moe_tp_extend_ep=True cannot be combined", key)
        if role.ep == 1 and release_at_least(ctx.release, (26, 1, 0)):
            yield error(role.mkey("expert_model_parallel_size"),
                        "moe_alltoall_overlap_comm=True requires expert_model_parallel_size > 1", key)
    if role.on("moe_allgather_overlap_comm"):
        if dispatcher is not None and dispatcher != "allgather":
            yield error(role.key("moe_token_dispatcher_type"), "moe_allgather_overlap_comm=True requires "
                        f"moe_token_dispatcher_type=allgather (got {dispatcher})", key,
                        override=role.set_line("moe_token_dispatcher_type", "allgather"))
        for need in ("moe_permutation_async_comm", "moe_grouped_gemm"):
            if not role.on(need):
                yield error(role.key(need), f"moe_allgather_overlap_comm=True requires {need}=True", key,
                            override=role.set_line(need, True))
    if role.on("moe_tp_extend_ep"):
        for need in ("moe_permutation_async_comm", "moe_grouped_gemm"):
            if not role.on(need):
                yield error(role.key(need), f"moe_tp_extend_ep=True requires {need}=True", key,
                            override=role.set_line(need, True))
        if role.otc.get("moe_expert_capacity_factor") is not None:
            yield error(role.key("moe_expert_capacity_factor"),
                        "moe_tp_extend_ep=True requires moe_expert_capacity_factor=null", key)


@rule("mc2-requires-sp-tp", cites="mindspeed/features_manager/tensor_parallel/mc2.py")
def mc2_requires_sp_tp(role: RoleView, ctx: Context) -> Iterable[Issue]:
    if not role.on("use_ascend_mc2"):
        return
    # MindSpeed 26.0.0+ raise; 2.x warn and silently skip the MC2 patch.
    make = error if release_at_least(ctx.release, (26, 0, 0)) else warning
    if role.tp == 1:
        yield make(
            role.mkey("tensor_model_parallel_size"), "use_ascend_mc2=True requires tensor_model_parallel_size > 1",
            "mc2-requires-sp-tp", override=role.mset_line("tensor_model_parallel_size", 2),
        )
    elif role.sequence_parallel is False:
        yield make(
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
