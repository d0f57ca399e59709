"""Rules on memory features: swap-optimizer, no-op layers, recomputation."""

from __future__ import annotations

from typing import Iterable

from ..errors import Issue
from ._base import Context, RoleView, error, fmt, release_at_least, rule, warning

_MCORE = "megatron-core 0.12.1 megatron/core/transformer/transformer_config.py TransformerConfig.__post_init__"
_SWAP = "mindspeed/features_manager/optimizer/swap_optimizer_feature.py"


@rule("swap-optimizer-requires-distributed-optimizer", cites=_SWAP + " (a hard error from MindSpeed 26.0.0)")
def swap_needs_distributed_optimizer(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """swap_optimizer works on the distributed optimizer's shards (MindSpeed 26.0.0+ raise, 2.x do not check)."""
    if not role.on("swap_optimizer"):
        return
    make = error if release_at_least(ctx.release, (26, 0, 0)) else warning
    if role.megatron.get("use_distributed_optimizer") is False:
        yield make(
            role.mkey("use_distributed_optimizer"),
            "swap_optimizer=True requires megatron.use_distributed_optimizer=True",
            "swap-optimizer-requires-distributed-optimizer",
            override=role.mset_line("use_distributed_optimizer", True),
        )
    if role.otc.get("use_distributed_optimizer") is False:
        yield make(
            role.key("use_distributed_optimizer"),
            "swap_optimizer=True requires override_transformer_config.use_distributed_optimizer=True "
            "(MindSpeed reads the copy in the dict)",
            "swap-optimizer-requires-distributed-optimizer",
            override=role.set_line("use_distributed_optimizer", True),
        )


@rule("swap-optimizer-conflicts", cites=_SWAP + "; optimizer/low_precision_optimizer_feature.py (26.1.0+)")
def swap_optimizer_conflicts(role: RoleView, ctx: Context) -> Iterable[Issue]:
    if not role.on("swap_optimizer"):
        return
    for other in ("reuse_fp32_param", "quant_grads", "quant_states"):
        if role.otc.get(other) not in (None, False):
            yield error(
                role.key(other), f"swap_optimizer=True and {other}={fmt(role.otc[other])} cannot be combined",
                "swap-optimizer-conflicts", hint=f"drop {other} or swap_optimizer",
            )


@rule("noop-layers-in-range", cites="mindspeed/features_manager/pipeline_parallel/noop_layers.py")
def noop_layers_in_range(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """Each no-op index lies in [0, num_layers), where num_layers counts the no-op layers."""
    text = role.otc.get("noop_layers")
    if not isinstance(text, str) or not text.replace(",", "").isdigit():
        return
    indices = [int(p) for p in text.split(",")]
    if len(set(indices)) != len(indices):
        yield error(role.key("noop_layers"), f"noop_layers={text!r} lists a layer twice", "noop-layers-in-range")
    num_layers = role.otc.get("num_layers")
    if isinstance(num_layers, int) and not isinstance(num_layers, bool):
        bad = [i for i in indices if i >= num_layers]
        if bad:
            yield error(
                role.key("noop_layers"),
                f"noop_layers={text!r} requires every index in [0, num_layers={num_layers}); "
                f"out of range: {', '.join(map(str, bad))}",
                "noop-layers-in-range", hint="num_layers counts the no-op layers too (126 real + 2 no-op = 128)",
            )
    if role.otc.get("pipeline_model_parallel_layout") is not None:
        yield error(
            role.key("noop_layers"), "noop_layers and pipeline_model_parallel_layout cannot be combined",
            "noop-layers-in-range",
        )


@rule("recompute-full", cites=_MCORE)
def recompute_full(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """Full recompute needs a method and a layer count."""
    if role.otc.get("recompute_granularity") != "full":
        return
    if role.otc.get("recompute_method") is None:
        yield error(
            role.key("recompute_method"),
            "recompute_granularity=full requires recompute_method=uniform or block",
            "recompute-full", override=role.set_line("recompute_method", "uniform"),
        )
    if role.otc.get("recompute_num_layers") is None:
        yield error(
            role.key("recompute_num_layers"),
            "recompute_granularity=full requires recompute_num_layers between 1 and the layers per pipeline rank",
            "recompute-full", override=role.set_line("recompute_num_layers", 1),
        )


@rule("recompute-selective", cites=_MCORE)
def recompute_selective(role: RoleView, ctx: Context) -> Iterable[Issue]:
    if role.otc.get("recompute_granularity") == "selective" and role.otc.get("recompute_num_layers") is not None:
        yield error(
            role.key("recompute_num_layers"),
            f"recompute_granularity=selective requires recompute_num_layers=null "
            f"(got {fmt(role.otc['recompute_num_layers'])})",
            "recompute-selective", override=role.set_line("recompute_num_layers", None),
        )


@rule("recompute-method-without-granularity", cites=_MCORE)
def recompute_method_without_granularity(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """A method or layer count without a granularity is ignored by megatron."""
    if role.otc.get("recompute_granularity") is not None:
        return
    for name in ("recompute_method", "recompute_num_layers"):
        if role.otc.get(name) is not None:
            yield warning(
                role.key(name),
                f"{name}={fmt(role.otc[name])} has no effect: recompute_granularity is null",
                "recompute-method-without-granularity",
                hint="set recompute_granularity=full to recompute", override=role.set_line("recompute_granularity", "full"),
            )


@rule("recompute-modules", cites=_MCORE)
def recompute_modules(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """Selective recompute modules with their prerequisites."""
    modules = role.otc.get("recompute_modules") or []
    if role.otc.get("recompute_granularity") != "selective" or not isinstance(modules, list):
        return
    if "moe_act" in modules and not role.on("moe_grouped_gemm"):
        yield error(
            role.key("recompute_modules"), "recompute_modules with moe_act requires moe_grouped_gemm=True",
            "recompute-modules", override=role.set_line("moe_grouped_gemm", True),
        )
    if "mla_up_proj" in modules and not (role.on("multi_latent_attention") or role.on("multi_head_latent_attention")):
        yield error(
            role.key("recompute_modules"), "recompute_modules with mla_up_proj requires multi_latent_attention=True",
            "recompute-modules",
        )


@rule("distribute-saved-activations-sp", cites=_MCORE)
def distribute_saved_activations(role: RoleView, ctx: Context) -> Iterable[Issue]:
    if (role.on("distribute_saved_activations") and role.otc.get("recompute_granularity") is not None
            and role.sequence_parallel):
        yield error(
            role.key("distribute_saved_activations"),
            "distribute_saved_activations=True and sequence_parallel=True cannot be combined",
            "distribute-saved-activations-sp",
        )
