"""Rules on MoE dispatch, fused permute and the MoE overlap features (MC2 is in :mod:`.mc2`).

MindSpeed's features read their switches from its namespace when ``repatch`` registers patches, and
validate the built ``TransformerConfig`` (namespace + bridge + dict) at construction: see ``_base.py``.
"""

from __future__ import annotations

from typing import Iterable, Optional

from ..catalog import PERMUTE
from ..errors import Issue
from ..i18n import tr
from ._base import Context, RoleView, error, fmt, note, release_at_least, rule, warning
from ._sizes import EP, fix_size

_MS_MOE = "mindspeed/features_manager/moe/"
_MCORE_TC = "megatron/core/transformer/transformer_config.py TransformerConfig.__post_init__"


def _known_false(role: RoleView, ctx: Context, name: str) -> bool:
    """A switch the built config certainly leaves off: false in the dict or namespace, or unset where the
    model is known (the bridge sets ``moe_grouped_gemm`` for MoE models only)."""
    value = role.built.get(name)
    if value is not None:
        return value is False
    return ctx.model is not None


def built_dispatcher(role: RoleView) -> Optional[str]:
    """The dispatcher of the built config (dict, namespace, bridge), when it is a string."""
    value = role.built.get("moe_token_dispatcher_type")
    return value if isinstance(value, str) else None


@rule("permute-fusion-dispatcher", cites="mindspeed/features_manager/fusions/fused_moe_permute.py validate_args",
      holds_for="MindSpeed 2.2.0+")
