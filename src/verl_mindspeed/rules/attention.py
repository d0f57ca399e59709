"""Rules on attention: flash attention, the CP algorithms, MLA, fused-operator companions."""

from __future__ import annotations

from typing import Iterable, Optional

from .. import catalog
from ..catalog import universe
from ..errors import Issue
from ..i18n import tr
from ..simulate import MEGATRON_BRIDGE
from ._base import Context, RoleView, _int, error, fmt, note, rule, warning

_CP = "mindspeed/features_manager/context_parallel/"
MLA_DIMS = ("kv_lora_rank", "v_head_dim", "qk_rope_head_dim", "qk_nope_head_dim")


def _algo(role: RoleView) -> str:
    value = role.built.get("context_parallel_algo")
    return value if isinstance(value, str) else "megatron_cp_algo"


def _heads(role: RoleView, ctx: Context) -> Optional[int]:
    return ctx.model.num_attention_heads if ctx.model is not None else _int(role.built.get("num_attention_heads"))


@rule("cp-forces-flash-attn", cites=_CP + "*.py (CP algorithms set use_flash_attn=True)",
      holds_for="MindSpeed 2.2.0+ (every algorithm except kvallgather_cp_algo)")
def cp_forces_flash_attn(role: RoleView, ctx: Context) -> Iterable[Issue]:
    if role.cp > 1 and role.given.get("use_flash_attn") is False and _algo(role) != "kvallgather_cp_algo":
        yield note(
            role.key("use_flash_attn"),
            tr("use_flash_attn=False is overridden: with context_parallel_size={cp} MindSpeed's CP algorithm turns "
               "flash attention on itself", cp=role.cp),
            "cp-forces-flash-attn", override=role.set_line("use_flash_attn", True),
        )


#: MindSpeed switches read only inside its ring attention (``core/context_parallel/utils.py``,
#: ``ring_context_parallel.py``); no release checks them.
RING_ONLY = ("use_fused_ring_attention_update", "megatron_cp_in_bnsd")


@rule("cp-algo-without-cp", cites=_CP + "*.py (each algorithm acts only when context_parallel_size > 1); "
      "mindspeed/core/context_parallel/utils.py, ring_context_parallel/ring_context_parallel.py (the ring-only "
      "switches)", covers=RING_ONLY)
