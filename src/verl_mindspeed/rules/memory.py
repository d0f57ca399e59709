"""Rules on memory features: swap-optimizer, no-op layers, recomputation."""

from __future__ import annotations

from typing import Iterable

from ..errors import Issue
from ..i18n import tr
from ._base import Context, RoleView, _int, error, fmt, release_at_least, rule, warning

_MCORE = "megatron/core/transformer/transformer_config.py TransformerConfig.__post_init__"
_SWAP = "mindspeed/features_manager/optimizer/swap_optimizer_feature.py validate_args"


@rule("swap-optimizer-requires-distributed-optimizer", cites=_SWAP,
      holds_for="MindSpeed 26.0.0+ (2.2.0-2.3.0 do not check)")
def swap_needs_distributed_optimizer(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """MindSpeed checks the distributed optimizer in its own view of the config: the dict, not megatron.*."""
    if not role.on("swap_optimizer"):
        return
    if role.megatron.get("use_distributed_optimizer") is False:
        make = error if release_at_least(ctx.release, (26, 0, 0)) else warning
        yield make(
            role.mkey("use_distributed_optimizer"),
            tr("swap_optimizer=True requires megatron.use_distributed_optimizer=True"),
            "swap-optimizer-requires-distributed-optimizer",
            override=role.mset_line("use_distributed_optimizer", True),
        )
    elif release_at_least(ctx.release, (26, 0, 0)) and not (
            role.on("use_distributed_optimizer") or role.on("use_layer_wise_distributed_optimizer")):
        yield error(
            role.key("use_distributed_optimizer"),
            tr("swap_optimizer=True requires use_distributed_optimizer=True in override_transformer_config: MindSpeed "
               "{release} checks the copy in the dict, and verl does not put megatron.use_distributed_optimizer "
               "there", release=ctx.release),
            "swap-optimizer-requires-distributed-optimizer", override=role.set_line("use_distributed_optimizer", True),
        )


@rule("swap-optimizer-conflicts", cites=_SWAP + "; optimizer/low_precision_optimizer_feature.py",
      holds_for="reuse_fp32_param: MindSpeed 2.2.0+; quant_grads/quant_states: 26.1.0+")
def swap_optimizer_conflicts(role: RoleView, ctx: Context) -> Iterable[Issue]:
    if not role.on("swap_optimizer"):
        return
    for other in ("reuse_fp32_param", "quant_grads", "quant_states"):
        if role.given.get(other) not in (None, False):
            yield error(
                role.key(other), tr("swap_optimizer=True and {other}={value} cannot be combined", other=other,
                                    value=fmt(role.given[other])),
                "swap-optimizer-conflicts", hint=tr("drop {other} or swap_optimizer", other=other),
                override=role.set_line(other, False if isinstance(role.given[other], bool) else None),
            )


@rule("reuse-fp32-param-under-verl", cites="mindspeed/features_manager/memory/reuse_fp32_param.py validate_args "
      "(args.use_legacy_models), run on the built TransformerConfig", holds_for="MindSpeed 2.2.0+ (every release "
      "with repatch)", covers=("reuse_fp32_param",))
def reuse_fp32_param_under_verl(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """MindSpeed validates reuse_fp32_param on the config verl builds, reading a Megatron-LM argument that config
    does not have: under verl the feature cannot be switched on at all."""
    if role.on("reuse_fp32_param"):
        yield error(role.key("reuse_fp32_param"), tr(
            "reuse_fp32_param=True cannot work under verl: MindSpeed validates it on the config verl builds and reads "
            "use_legacy_models, a Megatron-LM argument that config does not have (AttributeError when the model "
            "config is built)"), "reuse-fp32-param-under-verl", override=role.set_line("reuse_fp32_param", False),
            hint=tr("the fix line switches the feature off: no setting makes it work with verl's config"))


def noop_indices(role: RoleView) -> list[int]:
    """The no-op layer indices MindSpeed will read (a digit string; anything else it ignores)."""
    text = role.built.get("noop_layers")
    if isinstance(text, str) and text and all(p.isdigit() for p in text.split(",")):
        return sorted({int(p) for p in text.split(",")})
    return []


@rule("noop-layers-in-range", cites="mindspeed/features_manager/pipeline_parallel/noop_layers.py post_validate_args",
      holds_for="MindSpeed 2.2.0+")
def noop_layers_in_range(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """Each no-op index lies in [0, num_layers), where num_layers counts the no-op layers."""
    indices = noop_indices(role)
    if not indices:
        return
    num_layers = _int(role.built.get("num_layers"))
    if num_layers is not None:
        bad = [i for i in indices if i >= num_layers]
        if bad:
            kept = [i for i in indices if i < num_layers]
            yield error(
                role.key("noop_layers"),
                tr("noop_layers={text} requires every index in [0, num_layers={num_layers}); out of range: {bad}",
                   text=repr(role.built["noop_layers"]), num_layers=num_layers, bad=", ".join(map(str, bad))),
                "noop-layers-in-range",
                hint=tr("num_layers counts the no-op layers too ({real} real + {noop} no-op = {total})",
                        real=num_layers - len(indices), noop=len(indices), total=num_layers),
                override=role.set_line("noop_layers", ",".join(map(str, kept)) if kept else None),
            )
    if role.built.get("pipeline_model_parallel_layout") is not None:
        yield error(
            role.key("noop_layers"), tr("noop_layers and pipeline_model_parallel_layout cannot be combined"),
            "noop-layers-in-range",
        )


@rule("recompute-full", cites=_MCORE, holds_for="megatron-core 0.12.1 and 0.16.1")
def recompute_full(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """Full recompute needs a method and a layer count."""
    if role.given.get("recompute_granularity") != "full":
        return
    if role.given.get("recompute_method") is None:
        yield error(
            role.key("recompute_method"),
            tr("recompute_granularity=full requires recompute_method=uniform or block"),
            "recompute-full", override=role.set_line("recompute_method", "uniform"),
        )
    if role.given.get("recompute_num_layers") is None:
        yield error(
            role.key("recompute_num_layers"),
            tr("recompute_granularity=full requires recompute_num_layers between 1 and the layers per pipeline rank"),
            "recompute-full", override=role.set_line("recompute_num_layers", 1),
        )


@rule("recompute-selective", cites=_MCORE, holds_for="megatron-core 0.12.1 and 0.16.1")
def recompute_selective(role: RoleView, ctx: Context) -> Iterable[Issue]:
    if role.given.get("recompute_granularity") == "selective" and role.given.get("recompute_num_layers") is not None:
        yield error(
            role.key("recompute_num_layers"),
            tr("recompute_granularity=selective requires recompute_num_layers=null (got {value})",
               value=fmt(role.given["recompute_num_layers"])),
            "recompute-selective", override=role.set_line("recompute_num_layers", None),
        )


@rule("recompute-method-without-granularity", cites=_MCORE, holds_for="megatron-core 0.12.1 and 0.16.1")
def recompute_method_without_granularity(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """A method or layer count without a granularity is ignored by megatron."""
    if role.given.get("recompute_granularity") is not None:
        return
    for name in ("recompute_method", "recompute_num_layers"):
        if role.given.get(name) is not None:
            yield warning(
                role.key(name),
                tr("{name}={value} has no effect: recompute_granularity is null", name=name,
                   value=fmt(role.given[name])),
                "recompute-method-without-granularity",
                hint=tr("set recompute_granularity=full to recompute"),
                override=role.set_line("recompute_granularity", "full"),
            )


@rule("recompute-modules", cites=_MCORE, holds_for="megatron-core 0.12.1 and 0.16.1")
def recompute_modules(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """Selective recompute modules with their prerequisites, on the built config (bridge defaults included)."""
    modules = role.given.get("recompute_modules") or []
    if role.given.get("recompute_granularity") != "selective" or not isinstance(modules, list):
        return
    if "moe_act" in modules and not role.on("moe_grouped_gemm") and (
            ctx.model is not None or role.built.get("moe_grouped_gemm") is False):
        yield error(
            role.key("recompute_modules"), tr("recompute_modules with moe_act requires moe_grouped_gemm=True"),
            "recompute-modules", override=role.set_line("moe_grouped_gemm", True),
        )
    mla = role.on("multi_latent_attention") or role.on("multi_head_latent_attention")
    if "mla_up_proj" in modules and not mla and (ctx.model is not None or
                                                 role.built.get("multi_latent_attention") is False):
        yield error(
            role.key("recompute_modules"),
            tr("recompute_modules with mla_up_proj requires multi_latent_attention=True"),
            "recompute-modules",
        )


@rule("distribute-saved-activations-sp", cites=_MCORE, holds_for="megatron-core 0.12.1 and 0.16.1")
def distribute_saved_activations(role: RoleView, ctx: Context) -> Iterable[Issue]:
    if (role.on("distribute_saved_activations") and role.given.get("recompute_granularity") is not None
            and role.sequence_parallel):
        yield error(
            role.key("distribute_saved_activations"),
            tr("distribute_saved_activations=True and sequence_parallel=True cannot be combined"),
            "distribute-saved-activations-sp",
        )
