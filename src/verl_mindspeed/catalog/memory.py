"""Catalogue rows that trade compute or transfers for device memory."""

from __future__ import annotations

from ._types import Feature, Flag, From, Injection

A = "actor_rollout_ref.actor.megatron"
O = "override_transformer_config"

DIST_OPT = Feature(
    id="distributed_optimizer", name="Distributed optimizer", kind="feature",
    status="Preview", source="seed",
    description="Shards optimizer states across data-parallel ranks (ZeRO-1 style).",
    seed_keys=(f"{A}.{O}.use_distributed_optimizer",),
    flags=(
        Flag(name="use_distributed_optimizer", where="otc", type="bool",
             default_note="copied from megatron.use_distributed_optimizer when swap_optimizer is on",
             help="The copy MindSpeed's checks read; the switch that acts is megatron.use_distributed_optimizer.",
             feeds="MindSpeed/megatron --use-distributed-optimizer"),
        Flag(name="use_distributed_optimizer", where="megatron", type="bool", default=True,
             default_note="verl's engine/megatron.yaml",
             help="verl's switch for Megatron's distributed optimizer.", feeds="megatron OptimizerConfig.use_distributed_optimizer"),
    ),
    rules=("swap-optimizer-requires-distributed-optimizer",),
    shown_otherwise="megatron.use_distributed_optimizer",
)

SWAP_OPT = Feature(
    id="swap_optimizer", name="Swap optimizer", kind="feature", status="Preview",
    source="seed",
    description="Keeps optimizer states in host memory and swaps them to the device in slices during the step.",
    seed_keys=(f"{A}.{O}.swap_optimizer",),
    flags=(
        Flag(name="swap_optimizer", where="otc", type="bool", process_wide=True,
             help="Swap optimizer states to the host; needs the distributed optimizer.", feeds="MindSpeed --swap-optimizer"),
        Flag(name="swap_optimizer_times", where="otc", type="int", minimum=1, default=16, process_wide=True,
             default_note="MindSpeed",
             help="Number of slices each swap moves the optimizer states in.", feeds="MindSpeed --swap-optimizer-times"),
    ),
    rules=("swap-optimizer-requires-distributed-optimizer", "swap-optimizer-conflicts"),
    injects=(Injection(key="use_distributed_optimizer", value=From("engine.use_distributed_optimizer"),
                       when=("swap_optimizer",), why="MindSpeed's swap-optimizer check reads it from the dict"),),
)

NOOP = Feature(
    id="noop_layers", name="No-op layers", kind="feature", status="Preview", source="seed",
    description="Adds empty layers so the layer count splits evenly across pipeline stages.",
    seed_keys=(f"{A}.{O}.noop_layers", f"{A}.{O}.num_layers"),
    flags=(
        Flag(name="noop_layers", where="otc", type="layers", process_wide=True,
             help='Indices of the no-op layers; MindSpeed reads only a digit string such as "0,127".', feeds="MindSpeed --noop-layers"),
        Flag(name="num_layers", where="otc", type="int", minimum=1,
             default_note="derived from the HF model by verl's bridge",
             help="Total layer count including the no-op layers.", feeds="TransformerConfig.num_layers"),
    ),
    rules=("noop-layers-in-range",),
)

RECOMPUTE = Feature(
    id="recompute", name="Activation recomputation", kind="feature", status="Preview",
    source="seed",
    description="Drops activations in the forward pass and recomputes them in the backward pass.",
    seed_keys=(f"{A}.{O}.recompute_method", f"{A}.{O}.recompute_granularity", f"{A}.{O}.recompute_num_layers"),
    flags=(
        Flag(name="recompute_granularity", where="otc", type="str", choices=("full", "selective"), nullable=True,
             default_note="verl: null (off)",
             help="full recomputes whole layers; selective recomputes recompute_modules; null = off.",
             feeds="TransformerConfig.recompute_granularity"),
        Flag(name="recompute_method", where="otc", type="str", choices=("uniform", "block"), nullable=True,
             help="How full recompute picks layers: uniform chunks or the first N layers of each stage.",
             feeds="TransformerConfig.recompute_method"),
        Flag(name="recompute_num_layers", where="otc", type="int", minimum=1, nullable=True,
             help="Layers per chunk (uniform) or per stage (block) for full recompute.",
             feeds="TransformerConfig.recompute_num_layers"),
        Flag(name="recompute_modules", where="otc", type="str_list", default=("core_attn",),
             choices=("core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts"),
             default_note="verl's engine/megatron.yaml",
             help="Submodules recomputed by selective recompute.", feeds="TransformerConfig.recompute_modules"),
    ),
    rules=("recompute-full", "recompute-selective", "recompute-method-without-granularity", "recompute-modules"),
)

FEATURES = (DIST_OPT, SWAP_OPT, NOOP, RECOMPUTE)
