"""Rules on attention: flash attention, the CP algorithms, MLA, fused-operator companions."""

from __future__ import annotations

from typing import Iterable

from ..catalog import universe
from ..errors import Issue
from ._base import Context, RoleView, error, fmt, rule, warning

_CP = "mindspeed/features_manager/context_parallel/*.py"
MLA_DIMS = ("kv_lora_rank", "v_head_dim", "qk_rope_head_dim", "qk_nope_head_dim")


@rule("flash-attn-off", cites="MindSpeed docs/zh/user-guide/verl.md (FA must be on)")
def flash_attn_off(role: RoleView, ctx: Context) -> Iterable[Issue]:
    if role.otc.get("use_flash_attn") is False and role.cp == 1:
        yield warning(
            role.key("use_flash_attn"),
            "use_flash_attn=False: MindSpeed then never registers its attention patch (the guide: FA must be on)",
            "flash-attn-off", override=role.set_line("use_flash_attn", True),
        )


@rule("cp-forces-flash-attn", cites=_CP + " (every CP algorithm forces use_flash_attn=True)")
def cp_forces_flash_attn(role: RoleView, ctx: Context) -> Iterable[Issue]:
    if role.cp > 1 and role.otc.get("use_flash_attn") is False and role.otc.get("context_parallel_algo") != \
            "kvallgather_cp_algo":
        yield error(
            role.key("use_flash_attn"),
            f"context_parallel_size={role.cp} requires use_flash_attn=True",
            "cp-forces-flash-attn", override=role.set_line("use_flash_attn", True),
        )


@rule("cp-algo-without-cp", cites=_CP)
def cp_algo_without_cp(role: RoleView, ctx: Context) -> Iterable[Issue]:
    algo = role.otc.get("context_parallel_algo")
    if algo not in (None, "megatron_cp_algo") and role.cp == 1:
        yield warning(
            role.key("context_parallel_algo"),
            f"context_parallel_algo={algo} has no effect: context_parallel_size is 1",
            "cp-algo-without-cp", hint="set megatron.context_parallel_size > 1",
        )


@rule("cp-algo-release", cites="mindspeed_args.json (choices registered per release branch)")
def cp_algo_release(role: RoleView, ctx: Context) -> Iterable[Issue]:
    algo = role.otc.get("context_parallel_algo")
    if algo != "kvallgather_cp_algo":
        return
    spec = universe.mindspeed_args(ctx.release).get("context_parallel_algo") if ctx.release in universe.releases() \
        else None
    if spec and algo not in (spec.get("choices") or []):
        yield error(
            role.key("context_parallel_algo"),
            f"context_parallel_algo={algo} requires MindSpeed 26.0.0 or later (checking against {ctx.release}, "
            "which has no code for it)", "cp-algo-release",
            hint="use megatron_cp_algo or ulysses_cp_algo, or check with --mindspeed-release of your cluster",
        )


@rule("cp-window-size", cites="mindspeed/features_manager/context_parallel/context_parallel_feature.py")
def cp_window_size(role: RoleView, ctx: Context) -> Iterable[Issue]:
    window = role.otc.get("cp_window_size")
    if not isinstance(window, int) or isinstance(window, bool) or window == 1 or role.cp == 1:
        return
    if not (1 <= window < role.cp) or role.cp % window:
        yield error(
            role.key("cp_window_size"),
            f"cp_window_size={window} requires a divisor of context_parallel_size={role.cp} in [1, {role.cp})",
            "cp-window-size",
        )


