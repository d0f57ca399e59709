"""Rules that need the model (``ctx.model``, a ModelSpec), and its memory against the device.

Role rules yield nothing when no model config could be read. Layer counts are judged per pipeline stage and
per model chunk, the way megatron-core assigns them (``get_num_layers_to_build``). The batch sizes verl asserts
are in :mod:`.verl_engine`.
"""

from __future__ import annotations

from typing import Iterable, Optional

from ..errors import Issue
from ..i18n import tr, trn
from ..model._constraints import experts_split, ffn_split, heads_split, interleaved_split, vpp_splits
from ..model._layout import stage_layer_counts
from ..model.spec import MLA_KEYS, ModelSpec
from ._base import FIRST_STAGE as _FIRST
from ._base import LAST_STAGE as _LAST
from ._base import Context, RoleView, _int, error, issue, rule, size_fix, warning
from ._sizes import EP, PP, TP, fix_size
from .memory import noop_indices

_MCORE_CFG = "megatron/core/transformer/transformer_config.py TransformerConfig.__post_init__"
_MCORE_PP = "megatron/core/transformer/transformer_block.py get_num_layers_to_build"
_BOTH = "megatron-core 0.12.1 and 0.16.1"


def _model(ctx: Context) -> Optional[ModelSpec]:
    return ctx.model if isinstance(ctx.model, ModelSpec) else None


def _total_layers(role: RoleView, spec: ModelSpec) -> int:
    """Layers megatron builds: the dict's ``num_layers`` when set (it counts no-op layers), else the model's."""
    return _int(role.given.get("num_layers")) or spec.num_layers


def stage_counts(role: RoleView, spec: ModelSpec) -> Optional[list[int]]:
    first, last = _int(role.given.get(_FIRST)), _int(role.given.get(_LAST))
    return stage_layer_counts(_total_layers(role, spec), role.pp, first, last)


