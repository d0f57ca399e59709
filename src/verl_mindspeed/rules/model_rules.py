"""Rules that need the model (``ctx.model``, a ModelSpec) or the cluster size.

Role rules yield nothing when no model config could be read; the batch rule
needs only the composed config and the device count.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from ..errors import Issue
from ..model._constraints import (
    balanced_pipeline_split,
    experts_split,
    ffn_split,
    groups_split,
    heads_split,
    ulysses_heads_split,
    vpp_splits,
)
from ..model._layout import stage_layer_counts
from ..model.spec import MLA_KEYS, ModelSpec
from ._base import Context, RoleView, error, rule, warning

_MCORE_CFG = "megatron-core 0.12.1 megatron/core/transformer/transformer_config.py TransformerConfig.__post_init__"
_MCORE_PP = "megatron-core 0.12.1 megatron/core/transformer/transformer_block.py get_num_layers_to_build"
_FIRST, _LAST = "num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage"


def _model(ctx: Context) -> Optional[ModelSpec]:
    return ctx.model if isinstance(ctx.model, ModelSpec) else None


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _noop_indices(role: RoleView) -> list[int]:
    text = role.otc.get("noop_layers")
    if isinstance(text, str) and text and text.replace(",", "").isdigit():
        return [int(p) for p in text.split(",") if p]
    return []


def _total_layers(role: RoleView, spec: ModelSpec) -> int:
    """Layers megatron builds: the dict's ``num_layers`` when set (it counts no-op layers), else the model's."""
    return _int(role.otc.get("num_layers")) or spec.num_layers


def _stage_counts(role: RoleView, spec: ModelSpec) -> Optional[list[int]]:
    first, last = _int(role.otc.get(_FIRST)), _int(role.otc.get(_LAST))
    return stage_layer_counts(_total_layers(role, spec), role.pp, first, last)


@rule("model-heads-tp", cites=_MCORE_CFG)
def heads_divisible_by_tp(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """Attention heads split evenly over TP."""
    spec = _model(ctx)
    if spec and not heads_split(spec, role.tp):
        yield error(
            role.mkey("tensor_model_parallel_size"),
            f"tensor_model_parallel_size={role.tp} requires num_attention_heads divisible by {role.tp} "
            f"(the model has {spec.num_attention_heads})", "model-heads-tp",
        )


@rule("model-query-groups-tp", cites=_MCORE_CFG)
def query_groups_divisible_by_tp(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """KV heads (query groups) split evenly over TP: megatron-core 0.12.1 requires a multiple of TP."""
    spec = _model(ctx)
    if spec and heads_split(spec, role.tp) and not groups_split(spec, role.tp):
        yield error(
            role.mkey("tensor_model_parallel_size"),
            f"tensor_model_parallel_size={role.tp} requires num_query_groups (num_key_value_heads) a multiple of "
            f"{role.tp} (the model has {spec.num_query_groups})", "model-query-groups-tp",
        )


@rule("model-ffn-tp", cites="megatron-core 0.12.1 megatron/core/tensor_parallel/layers.py (divide(output_size, world))")
def ffn_divisible(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """MLP widths split evenly over TP (dense, shared experts) and ETP (routed experts)."""
    spec = _model(ctx)
    if not spec:
        return
    for size, name, ffn, width in ffn_split(spec, role.tp, role.etp):
        yield error(
            role.mkey(name), f"{name}={size} requires {ffn} divisible by {size} (the model has {width})",
            "model-ffn-tp",
        )


@rule("model-layers-pp", cites=_MCORE_PP)
def layers_split_over_pp(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """Layers (no-op layers included) split over PP, evenly or with uneven first/last stages and an even middle."""
    spec = _model(ctx)
    if not spec or _stage_counts(role, spec) is not None:
        return
    total, pp = _total_layers(role, spec), role.pp
    first, last = _int(role.otc.get(_FIRST)), _int(role.otc.get(_LAST))
    if first is None and last is None:
        split = balanced_pipeline_split(total, pp)
        hint = (f"e.g. +{role.key(_FIRST)}={split[0]}" + (f" +{role.key(_LAST)}={split[1]}" if split[1] else "")
                if split and split[0] else "choose a pipeline size of at most the layer count")
        yield error(
            role.mkey("pipeline_model_parallel_size"),
            f"pipeline_model_parallel_size={pp} requires the {total} layers to split evenly over {pp} stages, "
            f"or {_FIRST}/{_LAST} with an even middle", "model-layers-pp", hint=hint,
        )
        return
    given = [f"{n}={v}" for n, v in ((_FIRST, first), (_LAST, last)) if v is not None]
    middle_stages = pp - len(given)
    middle = total - (first or 0) - (last or 0)
    yield error(
        role.key(_FIRST if first is not None else _LAST),
        f"{' and '.join(given)} with pipeline_model_parallel_size={pp} require the remaining {middle} of "
        f"{total} layers to split evenly over {middle_stages} middle stage(s), at least one layer each",
        "model-layers-pp",
    )


@rule("model-vpp-layers", cites=_MCORE_CFG + "; " + _MCORE_PP)
def vpp_divides_stage_layers(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """With interleaving, every pipeline stage's layers divide by the virtual pipeline size."""
    spec, vpp = _model(ctx), role.vpp
    counts = _stage_counts(role, spec) if spec else None
    if counts and vpp and vpp > 1 and role.pp > 1 and not vpp_splits(counts, vpp):
        shown = ", ".join(map(str, counts))
        yield error(
            role.mkey("virtual_pipeline_model_parallel_size"),
            f"virtual_pipeline_model_parallel_size={vpp} requires the layers of every pipeline stage "
            f"({shown}) divisible by {vpp}", "model-vpp-layers",
        )