def permute_fusion_dispatcher(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """Fused permute fails with the allgather dispatcher, and with a capacity factor unless inputs are padded."""
    if not (role.on(PERMUTE) or role.on("moe_permute_fusion")):
        return
    if built_dispatcher(role) == "allgather":
        yield error(
            role.key("moe_token_dispatcher_type"),
            tr("fused permute/unpermute and moe_token_dispatcher_type=allgather cannot be combined"),
            "permute-fusion-dispatcher", override=role.set_line("moe_token_dispatcher_type", "alltoall"),
        )
    if role.get("moe_expert_capacity_factor") is not None and not role.on("moe_pad_expert_input_to_capacity"):
        yield error(
            role.key("moe_expert_capacity_factor"),
            tr("fused permute/unpermute with moe_expert_capacity_factor requires "
               "moe_pad_expert_input_to_capacity=True"),
            "permute-fusion-dispatcher", override=role.set_line("moe_pad_expert_input_to_capacity", True),
        )


@rule("moe-pad-needs-capacity", cites=_MCORE_TC, holds_for="megatron-core 0.12.1 and 0.16.1")
def pad_needs_capacity(role: RoleView, ctx: Context) -> Iterable[Issue]:
    if role.on("moe_pad_expert_input_to_capacity") and role.get("moe_expert_capacity_factor") is None:
        yield error(
            role.key("moe_pad_expert_input_to_capacity"),
            tr("moe_pad_expert_input_to_capacity=True requires moe_expert_capacity_factor"),
            "moe-pad-needs-capacity", override=role.set_line("moe_pad_expert_input_to_capacity", False),
        )


@rule("alltoall-seq-etp", cites=_MCORE_TC + " (alltoall_seq needs ETP == TP)", holds_for="megatron-core 0.12.1")
def alltoall_seq_etp(role: RoleView, ctx: Context) -> Iterable[Issue]:
    if built_dispatcher(role) == "alltoall_seq" and role.etp != role.tp and ctx.core < (0, 16):
        yield error(
            role.mkey("expert_tensor_parallel_size"),
            tr("moe_token_dispatcher_type=alltoall_seq requires expert_tensor_parallel_size equal to "
               "tensor_model_parallel_size (got {etp} and {tp})", etp=role.etp, tp=role.tp),
            "alltoall-seq-etp", override=role.mset_line("expert_tensor_parallel_size", role.tp),
        )


@rule("moe-async-comm-alone", cites=_MS_MOE + "tp_extend_ep.py (no patch of its own)",
      holds_for="MindSpeed 2.2.0+")
def moe_async_comm_alone(role: RoleView, ctx: Context) -> Iterable[Issue]:
    if role.on("moe_permutation_async_comm") and not any(role.on(k) for k in (
            "moe_tp_extend_ep", "moe_alltoall_overlap_comm", "moe_allgather_overlap_comm")):
        yield warning(
            role.key("moe_permutation_async_comm"),
            tr("moe_permutation_async_comm=True has no effect on its own: it is a precondition of moe_tp_extend_ep, "
               "moe_alltoall_overlap_comm and moe_allgather_overlap_comm"),
            "moe-async-comm-alone",
            hint=tr("with moe_token_dispatcher_type=alltoall, add e.g. moe_alltoall_overlap_comm=True "
                    "(needs moe_grouped_gemm=True)"),
        )


@rule("moe-dispatcher-in-dict", cites="mindspeed/features_manager/moe/moe_alltoall_overlap.py, "
      "moe_allgather_overlap.py, fusions/fused_moe_permute.py register_patches (gated on the namespace's "
      "moe_token_dispatcher_type)", holds_for="MindSpeed 2.2.0+ (core_r0.16.0: the permute part only without "
      "MindSpeed's triton sort kernels, which the check cannot see)")
def dispatcher_in_dict(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """MindSpeed registers its overlap and dispatcher-specific permute patches only when the dispatcher is in
    its namespace: the dict. The model bridge sets the dispatcher on the config only."""
    if role.sent is None or role.in_ns("moe_token_dispatcher_type"):
        return
    switches = [k for k in ("moe_alltoall_overlap_comm", "moe_allgather_overlap_comm") if role.ns.get(k) is True]
    if switches:
        for switch in switches:
            yield warning(
                role.key(switch),
                tr("{switch}=True has no effect: MindSpeed applies it only when moe_token_dispatcher_type is in "
                   "override_transformer_config, and the model bridge sets the dispatcher elsewhere", switch=switch),
                "moe-dispatcher-in-dict",
                override=role.set_line("moe_token_dispatcher_type", built_dispatcher(role) or "alltoall"),
            )
    elif (role.ns.get(PERMUTE) is True or role.ns.get("moe_permute_fusion") is True) and ctx.release != "core_r0.16.0":
        yield warning(
            role.key("moe_permute_fusion"),
            tr("fused permute/unpermute is only partly applied: MindSpeed registers its alltoall-dispatcher patches "
               "only when moe_token_dispatcher_type is in override_transformer_config"),
            "moe-dispatcher-in-dict",
            override=role.set_line("moe_token_dispatcher_type", built_dispatcher(role) or "alltoall"),
        )


@rule("bridge-permute-fusion", cites="mindspeed/features_manager/fusions/fused_moe_permute.py register_patches; "
      "Megatron-Bridge qwen3_moe_bridge.py / deepseek/common.py (moe_permute_fusion=True)",
      holds_for="MindSpeed 2.2.0+ with verl's Megatron-Bridge path (verl 0.9 default)")
def bridge_permute_fusion(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """Megatron-Bridge turns permute fusion on for MoE models on the config only; MindSpeed's NPU permute is
    registered from the dict. Executed: the patches are not registered; what the first MoE forward then does
    could not be run without an NPU."""
    if role.sent is None or ctx.model is None or not ctx.model.is_moe or role.bridge.get("position_embedding_type") \
            != "rope" or role.in_ns(PERMUTE) or role.in_ns("moe_permute_fusion"):
        return
    yield note(
        role.key("moe_permute_fusion"),
        tr("Megatron-Bridge turns moe_permute_fusion on for this MoE model, but MindSpeed registers its NPU "
           "permute/unpermute only when the switch is in override_transformer_config; set it there, True or False"),
        "bridge-permute-fusion", override=role.set_line("moe_permute_fusion", True),
    )


@rule("moe-alltoall-overlap", cites=_MS_MOE + "moe_alltoall_overlap.py validate_args",
      holds_for="MindSpeed 2.2.0+ (EP > 1 on 26.1.0 and master; core_r0.16.0 has no EP check)")
def alltoall_overlap(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """On a model without experts the overlap has nothing to overlap: every error's fix turns it off, where the
    companions' fixes (grouped GEMM, alltoall_seq, moe_tp_extend_ep) would each meet the next check."""
    if not role.on("moe_alltoall_overlap_comm"):
        return
    key, dispatcher = "moe-alltoall-overlap", built_dispatcher(role)
    off = role.set_line("moe_alltoall_overlap_comm", False)
    dense = ctx.model is not None and not ctx.model.is_moe

    def fix(companion: str) -> str:
        return off if dense else companion

    if dispatcher is not None and dispatcher not in ("alltoall", "alltoall_seq"):
        yield error(role.key("moe_token_dispatcher_type"), tr(
            "moe_alltoall_overlap_comm=True requires moe_token_dispatcher_type=alltoall or alltoall_seq (got {value})",
            value=dispatcher), key, override=fix(role.set_line("moe_token_dispatcher_type", "alltoall")))
        return
    if role.ep == 1 and release_at_least(ctx.release, (26, 1, 0)) and not ctx.release.startswith("core_r0.16"):
        yield error(role.mkey("expert_model_parallel_size"),
                    tr("moe_alltoall_overlap_comm=True requires expert_model_parallel_size > 1"), key,
                    override=(None if dense else fix_size(role, ctx, EP, lambda n: n > 1)) or off)
    if _known_false(role, ctx, "moe_grouped_gemm"):
        yield error(role.key("moe_grouped_gemm"), tr("moe_alltoall_overlap_comm=True requires moe_grouped_gemm=True"),
                    key, override=fix(role.set_line("moe_grouped_gemm", True)))
    if dispatcher == "alltoall" and role.on("moe_tp_extend_ep"):
        refused = _seq_refused(role, ctx) is not False
        yield error(role.key("moe_tp_extend_ep"), tr(
            "moe_alltoall_overlap_comm=True with moe_token_dispatcher_type=alltoall and moe_tp_extend_ep=True cannot "
            "be combined (use alltoall_seq)"), key, override=fix(role.set_line("moe_tp_extend_ep", False)
            if refused else role.set_line("moe_token_dispatcher_type", "alltoall_seq")),
            hint=tr("verl's variable_seq_lengths=True rules alltoall_seq out on this megatron-core: the fix turns "
                    "moe_tp_extend_ep off") if refused and not dense else "")
    if dispatcher == "alltoall_seq":
        if not role.on("moe_permutation_async_comm"):
            yield error(role.key("moe_permutation_async_comm"), tr(
                "moe_alltoall_overlap_comm=True with moe_token_dispatcher_type=alltoall_seq requires "
                "moe_permutation_async_comm=True"), key,
                override=fix(role.set_line("moe_permutation_async_comm", True)))
        if role.tp > 1 and not role.on("moe_tp_extend_ep"):
            yield error(role.key("moe_tp_extend_ep"), tr(
                "moe_alltoall_overlap_comm=True with moe_token_dispatcher_type=alltoall_seq and "
                "tensor_model_parallel_size > 1 requires moe_tp_extend_ep=True"), key,
                override=fix(role.set_line("moe_tp_extend_ep", True)))


def _seq_refused(role: RoleView, ctx: Context, dispatcher: str = "alltoall_seq") -> Optional[bool]:
    """Whether megatron refuses ``dispatcher`` under verl's ``variable_seq_lengths=True`` for this role: True on a
    MoE model, None (unknown) without a model, False on a dense model (MindSpeed's pre-validation hides the
    setting there) or where the dispatcher is allowed. The one statement of the moe-dispatcher-variable-seq
    condition, which the two overlap rules also read."""
    refused = ("allgather", "alltoall_seq") if ctx.core < (0, 16) else ("allgather",)
    if dispatcher not in refused or role.built.get("variable_seq_lengths", True) is not True:
        return False
    if role.built.get("num_moe_experts") is not None:
        return True
    return None if ctx.model is None else False


@rule("moe-dispatcher-variable-seq", cites="megatron/core/transformer/transformer_config.py __post_init__ "
      "(dispatcher and variable_seq_lengths; alltoall_seq and moe_permute_fusion); verl's config builders set "
      "variable_seq_lengths=True; mindspeed/features_manager/pipeline_parallel/variable_seq_length.py "
      "pre_validate_args (off while megatron validates a model without experts)",
      holds_for="megatron-core 0.12 (allgather, alltoall_seq) and 0.16 (allgather); MoE models only")
def dispatcher_variable_seq(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """verl builds every model with variable_seq_lengths=True, which megatron refuses for these dispatchers. On a
    model without experts MindSpeed turns it off while megatron validates, so a dense model passes."""
    dispatcher = built_dispatcher(role)
    refused = _seq_refused(role, ctx, dispatcher)
    if refused is False:
        return  # an allowed dispatcher, or a dense model (MindSpeed hides variable_seq_lengths from the check)
    make = error if refused else warning
    yield make(role.key("moe_token_dispatcher_type"), tr(
        "moe_token_dispatcher_type={value} requires variable_seq_lengths=False, but verl builds every model with "
        "variable_seq_lengths=True: megatron-core raises ValueError on a MoE model; use alltoall", value=dispatcher),
        "moe-dispatcher-variable-seq", override=role.set_line("moe_token_dispatcher_type", "alltoall"),
        hint="" if refused else tr("the model is unknown here: a model without experts passes (give "
                                   "--model-config to decide)"))


#: What ``moe_alltoall_mc2`` cannot be combined with (MindSpeed's ``incompatible_check``).
@rule("moe-shared-expert-overlap-dispatcher", cites="megatron/core/transformer/transformer_config.py __post_init__ "
      "(moe_shared_expert_overlap); verl/models/mcore/config_converter.py (Qwen2-MoE, DeepSeek-V3 turn it on)",
      holds_for="megatron-core 0.12 and 0.16")
def shared_expert_overlap_dispatcher(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """verl turns the shared-expert overlap on for Qwen2-MoE and DeepSeek-V3 models; megatron allows it only with
    the alltoall dispatcher."""
    dispatcher = built_dispatcher(role)
    if role.built.get("moe_shared_expert_overlap") is True and dispatcher not in (None, "alltoall"):
        yield error(role.key("moe_token_dispatcher_type"), tr(
            "moe_token_dispatcher_type={value} requires moe_shared_expert_overlap=False (verl turns it on for this "
            "model): megatron-core allows the overlap only with alltoall", value=dispatcher),
            "moe-shared-expert-overlap-dispatcher", override=role.set_line("moe_shared_expert_overlap", False))


@rule("moe-allgather-overlap", cites=_MS_MOE + "moe_allgather_overlap.py validate_args",
      holds_for="MindSpeed 2.2.0+")
def allgather_overlap(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """The bridges set the alltoall dispatcher, so the allgather overlap needs the dispatcher in the dict."""
    if not role.on("moe_allgather_overlap_comm"):
        return
    key, dispatcher = "moe-allgather-overlap", built_dispatcher(role)
    if _seq_refused(role, ctx, "allgather") is True:  # the dispatcher it needs is refused here: no pair of fixes
        yield error(role.key("moe_allgather_overlap_comm"), tr(
            "moe_allgather_overlap_comm=True requires moe_token_dispatcher_type=allgather, which megatron-core "
            "refuses on a MoE model with the variable_seq_lengths=True verl builds every model with: the allgather "
            "overlap cannot run under verl"), key, override=role.set_line("moe_allgather_overlap_comm", False))
        return
    if dispatcher is not None and dispatcher != "allgather":
        yield error(role.key("moe_token_dispatcher_type"), tr(
            "moe_allgather_overlap_comm=True requires moe_token_dispatcher_type=allgather (got {value}, which the "
            "model bridge sets unless the dict says otherwise)", value=dispatcher), key,
            override=role.set_line("moe_token_dispatcher_type", "allgather"))
    if not role.on("moe_permutation_async_comm"):
        yield error(role.key("moe_permutation_async_comm"), tr(
            "moe_allgather_overlap_comm=True requires moe_permutation_async_comm=True"), key,
            override=role.set_line("moe_permutation_async_comm", True))
    if _known_false(role, ctx, "moe_grouped_gemm"):
        yield error(role.key("moe_grouped_gemm"), tr("moe_allgather_overlap_comm=True requires moe_grouped_gemm=True"),
                    key, override=role.set_line("moe_grouped_gemm", True))


@rule("moe-tp-extend-ep", cites=_MS_MOE + "tp_extend_ep.py validate_args", holds_for="MindSpeed 2.2.0+")
def tp_extend_ep(role: RoleView, ctx: Context) -> Iterable[Issue]:
    if not role.on("moe_tp_extend_ep"):
        return
    key = "moe-tp-extend-ep"
    experts = role.built.get("num_experts")
    if ctx.model is not None and not ctx.model.is_moe:
        yield error(role.key("moe_tp_extend_ep"), tr(
            "moe_tp_extend_ep=True requires a MoE model ({arch} has no experts)", arch=ctx.model.architecture), key,
            override=role.set_line("moe_tp_extend_ep", False))
        return
    if experts is None:
        known = ctx.model.num_experts if ctx.model is not None else None
        yield error(role.key("num_experts"), tr(
            "moe_tp_extend_ep=True requires num_experts in override_transformer_config: MindSpeed reads it there "
            "and fails with AttributeError without it"), key,
            override=role.set_line("num_experts", known) if known else None,
            hint="" if known else tr("give the model's config.json (check --model-config PATH) to get the value"))
    elif isinstance(experts, int) and experts % (role.tp * role.ep):
        yield error(role.key("moe_tp_extend_ep"), tr(
            "moe_tp_extend_ep=True requires num_experts divisible by tensor_model_parallel_size x "
            "expert_model_parallel_size = {size} (got {experts})", size=role.tp * role.ep, experts=experts), key,
            override=fix_size(role, ctx, EP, lambda n: experts % (role.tp * n) == 0))
    if not role.on("moe_permutation_async_comm"):
        yield error(role.key("moe_permutation_async_comm"), tr(
            "moe_tp_extend_ep=True requires moe_permutation_async_comm=True"), key,
            override=role.set_line("moe_permutation_async_comm", True))
    if _known_false(role, ctx, "moe_grouped_gemm"):
        yield error(role.key("moe_grouped_gemm"), tr("moe_tp_extend_ep=True requires moe_grouped_gemm=True"), key,
                    override=role.set_line("moe_grouped_gemm", True))
    if role.get("moe_expert_capacity_factor") is not None:
        yield error(role.key("moe_expert_capacity_factor"),
                    tr("moe_tp_extend_ep=True requires moe_expert_capacity_factor=null"), key,
                    override=role.set_line("moe_expert_capacity_factor", None))


__all__ = ["PERMUTE", "fmt"]