@rule("model-heads-tp", cites=_MCORE_CFG, holds_for=_BOTH)
def heads_divisible_by_tp(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """Attention heads split evenly over TP."""
    spec = _model(ctx)
    if spec and not heads_split(spec, role.tp):
        yield error(role.mkey("tensor_model_parallel_size"), tr(
            "tensor_model_parallel_size={tp} requires num_attention_heads divisible by {tp} (the model has {heads})",
            tp=role.tp, heads=spec.num_attention_heads), "model-heads-tp", override=fix_size(role, ctx, TP))


@rule("model-query-groups-tp", cites=_MCORE_CFG,
      holds_for="megatron-core 0.12.1: a multiple of TP; 0.16.1: a multiple or a divisor of TP")
def query_groups_divisible_by_tp(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """KV heads (query groups) split over TP."""
    spec = _model(ctx)
    if not spec or not heads_split(spec, role.tp) or spec.num_query_groups % role.tp == 0:
        return
    if ctx.core >= (0, 16):
        if role.tp % spec.num_query_groups:
            yield error(role.mkey("tensor_model_parallel_size"), tr(
                "tensor_model_parallel_size={tp} requires num_query_groups (num_key_value_heads) to be a multiple or a "
                "divisor of {tp} (the model has {groups})", tp=role.tp, groups=spec.num_query_groups),
                "model-query-groups-tp", override=fix_size(role, ctx, TP))
        return
    yield error(role.mkey("tensor_model_parallel_size"), tr(
        "tensor_model_parallel_size={tp} requires num_query_groups (num_key_value_heads) a multiple of {tp} "
        "(the model has {groups}; megatron-core 0.16 also accepts a divisor)", tp=role.tp,
        groups=spec.num_query_groups), "model-query-groups-tp", override=fix_size(role, ctx, TP))


@rule("model-ffn-tp", cites="megatron/core/tensor_parallel/layers.py (divide(output_size, world))", holds_for=_BOTH)
def ffn_divisible(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """MLP widths split evenly over TP (dense, shared experts) and ETP (routed experts)."""
    spec = _model(ctx)
    if not spec:
        return
    for size, name, ffn, width in ffn_split(spec, role.tp, role.etp):
        fix = fix_size(role, ctx, TP) if name == TP else size_fix(role, ctx, name, 1)
        yield error(role.mkey(name), tr("{name}={size} requires {ffn} divisible by {size} (the model has {width})",
                                        name=name, size=size, ffn=ffn, width=width), "model-ffn-tp", override=fix)


def _set_elsewhere(role: RoleView, ctx: Context, key: str) -> bool:
    """Whether another role's dict sets ``key``."""
    return any(b.given.get(key) is not None for name, b in (ctx.builds or {}).items() if name != role.name)


@rule("model-layers-pp", cites=_MCORE_PP, holds_for=_BOTH + ": no exception where the stages do not add up "
      "(0.16.1 refuses both uneven sizes at PP=1 only when they add up to num_layers); fewer layers are built")
def layers_split_over_pp(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """Layers (no-op layers included) split over PP, evenly or with uneven first/last stages and an even middle.

    Both uneven sizes at PP=1 need no model to judge: the remaining layers divide by PP - 2 = -1, so no check
    fires, and the one stage, first and last at once, builds ``num_layers_in_last_pipeline_stage`` layers."""
    spec = _model(ctx)
    first, last = _int(role.given.get(_FIRST)), _int(role.given.get(_LAST))
    if first is not None and last is not None and role.built_size("pipeline_model_parallel_size") == 1:
        yield error(role.key(_LAST), tr(
            "num_layers_in_first_pipeline_stage and num_layers_in_last_pipeline_stage at pipeline_model_parallel_size"
            "=1: megatron-core raises nothing and builds num_layers_in_last_pipeline_stage={last} layers{of}",
            last=last, of=tr(" of the model's {layers}", layers=spec.num_layers) if spec else ""),
            "model-layers-pp", hint=tr("with one pipeline stage the split means nothing: drop both keys"),
            override=role.set_line(_FIRST, None) + " " + role.set_line(_LAST, None))
        return
    if not spec or role.pp == 1 or stage_counts(role, spec) is not None:
        return
    total, pp = _total_layers(role, spec), role.pp
    # the fix's split; under interleaving, one whose every stage's layers VPP divides, else VPP goes in the same line
    fitting, keeps_vpp = interleaved_split(total, pp, role.vpp)
    keeps = "" if keeps_vpp else " " + role.mset_line("virtual_pipeline_model_parallel_size", None)
    if first is None and last is None:
        split = fitting
        if split and split[0] and pp == 2 and _set_elsewhere(role, ctx, _LAST) \
                and not _set_elsewhere(role, ctx, _FIRST):
            # the same split through the key another role's dict sets: MindSpeed's namespace hands one role's stage
            # size to the roles built after it, and first and last together fail at PP=2 (uneven-pp-needs-middle)
            split = (None, total - split[0])
        if split and (split[0] or split[1]):  # keep PP: the most even uneven split
            hint = tr("or a pipeline size that divides {total}", total=total)
            fix = " ".join(role.set_line(k, v) for k, v in ((_FIRST, split[0]), (_LAST, split[1])) if v) + keeps
        else:
            hint = tr("choose a pipeline size of at most the layer count")
            fix = fix_size(role, ctx, PP)
        yield error(role.mkey("pipeline_model_parallel_size"), tr(
            "pipeline_model_parallel_size={pp} requires the {total} layers to split evenly over {pp} stages, or "
            "num_layers_in_first_pipeline_stage/num_layers_in_last_pipeline_stage with an even middle",
            pp=pp, total=total), "model-layers-pp", hint=hint, override=fix)
        return
    given = " and ".join(f"{n}={v}" for n, v in ((_FIRST, first), (_LAST, last)) if v is not None)
    middle_stages = pp - (first is not None) - (last is not None)
    split = fitting  # the fix: the most even split (null where the layers divide)
    fix = fix_size(role, ctx, PP) if split is None else " ".join(
        role.set_line(k, v) for k, v in ((_FIRST, split[0]), (_LAST, split[1])) if v is not None or
        role.given.get(k) is not None) + keeps
    yield error(role.key(_FIRST if first is not None else _LAST), trn(
        "{given} with pipeline_model_parallel_size={pp} require the remaining {middle} of {total} layers to fill "
        "the {stages} other stage, at least one layer",
        "{given} with pipeline_model_parallel_size={pp} require the remaining {middle} of {total} layers to split "
        "evenly over the {stages} other stages, at least one layer each", middle_stages, given=given, pp=pp,
        middle=total - (first or 0) - (last or 0), total=total, stages=middle_stages), "model-layers-pp",
        override=fix or None)


@rule("model-vpp-layers", cites=_MCORE_CFG + "; " + _MCORE_PP, holds_for=_BOTH)
def vpp_divides_stage_layers(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """With interleaving, every pipeline stage's layers divide by the virtual pipeline size."""
    spec, vpp = _model(ctx), role.vpp
    counts = stage_counts(role, spec) if spec else None
    if counts and vpp and vpp > 1 and role.pp > 1 and not vpp_splits(counts, vpp):
        yield error(role.mkey("virtual_pipeline_model_parallel_size"), tr(
            "virtual_pipeline_model_parallel_size={vpp} requires the layers of every pipeline stage ({counts}) "
            "divisible by {vpp}", vpp=vpp, counts=", ".join(map(str, counts))), "model-vpp-layers",
            override=role.mset_line("virtual_pipeline_model_parallel_size", None))


def chunk_layer_counts(role: RoleView, spec: ModelSpec) -> Optional[list[int]]:
    """Layers of each model chunk megatron builds: one per stage, or VPP chunks per stage."""
    counts = stage_counts(role, spec)
    if counts is None:
        return None
    vpp = role.vpp if role.vpp and role.vpp > 1 and role.pp > 1 else 1
    if any(c % vpp for c in counts):
        return None  # model-vpp-layers reports it
    return [c // vpp for c in counts for _ in range(vpp)]


@rule("model-recompute-layers", cites="megatron/core/transformer/transformer_block.py _checkpointed_forward "
      "(uniform: layer_idx += recompute_num_layers, IndexError past the chunk)",
      holds_for=_BOTH + " (MindSpeed replaces the function only for block)")
def recompute_divides_chunks(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """Uniform full recompute steps through each chunk by ``recompute_num_layers``: it must divide every chunk."""
    spec, count = _model(ctx), _int(role.given.get("recompute_num_layers"))
    if not spec or count is None or count < 1 or role.given.get("recompute_granularity") != "full" \
            or role.given.get("recompute_method") != "uniform":
        return
    chunks = chunk_layer_counts(role, spec)
    if not chunks:
        return
    bad = sorted({c for c in chunks if c % count})
    if bad:
        divisors = [d for d in range(1, min(chunks) + 1) if all(c % d == 0 for c in chunks)]
        yield error(role.key("recompute_num_layers"), tr(
            "recompute_method=uniform with recompute_num_layers={count} requires it to divide the layers of every "
            "pipeline stage and model chunk ({chunks}): megatron's uniform recompute then indexes past the chunk "
            "(IndexError)", count=count, chunks=", ".join(map(str, sorted(set(chunks))))), "model-recompute-layers",
            hint=tr("values that divide every chunk: {values}; or recompute_method=block", values=", ".join(
                map(str, divisors))), override=role.set_line("recompute_num_layers", max(divisors)))


@rule("model-noop-layers", cites="mindspeed/features_manager/pipeline_parallel/noop_layers.py",
      holds_for="MindSpeed 2.2.0+")
def noop_layers_match_model(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """No-op layers are extra layers: num_layers = model layers + no-op layers."""
    spec, indices = _model(ctx), noop_indices(role)
    if not spec or not indices:
        return
    text, declared = role.built["noop_layers"], _int(role.given.get("num_layers"))
    wanted = spec.num_layers + len(indices)
    if declared is None:
        bad = [i for i in indices if i >= spec.num_layers]
        yield error(role.key("noop_layers"), tr(
            "noop_layers={text} requires num_layers={wanted} in override_transformer_config (the model's {layers} "
            "layers plus the no-op layers){extra}", text=repr(text), wanted=wanted, layers=spec.num_layers,
            extra=tr("; out of range now: {bad}", bad=", ".join(map(str, bad))) if bad else ""),
            "model-noop-layers", hint=tr("without it MindSpeed replaces real layers of the checkpoint by no-op layers"),
            override=role.set_line("num_layers", wanted))
    elif declared != wanted:
        yield error(role.key("num_layers"), tr(
            "noop_layers={text} requires num_layers={wanted} (the model's {layers} layers plus {n} no-op), got "
            "{declared}", text=repr(text), wanted=wanted, layers=spec.num_layers, n=len(indices), declared=declared),
            "model-noop-layers", override=role.set_line("num_layers", wanted))


@rule("model-experts-ep", cites="megatron/core/transformer/moe/moe_layer.py (num_moe_experts % "
      "expert_model_parallel_size)", holds_for=_BOTH)
def experts_divisible_by_ep(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """Routed experts split evenly over EP; EP > 1 needs experts at all."""
    spec = _model(ctx)
    if not spec or role.ep == 1:
        return
    # Without experts only TransformerConfig's own check can fail, and it reads the config's EP (the dict's when it
    # repeats the size: verl 0.9.1 copies it over the engine's).
    if not spec.is_moe:
        if role.built_size("expert_model_parallel_size") > 1:
            yield error(role.mkey("expert_model_parallel_size"), tr(
                "expert_model_parallel_size={ep} requires a MoE model ({arch} has no experts)", ep=role.ep,
                arch=spec.architecture), "model-experts-ep", override=role.mset_line("expert_model_parallel_size", 1))
    elif not experts_split(spec, role.ep):
        yield error(role.mkey("expert_model_parallel_size"), tr(
            "expert_model_parallel_size={ep} requires num_experts divisible by {ep} (the model has {experts})",
            ep=role.ep, experts=spec.num_experts), "model-experts-ep", override=fix_size(role, ctx, EP))


@rule("model-cp-ulysses-heads", cites="mindspeed/features_manager/context_parallel/ulysses_context_parallel.py",
      holds_for="MindSpeed 2.2.0+")
def ulysses_heads(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """Ulysses splits heads over CP x TP."""
    spec = _model(ctx)
    if not spec or role.cp == 1 or role.built.get("context_parallel_algo") != "ulysses_cp_algo":
        return
    if spec.num_attention_heads % (role.cp * role.tp):
        yield error(role.key("context_parallel_algo"), tr(
            "context_parallel_algo=ulysses_cp_algo requires num_attention_heads divisible by context_parallel_size x "
            "tensor_model_parallel_size = {cp} x {tp} = {size} (the model has {heads})", cp=role.cp, tp=role.tp,
            size=role.cp * role.tp, heads=spec.num_attention_heads), "model-cp-ulysses-heads",
            override=role.set_line("context_parallel_algo", "megatron_cp_algo"))


@rule("model-mla", cites="mindspeed/features_manager/transformer/multi_head_latent_attention/mla_feature.py",
      holds_for="MindSpeed 2.2.0+")
def mla_matches_model(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """MLA switches only on an MLA model; MLA dimensions in the dict must be the model's."""
    spec = _model(ctx)
    if not spec:
        return
    switches = [n for n in ("multi_head_latent_attention", "multi_latent_attention") if role.given.get(n) is True]
    if switches and not spec.is_mla:
        yield error(role.key(switches[0]), tr(
            "{switch}=True and the model {arch} cannot be combined (it has no multi-head latent attention)",
            switch=switches[0], arch=spec.architecture), "model-mla",
            override=" ".join(role.set_line(s, False) for s in switches))
        return
    if not spec.is_mla:
        return
    for name in MLA_KEYS:
        given, wanted = role.given.get(name), getattr(spec, name)
        if name in role.explicit and given != wanted:
            yield error(role.key(name), tr("{name}={given} requires the model's value {name}={wanted}", name=name,
                                           given=given, wanted=wanted), "model-mla",
                        override=role.set_line(name, wanted))


@rule("model-memory", scope="run", holds_for="the planner's model (docs/model-checks.md)",
      cites="verl_mindspeed.model.memory.estimate_for_role (weights, gradients, optimizer, activations as megatron "
            "stores them, logits as verl computes them, what each phase holds after verl's offloads, non-tensor "
            "memory calibrated on published peaks); run options read as verl 0.9.1 reads them "
            "(verl_mindspeed.model.verl_options)")
def memory_estimate(roles: dict[str, RoleView], ctx: Context) -> Iterable[Issue]:
    """The actor's estimated peak per device over its phases; a warning above 90% of the device's memory."""
    actor, spec, cfg = roles.get("actor"), _model(ctx), ctx.config
    if actor is None or spec is None or not ctx.world_size or cfg is None:
        return
    from ..model.memory import HEADROOM, MemoryOptions, estimate_for_role  # the engine, only with a model
    from ..model.verl_options import options_from_config

    found = options_from_config(cfg)
    found.update(ref_model="ref" in roles, ref_param_offload="ref" in roles and roles["ref"].megatron.get(
        "param_offload") is True)
    options = MemoryOptions(**found)
    estimate = estimate_for_role(spec, {**actor.megatron, "override_transformer_config": actor.given},
                                 ctx.world_size, options)
    if estimate is None:
        return
    peak, limit = estimate.peak_gib, ctx.device_memory_gib
    text = tr("estimated peak {peak:.1f} GiB per device for the actor, on stage {stage} in its {phase} phase ({seq} "
              "tokens x {micro} per update micro-batch, {world} devices); the device has {limit:g} GiB, {usable:.1f} "
              "usable at {share:.0%} (plan's default --headroom)", peak=peak, stage=estimate.stage,
              phase=estimate.phase, seq=options.seq_len, micro=options.micro_batch_size, world=ctx.world_size,
              limit=limit, usable=HEADROOM * limit, share=HEADROOM)
    hint = tr("an estimate (docs/model-checks.md): verl-mindspeed plan --model ... lists layouts that fit")
    if peak > HEADROOM * limit:
        yield warning(actor.mkey("tensor_model_parallel_size"), tr(
            "{text}: above that, the run may run out of memory", text=text), "model-memory", hint=hint)
    else:
        yield issue("note", actor.otc_path, text, "model-memory", hint=hint)