@rule("hybrid-cp-ulysses-degree", cites="mindspeed/features_manager/context_parallel/ulysses_context_parallel.py")
def hybrid_cp_ulysses_degree(role: RoleView, ctx: Context) -> Iterable[Issue]:
    if role.otc.get("context_parallel_algo") != "hybrid_cp_algo" or role.cp == 1:
        return
    degree = role.otc.get("ulysses_degree_in_cp")
    if not isinstance(degree, int) or isinstance(degree, bool):
        yield error(
            role.key("ulysses_degree_in_cp"), "context_parallel_algo=hybrid_cp_algo requires ulysses_degree_in_cp",
            "hybrid-cp-ulysses-degree", hint=f"a divisor of context_parallel_size={role.cp}, smaller than it",
        )
    elif role.cp % degree or role.cp // degree <= 1:
        yield error(
            role.key("ulysses_degree_in_cp"),
            f"context_parallel_algo=hybrid_cp_algo requires context_parallel_size / ulysses_degree_in_cp to be an "
            f"integer > 1 (got {role.cp} / {degree})",
            "hybrid-cp-ulysses-degree",
        )


_SEQ_FACTOR = {"megatron_cp_algo": 2, "hybrid_cp_algo": 2, "ulysses_cp_algo": 1, "adaptive_cp_algo": 1,
               "hybrid_adaptive_cp_algo": 1, "kvallgather_cp_algo": 2}
_SEQ_UNGUARDED = ("ulysses_cp_algo", "adaptive_cp_algo", "hybrid_adaptive_cp_algo")


@rule("cp-seq-length", cites=_CP + " (ring/hybrid: seq_length % (2*cp); Ulysses/adaptive: seq_length % cp)")
def cp_seq_length(role: RoleView, ctx: Context) -> Iterable[Issue]:
    if role.cp == 1:
        return
    algo = role.otc.get("context_parallel_algo") or "megatron_cp_algo"
    seq = role.otc.get("seq_length")
    if seq is None and algo in _SEQ_UNGUARDED:
        yield error(
            role.key("seq_length"),
            f"context_parallel_algo={algo} requires seq_length in override_transformer_config: MindSpeed reads it "
            "unguarded and fails inside the worker without it",
            "cp-seq-length", hint="the longest sequence: data.max_prompt_length + data.max_response_length, "
            f"rounded up to a multiple of {role.cp}",
        )
        return
    if not isinstance(seq, int) or isinstance(seq, bool):
        return
    factor = _SEQ_FACTOR.get(algo, 1) * role.cp
    if seq % factor:
        yield error(
            role.key("seq_length"),
            f"context_parallel_algo={algo} requires seq_length divisible by {factor} (got {seq})",
            "cp-seq-length",
        )


@rule("mla-dimensions", cites="mindspeed/features_manager/transformer/multi_head_latent_attention/mla_feature.py")
def mla_dimensions(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """MindSpeed's MLA reads its dimensions from the dict; with a model config they are filled in."""
    if not role.on("multi_head_latent_attention") or ctx.model is not None:
        return
    missing = [d for d in MLA_DIMS if role.otc.get(d) is None]
    if missing:
        yield error(
            role.key("multi_head_latent_attention"),
            f"multi_head_latent_attention=True requires {', '.join(missing)} in override_transformer_config",
            "mla-dimensions",
            hint="give the model's config.json (check --model-config PATH, or a local actor_rollout_ref.model.path) "
                 "and verl-mindspeed fills them in",
        )


_COMPANIONS = (
    ("use_fused_rmsnorm", "normalization", "RMSNorm"),
    ("use_fused_swiglu", "swiglu", True),
    ("use_fused_rotary_pos_emb", "position_embedding_type", "rope"),
)


@rule("fused-op-companions", cites="MindSpeed docs/zh/user-guide/verl.md (fused RMSNorm/SwiGLU/RoPE rows)")
def fused_op_companions(role: RoleView, ctx: Context) -> Iterable[Issue]:
    for switch, companion, wanted in _COMPANIONS:
        if role.on(switch) and companion in role.otc and role.otc[companion] != wanted:
            yield warning(
                role.key(companion),
                f"{switch}=True requires {companion}={fmt(wanted)} (got {fmt(role.otc[companion])}); "
                "the fused kernel does not match this model",
                "fused-op-companions", override=role.set_line(companion, wanted),
            )