@rule("model-recompute-layers", cites=_MCORE_CFG + " (recompute_num_layers between 1 and the layers per rank)")
def recompute_within_rank(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """``recompute_num_layers`` cannot exceed the layers of one pipeline rank (one model chunk with VPP)."""
    spec, count = _model(ctx), _int(role.otc.get("recompute_num_layers"))
    counts = _stage_counts(role, spec) if spec else None
    if not counts or count is None or role.otc.get("recompute_granularity") != "full":
        return
    per_rank = min(counts) // (role.vpp if role.vpp and role.vpp > 1 and role.pp > 1 else 1)
    if count < 1:
        yield error(role.key("recompute_num_layers"),
                    f"recompute_granularity=full requires recompute_num_layers between 1 and {per_rank} "
                    f"(got {count})", "model-recompute-layers")
    elif count > per_rank:
        yield warning(role.key("recompute_num_layers"),
                      f"recompute_num_layers={count} requires at most the {per_rank} layers of one pipeline rank; "
                      f"megatron clamps it, so the extra has no effect", "model-recompute-layers",
                      override=role.set_line("recompute_num_layers", per_rank))


@rule("model-noop-layers", cites="mindspeed/features_manager/pipeline_parallel/noop_layers.py")
def noop_layers_match_model(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """No-op layers are extra layers: indices within the layer count, and num_layers = model layers + no-op layers."""
    spec, indices = _model(ctx), _noop_indices(role)
    if not spec or not indices:
        return
    text, declared = role.otc["noop_layers"], _int(role.otc.get("num_layers"))
    if declared is None:
        bad = [i for i in indices if i >= spec.num_layers]
        yield error(
            role.key("noop_layers"),
            f"noop_layers={text!r} requires num_layers={spec.num_layers + len(set(indices))} in "
            f"override_transformer_config (the model's {spec.num_layers} layers plus the no-op layers)"
            + (f"; out of range now: {', '.join(map(str, bad))}" if bad else ""),
            "model-noop-layers", hint="without it MindSpeed replaces real layers of the checkpoint by no-op layers",
            override=role.set_line("num_layers", spec.num_layers + len(set(indices))),
        )
    elif declared - len(set(indices)) != spec.num_layers:
        yield error(
            role.key("num_layers"),
            f"noop_layers={text!r} requires num_layers={spec.num_layers + len(set(indices))} "
            f"(the model's {spec.num_layers} layers plus {len(set(indices))} no-op), got {declared}",
            "model-noop-layers", override=role.set_line("num_layers", spec.num_layers + len(set(indices))),
        )


@rule("model-experts-ep", cites="megatron-core 0.12.1 megatron/core/transformer/moe/moe_layer.py "
      "(num_moe_experts % expert_model_parallel_size)")
def experts_divisible_by_ep(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """Routed experts split evenly over EP; EP > 1 needs experts at all."""
    spec = _model(ctx)
    if not spec or role.ep == 1:
        return
    if not spec.is_moe:
        yield error(role.mkey("expert_model_parallel_size"),
                    f"expert_model_parallel_size={role.ep} requires a MoE model ({spec.architecture} has no experts)",
                    "model-experts-ep", override=role.mset_line("expert_model_parallel_size", 1))
    elif not experts_split(spec, role.ep):
        yield error(role.mkey("expert_model_parallel_size"),
                    f"expert_model_parallel_size={role.ep} requires num_experts divisible by {role.ep} "
                    f"(the model has {spec.num_experts})", "model-experts-ep")


@rule("model-cp-ulysses-heads", cites="mindspeed/features_manager/context_parallel/ulysses_context_parallel.py; "
      "hybrid_context_parallel.py")
def ulysses_heads(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """Ulysses splits heads over CP x TP; hybrid CP over ulysses_degree_in_cp x TP."""
    spec, algo = _model(ctx), role.otc.get("context_parallel_algo")
    if not spec or role.cp == 1:
        return
    if algo == "ulysses_cp_algo" and not ulysses_heads_split(spec, role.cp, role.tp):
        yield error(
            role.key("context_parallel_algo"),
            f"context_parallel_algo=ulysses_cp_algo requires num_attention_heads divisible by "
            f"context_parallel_size x tensor_model_parallel_size = {role.cp} x {role.tp} = {role.cp * role.tp} "
            f"(the model has {spec.num_attention_heads})", "model-cp-ulysses-heads",
        )
    degree = _int(role.otc.get("ulysses_degree_in_cp"))
    if algo == "hybrid_cp_algo" and degree and not ulysses_heads_split(spec, degree, role.tp):
        yield error(
            role.key("ulysses_degree_in_cp"),
            f"context_parallel_algo=hybrid_cp_algo requires num_attention_heads divisible by "
            f"ulysses_degree_in_cp x tensor_model_parallel_size = {degree} x {role.tp} = {degree * role.tp} "
            f"(the model has {spec.num_attention_heads})", "model-cp-ulysses-heads",
        )


@rule("model-mla", cites="mindspeed/features_manager/transformer/multi_head_latent_attention/mla_feature.py")
def mla_matches_model(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """MLA switches only on an MLA model; MLA dimensions in the dict must be the model's."""
    spec = _model(ctx)
    if not spec:
        return
    switches = [n for n in ("multi_head_latent_attention", "multi_latent_attention") if role.on(n)]
    if switches and not spec.is_mla:
        yield error(role.key(switches[0]),
                    f"{switches[0]}=True and the model {spec.architecture} cannot be combined "
                    "(it has no multi-head latent attention)", "model-mla")
        return
    if not spec.is_mla:
        return
    for name in MLA_KEYS:
        given, wanted = role.otc.get(name), getattr(spec, name)
        if name in role.explicit and given != wanted:
            yield error(role.key(name),
                        f"{name}={given} requires the model's value {name}={wanted}", "model-mla",
                        override=role.set_line(name, wanted))


_VERL_BATCH = ("verl 0.9.1 verl/utils/config.py validate_config; verl/workers/config/actor.py ActorConfig.validate; "
               "verl/workers/engine_workers.py update (mini_batch_size % data-parallel size)")


def _select(cfg: Any, dotted: str) -> Any:
    node = cfg
    for part in dotted.split("."):
        try:
            node = node[part] if part in node else None
        except TypeError:
            return None
        if node is None:
            return None
    return node


@rule("batch-divisibility", cites=_VERL_BATCH, scope="run")
def batch_divisibility(roles: dict[str, RoleView], ctx: Context) -> Iterable[Issue]:
    """The batch sizes verl asserts at start (and at the first update) against the actor's data-parallel size."""
    actor, cfg, world = roles.get("actor"), ctx.config, ctx.world_size
    if actor is None or cfg is None or not world:
        return
    model_parallel = actor.tp * actor.pp * actor.cp
    if world % model_parallel:
        return  # the world-size rule reports it
    dp = world // model_parallel
    train, n = _int(_select(cfg, "data.train_batch_size")), _int(_select(cfg, "actor_rollout_ref.rollout.n")) or 1
    mini = _int(_select(cfg, "actor_rollout_ref.actor.ppo_mini_batch_size"))
    micro = _int(_select(cfg, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"))
    dynamic = _select(cfg, "actor_rollout_ref.actor.use_dynamic_bsz") is True
    sizes = f"{world} devices / (TP x PP x CP = {actor.tp} x {actor.pp} x {actor.cp})"
    if not dynamic and train and micro and (train * n) % (dp * micro):
        yield error(
            "data.train_batch_size",
            f"data.train_batch_size x actor_rollout_ref.rollout.n = {train} x {n} = {train * n} requires a multiple "
            f"of data-parallel size x actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu = {dp} x {micro} = "
            f"{dp * micro}", "batch-divisibility", hint=f"data-parallel size {dp} = {sizes}",
        )
    if not dynamic and train and mini and train < mini:
        yield error(
            "actor_rollout_ref.actor.ppo_mini_batch_size",
            f"actor_rollout_ref.actor.ppo_mini_batch_size={mini} requires data.train_batch_size >= {mini} "
            f"(got {train})", "batch-divisibility",
        )
    if mini and (mini * n) % dp:
        yield error(
            "actor_rollout_ref.actor.ppo_mini_batch_size",
            f"actor_rollout_ref.actor.ppo_mini_batch_size x actor_rollout_ref.rollout.n = {mini} x {n} = "
            f"{mini * n} requires a multiple of the actor's data-parallel size {dp}", "batch-divisibility",
            hint=f"data-parallel size {dp} = {sizes}",
        )