def cp_algo_without_cp(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """The CP algorithm, and the switches only its ring attention reads, do nothing at context_parallel_size 1."""
    if role.cp != 1:
        return
    algo = role.given.get("context_parallel_algo")
    if algo not in (None, "megatron_cp_algo"):
        yield warning(
            role.key("context_parallel_algo"),
            tr("context_parallel_algo={algo} has no effect: context_parallel_size is 1", algo=algo),
            "cp-algo-without-cp", hint=tr("set megatron.context_parallel_size > 1"),
        )
    for name in RING_ONLY:
        if role.given.get(name) is True:
            yield warning(
                role.key(name),
                tr("{name}=True has no effect: only MindSpeed's ring attention reads it, and context_parallel_size "
                   "is 1", name=name),
                "cp-algo-without-cp", hint=tr("set megatron.context_parallel_size > 1, or drop the switch"),
                override=role.set_line(name, False),
            )


@rule("cp-algo-release", cites="MindSpeed arguments per release branch (context_parallel_algo choices)",
      holds_for="kvallgather_cp_algo: MindSpeed 26.0.0+")
def cp_algo_release(role: RoleView, ctx: Context) -> Iterable[Issue]:
    algo = role.given.get("context_parallel_algo")
    if algo != "kvallgather_cp_algo" or ctx.release not in universe.releases():
        return
    spec = universe.mindspeed_args(ctx.release).get("context_parallel_algo")
    if spec and algo not in (spec.get("choices") or []):
        yield error(
            role.key("context_parallel_algo"),
            tr("context_parallel_algo={algo} requires MindSpeed 26.0.0 or later (checking against {release}, which "
               "has no code for it)", algo=algo, release=ctx.release), "cp-algo-release",
            hint=tr("use megatron_cp_algo or ulysses_cp_algo, or check with --mindspeed-release of your cluster"),
        )


@rule("cp-window-size", cites=_CP + "context_parallel_feature.py validate_args",
      holds_for="MindSpeed 2.2.0+: megatron_cp_algo (window < CP) and hybrid_cp_algo (window < ring degree)")
def cp_window_size(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """The double-ring window is checked only by the ring and hybrid algorithms, against their ring size."""
    window, algo = _int(role.built.get("cp_window_size")), _algo(role)
    if window is None or role.cp == 1 or algo not in ("megatron_cp_algo", "hybrid_cp_algo"):
        return
    ring = role.cp
    if algo == "hybrid_cp_algo":
        degree = _int(role.built.get("ulysses_degree_in_cp"))
        if not degree or role.cp % degree or role.cp // degree <= 1:
            return  # the hybrid rule reports the degree
        ring = role.cp // degree
    if not (1 <= window < ring) or ring % window:
        yield error(
            role.key("cp_window_size"),
            tr("cp_window_size={window} requires a divisor of the ring size {ring} in [1, {ring}) "
               "(context_parallel_algo={algo})", window=window, ring=ring, algo=algo),
            "cp-window-size", override=role.set_line("cp_window_size", 1),
        )


@rule("hybrid-cp-ulysses-degree", cites=_CP + "context_parallel_feature.py, adaptive_context_parallel.py "
      "validate_args", holds_for="MindSpeed 2.2.0+")
def hybrid_cp_ulysses_degree(role: RoleView, ctx: Context) -> Iterable[Issue]:
    algo = _algo(role)
    if algo not in ("hybrid_cp_algo", "hybrid_adaptive_cp_algo") or role.cp == 1:
        return
    degree = _int(role.built.get("ulysses_degree_in_cp"))
    heads, tp = _heads(role, ctx), role.built.get("tensor_model_parallel_size", role.tp)
    fix = _ulysses_fix(role, heads, tp if isinstance(tp, int) else role.tp)
    if degree is None:
        yield error(
            role.key("ulysses_degree_in_cp"),
            tr("context_parallel_algo={algo} requires ulysses_degree_in_cp", algo=algo),
            "hybrid-cp-ulysses-degree",
            hint=tr("a divisor of context_parallel_size={cp}, smaller than it", cp=role.cp), override=fix,
        )
    elif role.cp % degree or role.cp // degree <= 1:
        yield error(
            role.key("ulysses_degree_in_cp"),
            tr("context_parallel_algo={algo} requires context_parallel_size / ulysses_degree_in_cp to be an integer "
               "> 1 (got {cp} / {degree})", algo=algo, cp=role.cp, degree=degree),
            "hybrid-cp-ulysses-degree", override=fix,
        )
    elif heads and isinstance(tp, int) and heads % (degree * tp):
        yield error(
            role.key("ulysses_degree_in_cp"),
            tr("context_parallel_algo={algo} requires num_attention_heads divisible by ulysses_degree_in_cp x "
               "tensor_model_parallel_size = {degree} x {tp} = {size} (the model has {heads})", algo=algo,
               degree=degree, tp=tp, size=degree * tp, heads=heads), "hybrid-cp-ulysses-degree", override=fix,
        )


def _ulysses_fix(role: RoleView, heads: Optional[int], tp: int) -> str:
    """The largest Ulysses degree a hybrid CP allows (a divisor of CP that leaves a ring > 1 and splits the heads
    over degree x TP), else the ring algorithm, which splits no heads."""
    degrees = [d for d in range(role.cp - 1, 0, -1) if role.cp % d == 0 and (not heads or heads % (d * tp) == 0)]
    if degrees:
        return role.set_line("ulysses_degree_in_cp", degrees[0])
    return role.set_line("context_parallel_algo", "megatron_cp_algo")


_SEQ_FACTOR = {"megatron_cp_algo": 2, "hybrid_cp_algo": 2, "ulysses_cp_algo": 1, "adaptive_cp_algo": 1,
               "hybrid_adaptive_cp_algo": 1, "kvallgather_cp_algo": 2}
_SEQ_UNGUARDED = ("ulysses_cp_algo", "adaptive_cp_algo", "hybrid_adaptive_cp_algo")


@rule("cp-seq-length", cites=_CP + "*.py (ring/hybrid/kvallgather: seq_length % (2*cp); Ulysses/adaptive: "
      "seq_length % cp, read unguarded); Megatron-Bridge v0.5.1 models/gpt_provider.py (the provider's seq_length)",
      holds_for="MindSpeed 2.2.0+")
def cp_seq_length(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """MindSpeed's CP features read seq_length from the built config: the dict's, else the namespace's, else (on
    Megatron-Bridge, verl 0.9's default path) the provider's, which is the model's max_position_embeddings."""
    if role.cp == 1:
        return
    algo = _algo(role)
    seq = role.built.get("seq_length")
    if seq is None and role.bridge_kind == MEGATRON_BRIDGE:
        return  # the provider carries seq_length; its value comes from the model, unknown here
    if seq is None and algo in _SEQ_UNGUARDED:
        longest = longest_sequence(ctx)
        factor = _SEQ_FACTOR.get(algo, 1) * role.cp
        yield error(
            role.key("seq_length"),
            tr("context_parallel_algo={algo} requires seq_length in override_transformer_config: MindSpeed reads it "
               "unguarded and fails inside the worker without it", algo=algo),
            "cp-seq-length", hint=tr("the longest sequence: data.max_prompt_length + data.max_response_length, "
                                     "rounded up to a multiple of {cp}", cp=factor),
            override=role.set_line("seq_length", -(-longest // factor) * factor) if longest else None,
        )
        return
    if _int(seq) is None:
        return
    factor = _SEQ_FACTOR.get(algo, 1) * role.cp
    if seq % factor:
        yield error(
            role.key("seq_length"),
            tr("context_parallel_algo={algo} requires seq_length divisible by {factor} (got {seq})",
               algo=algo, factor=factor, seq=seq),
            "cp-seq-length", override=role.set_line("seq_length", -(-seq // factor) * factor),
        )


def longest_sequence(ctx: Context) -> Optional[int]:
    """data.max_prompt_length + data.max_response_length of the composed config, when both are integers."""
    if ctx.config is None:
        return None
    from omegaconf import OmegaConf

    try:
        parts = [OmegaConf.select(ctx.config, f"data.max_{k}_length", default=None) for k in ("prompt", "response")]
    except Exception:  # noqa: BLE001 - an interpolation that does not resolve: no suggestion
        return None
    if all(_int(p) is not None and p > 0 for p in parts):
        return sum(parts)
    return None


@rule("mla-dimensions", cites="mindspeed/features_manager/transformer/multi_head_latent_attention/mla_feature.py",
      holds_for="MindSpeed 2.2.0+")
def mla_dimensions(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """MindSpeed's MLA asserts its dimensions in its namespace: the dict, not config.json."""
    if role.ns.get("multi_head_latent_attention") is not True:
        return
    missing = [d for d in MLA_DIMS if role.ns.get(d) is None]
    if not missing:
        return
    from ..model import mla_dims

    dims = mla_dims(ctx.model) if ctx.model is not None else {}
    fixes = [role.set_line(d, dims[d]) for d in missing if dims.get(d) is not None]
    if ctx.model is not None and not ctx.model.is_mla:  # no dimensions to give: the switch cannot work here
        fixes = [role.set_line("multi_head_latent_attention", False)]
    yield error(
        role.key("multi_head_latent_attention"),
        tr("multi_head_latent_attention=True requires {keys} in override_transformer_config: MindSpeed's MLA reads "
           "them there, not from the model's config.json", keys=", ".join(missing)),
        "mla-dimensions", override=" ".join(fixes) or None,
        hint="" if fixes else tr("give the model's config.json (check --model-config PATH, or a local "
                                 "actor_rollout_ref.model.path) to get the values"),
    )


@rule("fused-rope-position-embedding", cites="mindspeed/features_manager/fusions/fused_rope.py validate_args",
      holds_for="MindSpeed 2.3.0, 26.0.0, 26.1.0, core_r0.16.0, master")
def fused_rope(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """Fused RoPE asserts position_embedding_type == rope on the built config; only Megatron-Bridge sets it."""
    if not role.on("use_fused_rotary_pos_emb"):
        return
    value = role.built.get("position_embedding_type")
    if value is None:
        yield error(
            role.key("use_fused_rotary_pos_emb"),
            tr("use_fused_rotary_pos_emb=True requires position_embedding_type=rope in override_transformer_config: "
               "this model bridge does not set it, and MindSpeed's check fails with AttributeError"),
            "fused-rope-position-embedding", override=role.set_line("position_embedding_type", "rope"),
        )
    elif value != "rope":
        yield error(
            role.key("position_embedding_type"),
            tr("use_fused_rotary_pos_emb=True requires position_embedding_type=rope (got {value})", value=value),
            "fused-rope-position-embedding", override=role.set_line("position_embedding_type", "rope"),
        )


def _companions() -> list[tuple[str, str, object]]:
    """(switch, companion key, value) of every feature this rule guards, from the catalogue."""
    return [(f.primary.name, key, value) for f in catalog.FEATURES if "fused-op-companions" in f.rules
            for key, value in f.companion_values()]


@rule("fused-op-companions", cites="MindSpeed docs/zh/user-guide/verl.md (fused RMSNorm/SwiGLU rows)",
      holds_for="MindSpeed 2.2.0+")
def fused_op_companions(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """MindSpeed applies its fused RMSNorm/SwiGLU kernels whatever the flag; a mismatching companion is suspect."""
    for switch, companion, wanted in _companions():
        if role.on(switch) and companion in role.given and role.given[companion] != wanted:
            yield warning(
                role.key(companion),
                tr("{switch}=True requires {companion}={wanted} (got {value}); the fused kernel does not match this "
                   "model", switch=switch, companion=companion, wanted=fmt(wanted), value=fmt(role.given[companion])),
                "fused-op-companions", override=role.set_line(companion, wanted),
            )
