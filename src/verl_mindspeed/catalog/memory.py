"""Catalogue rows that trade compute or transfers for device memory."""

from __future__ import annotations

from ._types import Feature, Flag

A = "actor_rollout_ref.actor.megatron"
O = "override_transformer_config"

DIST_OPT = Feature(
    id="distributed_optimizer", name="Distributed optimizer", name_zh="分布式优化器", kind="feature",
    status="Preview", source="seed",
    description="Shards optimizer states across data-parallel ranks (ZeRO-1 style).",
    description_zh="在数据并行组内切分优化器状态（类似 ZeRO-1）。",
    seed_keys=(f"{A}.{O}.use_distributed_optimizer",),
    flags=(
        Flag(name="use_distributed_optimizer", where="otc", type="bool",
             default_note="copied from megatron.use_distributed_optimizer when swap_optimizer is on",
             help="The copy MindSpeed's checks read; the switch that acts is megatron.use_distributed_optimizer.",
             help_zh="供 MindSpeed 检查读取的副本；真正生效的开关是 megatron.use_distributed_optimizer。",
             feeds="MindSpeed/megatron --use-distributed-optimizer"),
        Flag(name="use_distributed_optimizer", where="megatron", type="bool", default=True,
             default_note="verl's engine/megatron.yaml",
             help="verl's switch for Megatron's distributed optimizer.",
             help_zh="verl 中 Megatron 分布式优化器的开关。", feeds="megatron OptimizerConfig.use_distributed_optimizer"),
    ),
    rules=("swap-optimizer-requires-distributed-optimizer",),
)

SWAP_OPT = Feature(
    id="swap_optimizer", name="Swap optimizer", name_zh="swap-optimizer", kind="feature", status="Preview",
    source="seed",
    description="Keeps optimizer states in host memory and swaps them to the device in slices during the step.",
    description_zh="将优化器状态放在主机内存中，在更新时分片换入设备。",
    seed_keys=(f"{A}.{O}.swap_optimizer",),
    flags=(
        Flag(name="swap_optimizer", where="otc", type="bool", process_wide=True,
             help="Swap optimizer states to the host; needs the distributed optimizer.",
             help_zh="将优化器状态换出到主机；需要分布式优化器。", feeds="MindSpeed --swap-optimizer"),
        Flag(name="swap_optimizer_times", where="otc", type="int", minimum=1, default=16, process_wide=True,
             default_note="MindSpeed",
             help="Number of slices each swap moves the optimizer states in.",
             help_zh="每次换入换出时优化器状态的分片数。", feeds="MindSpeed --swap-optimizer-times"),
    ),
    rules=("swap-optimizer-requires-distributed-optimizer", "swap-optimizer-conflicts"),
)

NOOP = Feature(
    id="noop_layers", name="No-op layers", name_zh="自定义空操作层", kind="feature", status="Preview", source="seed",
    description="Adds empty layers so the layer count splits evenly across pipeline stages.",
    description_zh="插入空操作层，使层数能在流水线阶段间均匀切分。",
    seed_keys=(f"{A}.{O}.noop_layers", f"{A}.{O}.num_layers"),
    flags=(
        Flag(name="noop_layers", where="otc", type="layers", process_wide=True,
             help='Indices of the no-op layers; MindSpeed reads only a digit string such as "0,127".',
             help_zh='空操作层的下标；MindSpeed 只识别形如 "0,127" 的数字字符串。', feeds="MindSpeed --noop-layers"),
        Flag(name="num_layers", where="otc", type="int", minimum=1,
             default_note="derived from the HF model by verl's bridge",
             help="Total layer count including the no-op layers.",
             help_zh="包含空操作层在内的总层数。", feeds="TransformerConfig.num_layers"),
    ),
    rules=("noop-layers-in-range",),
)

RECOMPUTE = Feature(
    id="recompute", name="Activation recomputation", name_zh="重计算", kind="feature", status="Preview",
    source="seed",
    description="Drops activations in the forward pass and recomputes them in the backward pass.",
    description_zh="前向时丢弃激活，反向时重新计算，以节省显存。",
    seed_keys=(f"{A}.{O}.recompute_method", f"{A}.{O}.recompute_granularity", f"{A}.{O}.recompute_num_layers"),
    flags=(
        Flag(name="recompute_granularity", where="otc", type="str", choices=("full", "selective"), nullable=True,
             default_note="verl: null (off)",
             help="full recomputes whole layers; selective recomputes recompute_modules; null = off.",
             help_zh="full 重算整层；selective 只重算 recompute_modules；null 表示关闭。",
             feeds="TransformerConfig.recompute_granularity"),
        Flag(name="recompute_method", where="otc", type="str", choices=("uniform", "block"), nullable=True,
             help="How full recompute picks layers: uniform chunks or the first N layers of each stage.",
             help_zh="full 重算的层选择方式：uniform 均匀分块，block 每个阶段前 N 层。",
             feeds="TransformerConfig.recompute_method"),
        Flag(name="recompute_num_layers", where="otc", type="int", minimum=1, nullable=True,
             help="Layers per chunk (uniform) or per stage (block) for full recompute.",
             help_zh="full 重算时每块（uniform）或每阶段（block）的层数。",
             feeds="TransformerConfig.recompute_num_layers"),
        Flag(name="recompute_modules", where="otc", type="str_list", default=("core_attn",),
             choices=("core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts"),
             default_note="verl's engine/megatron.yaml",
             help="Submodules recomputed by selective recompute.",
             help_zh="selective 重算的子模块。", feeds="TransformerConfig.recompute_modules"),
    ),
    rules=("recompute-full", "recompute-selective", "recompute-method-without-granularity", "recompute-modules"),
)

FEATURES = (DIST_OPT, SWAP_OPT, NOOP, RECOMPUTE)
