"""Rules on MC2, MindSpeed's fusion of a matmul with its communication: on the tensor-parallel layers
(``use_ascend_mc2``) and on the MoE alltoall dispatch (``moe_alltoall_mc2``)."""

from __future__ import annotations

from typing import Iterable

from ..errors import Issue
from ..i18n import tr
from ._base import Context, RoleView, _int, error, fmt, release_at_least, rule, size_fix, warning
from ._sizes import tp_above_one, tp_fix
from .moe import _MS_MOE, built_dispatcher

_ALLTOALL_MC2_EXCLUDES = ("use_ascend_mc2", "moe_alltoall_overlap_comm", "moe_allgather_overlap_comm",
                          "moe_fb_overlap", "moe_tp_extend_ep")


@rule("moe-alltoall-mc2", cites=_MS_MOE + "moe_alltoall_mc2.py validate_args",
      holds_for="MindSpeed 26.0.0, 26.1.0, master (releases that register --moe-alltoall-mc2)",
      covers=("moe_alltoall_mc2",))
def alltoall_mc2(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """MoE MC2 asserts its companions on the built config: no other MC2 or MoE overlap, an alltoall dispatcher,
    TP=1 with alltoall_seq, ETP=1 and dropless with alltoall."""
    from ..catalog import universe

    if not role.on("moe_alltoall_mc2") or "moe_alltoall_mc2" not in universe.mindspeed_args(ctx.release):
        return
    for other in _ALLTOALL_MC2_EXCLUDES:
        if role.on(other):
            yield error(role.key(other), tr("moe_alltoall_mc2 and {other} cannot be combined (MindSpeed asserts it)",
                                            other=other), "moe-alltoall-mc2", override=role.set_line(other, False))
    dispatcher = built_dispatcher(role)
    if dispatcher not in ("alltoall", "alltoall_seq"):
        yield error(role.key("moe_token_dispatcher_type"), tr(
            "moe_alltoall_mc2=True requires moe_token_dispatcher_type=alltoall or alltoall_seq (got {value})",
            value=fmt(dispatcher)), "moe-alltoall-mc2", override=role.set_line("moe_token_dispatcher_type", "alltoall"))
    elif dispatcher == "alltoall_seq" and role.built_size("tensor_model_parallel_size") != 1:
        yield error(role.mkey("tensor_model_parallel_size"), tr(
            "moe_alltoall_mc2=True with moe_token_dispatcher_type=alltoall_seq requires tensor_model_parallel_size=1 "
            "(got {tp})", tp=role.built_size("tensor_model_parallel_size")), "moe-alltoall-mc2",
            override=role.set_line("moe_token_dispatcher_type", "alltoall"))
    elif dispatcher == "alltoall":
        etp = _int(role.built.get("expert_tensor_parallel_size")) or role.etp
        if etp != 1:
            yield error(role.mkey("expert_tensor_parallel_size"), tr(
                "moe_alltoall_mc2=True with moe_token_dispatcher_type=alltoall requires expert_tensor_parallel_size=1 "
                "(got {etp}{assumed})", etp=etp, assumed=tr(", which is TP when unset")
                if role.megatron.get("expert_tensor_parallel_size") is None else ""), "moe-alltoall-mc2",
                override=size_fix(role, ctx, "expert_tensor_parallel_size", 1))
        if role.get("moe_expert_capacity_factor") is not None:
            yield error(role.key("moe_expert_capacity_factor"), tr(
                "moe_alltoall_mc2=True requires a dropless MoE: moe_expert_capacity_factor must be unset"),
                "moe-alltoall-mc2", override=role.set_line("moe_expert_capacity_factor", None))


@rule("mc2-requires-sp-tp", cites="mindspeed/features_manager/tensor_parallel/mc2.py register_patches, "
      "validate_args", holds_for="MindSpeed 26.0.0, 26.1.0 and master raise; 2.2.0, 2.3.0 and core_r0.16.0 warn "
      "and skip MC2")
def mc2_requires_sp_tp(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """MC2 reads TP (and on 2.2.0 SP) from MindSpeed's namespace, then validates the built config."""
    if role.ns.get("use_ascend_mc2") is True:
        # register_patches: `[hasattr(args, 'sequence_parallel') and] not args.sequence_parallel or
        # int(args.tensor_model_parallel_size) == 1`: 2.2.0 reads SP unguarded; TP is read unless SP is False.
        sp_known = role.in_ns("sequence_parallel")
        missing = ["sequence_parallel"] if ctx.release.startswith("2.2.") and not sp_known else []
        reads_tp = not (sp_known and not role.ns.get("sequence_parallel"))
        if reads_tp and not role.in_ns("tensor_model_parallel_size"):
            missing.insert(0, "tensor_model_parallel_size")
        if missing:
            tp = tp_above_one(role, ctx)  # MC2 needs TP > 1: a companion of 1 would only move the error
            lines = [role.set_line(k, tp if k == "tensor_model_parallel_size" else True) for k in missing]
            if "tensor_model_parallel_size" in missing and tp != role.tp:
                lines.insert(0, size_fix(role, ctx, "tensor_model_parallel_size", tp))
            yield error(role.key("use_ascend_mc2"), tr(
                "use_ascend_mc2=True requires {keys} in override_transformer_config: MindSpeed's MC2 patch reads "
                "them there and fails with AttributeError without them", keys=", ".join(missing)),
                "mc2-requires-sp-tp", override=" ".join(lines) if tp else _mc2_off(role))
            return
    if not role.on("use_ascend_mc2"):
        return
    raises = release_at_least(ctx.release, (26, 0, 0)) and not ctx.release.startswith("core_r0.16")
    make = error if raises else warning
    tp = role.built_size("tensor_model_parallel_size")
    # what MC2 needs besides TP > 1, in the same fix line (its checks stop at the first): SP on, and then TP in
    # the dict, where MC2's patch reads it once SP is on
    sp_lines = [] if role.sequence_parallel is not False else [role.set_line("sequence_parallel", True)] + (
        [] if role.in_ns("tensor_model_parallel_size") else [role.set_line("tensor_model_parallel_size", max(tp, 2))])
    if tp == 1:
        new_tp = tp_above_one(role, ctx)
        yield make(role.mkey("tensor_model_parallel_size"),
                   tr("use_ascend_mc2=True requires tensor_model_parallel_size > 1"), "mc2-requires-sp-tp",
                   override=" ".join([tp_fix(role, ctx, new_tp), *sp_lines])
                   if new_tp else _mc2_off(role))
    elif sp_lines:
        yield make(role.key("sequence_parallel"), tr("use_ascend_mc2=True requires sequence_parallel=True"),
                   "mc2-requires-sp-tp", override=" ".join(sp_lines))


def _mc2_off(role: RoleView) -> str:
    """The fix where the layout leaves no room for TP > 1 (the devices are taken by PP x CP): MC2 off."""
    return role.set_line("use_ascend_mc2", False)


@rule("mc2-conflicts", cites="mindspeed/features_manager/tensor_parallel/mc2.py; moe/moe_alltoall_overlap.py; "
      "MindSpeed MC2 docs", holds_for="MindSpeed 2.2.0+")
def mc2_conflicts(role: RoleView, ctx: Context) -> Iterable[Issue]:
    if not role.on("use_ascend_mc2"):
        return
    for other in ("use_ascend_coc", "moe_alltoall_overlap_comm", "moe_allgather_overlap_comm",
                  "use_pipe_experts", "use_nanopipe"):
        if role.on(other):
            yield error(role.key(other), tr("use_ascend_mc2=True and {other}=True cannot be combined", other=other),
                        "mc2-conflicts", override=role.set_line(other, False))
    if role.ep > 1 or role.get("num_moe_experts"):
        yield warning(
            role.key("use_ascend_mc2"),
            tr("use_ascend_mc2=True on a MoE model: MindSpeed's documentation says MC2 is not for MoE models"),
            "mc2-conflicts",
        )
