"""Catalogue rows for MoE token dispatch, multi-head latent attention and the mbridge loader."""

from __future__ import annotations

from ._types import Feature, Flag

A = "actor_rollout_ref.actor.megatron"
O = "override_transformer_config"

MOE_ALLTOALL = Feature(
    id="moe_alltoall", name="MoE alltoall dispatcher", name_zh="MoE alltoall dispatcher", kind="feature",
    status="Preview", source="seed",
    description="Dispatches MoE tokens with all-to-all; async permutation communication is only a precondition "
                "of MindSpeed's MoE overlap features and applies no patch of its own.",
    description_zh="使用 all-to-all 分发 MoE token；moe_permutation_async_comm 只是 MindSpeed MoE 通信掩盖特性的前置条件，"
                   "本身不生效。",
    seed_keys=(f"{A}.{O}.moe_permutation_async_comm",),
    flags=(
        Flag(name="moe_permutation_async_comm", where="otc", type="bool", process_wide=True,
             help="Precondition of moe_tp_extend_ep and the MoE alltoall/allgather overlap features.",
             help_zh="moe_tp_extend_ep 及 MoE alltoall/allgather 通信掩盖特性的前置条件。",
             feeds="MindSpeed --moe-permutation-async-comm"),
        Flag(name="moe_token_dispatcher_type", where="otc", type="str",
             choices=("allgather", "alltoall", "flex", "alltoall_seq"),
             default_note="derived from the HF model by verl's bridge (megatron's own default: allgather)",
             help="MoE token dispatcher.", help_zh="MoE token 分发器类型。",
             feeds="TransformerConfig.moe_token_dispatcher_type"),
        Flag(name="moe_alltoall_overlap_comm", where="otc", type="bool", process_wide=True,
             help="Overlap alltoall dispatch communication with computation.",
             help_zh="alltoall 分发通信与计算掩盖。", feeds="MindSpeed --moe-alltoall-overlap-comm"),
        Flag(name="moe_tp_extend_ep", where="otc", type="bool", process_wide=True,
             help="Use the TP group to extend expert parallelism instead of splitting experts.",
             help_zh="用 TP 组扩展专家并行，而不是切分专家。", feeds="MindSpeed --moe-tp-extend-ep"),
    ),
    rules=("moe-async-comm-alone", "moe-dispatcher-in-dict", "moe-alltoall-overlap",
           "moe-allgather-overlap", "moe-tp-extend-ep", "alltoall-seq-etp", "moe-pad-needs-capacity"),
)

MLA = Feature(
    id="mla", name="Multi-head latent attention (MLA)", name_zh="Multi-head Latent Attention (MLA)",
    kind="feature", status="Preview", source="seed",
    description="DeepSeek-style attention with low-rank compressed keys and values; MindSpeed needs the "
                "MLA dimensions in the dict.",
    description_zh="DeepSeek 风格的低秩压缩 KV 注意力；MindSpeed 需要在字典中提供 MLA 维度。",
    seed_keys=(f"{A}.{O}.multi_head_latent_attention",),
    flags=(
        Flag(name="multi_head_latent_attention", where="otc", type="bool", process_wide=True,
             help="MindSpeed's MLA switch; needs kv_lora_rank, v_head_dim, qk_rope_head_dim, qk_nope_head_dim.",
             help_zh="MindSpeed 的 MLA 开关；需要 kv_lora_rank、v_head_dim、qk_rope_head_dim、qk_nope_head_dim。",
             feeds="MindSpeed --multi-head-latent-attention"),
        Flag(name="q_lora_rank", where="otc", type="int", minimum=1, nullable=True, process_wide=True,
             help="Query low-rank dimension (null: no query compression).", help_zh="Query 低秩维度（null 表示不压缩）。",
             feeds="MindSpeed --q-lora-rank"),
        Flag(name="kv_lora_rank", where="otc", type="int", minimum=1, nullable=True, process_wide=True,
             help="Key/value low-rank dimension.", help_zh="Key/Value 低秩维度。", feeds="MindSpeed --kv-lora-rank"),
        Flag(name="qk_rope_head_dim", where="otc", type="int", minimum=1, nullable=True, process_wide=True,
             help="Per-head dimension that carries RoPE.", help_zh="每个头中使用 RoPE 的维度。",
             feeds="MindSpeed --qk-rope-head-dim"),
        Flag(name="qk_nope_head_dim", where="otc", type="int", minimum=1, nullable=True, process_wide=True,
             help="Per-head dimension without RoPE.", help_zh="每个头中不使用 RoPE 的维度。",
             feeds="MindSpeed --qk-nope-head-dim"),
        Flag(name="v_head_dim", where="otc", type="int", minimum=1, nullable=True, process_wide=True,
             help="Per-head value dimension.", help_zh="每个头的 Value 维度。", feeds="MindSpeed --v-head-dim"),
    ),
    rules=("mla-dimensions",),
)

MBRIDGE = Feature(
    id="mbridge", name="mbridge weight loader", name_zh="mbridge 权重加载", kind="feature", status="Preview",
    source="mindspeed-verl-guide",
    description="Loads HF weights straight into Megatron models; cannot be combined with VPP on NPU. verl 0.8 and "
                "later require it (their Megatron engine asserts use_mbridge=True).",
    description_zh="直接将 HF 权重加载为 Megatron 模型；在 NPU 上不能与 VPP 同时使用。verl 0.8 及以后的版本必须开启"
                   "（其 Megatron 引擎断言 use_mbridge=True）。",
    seed_keys=(f"{A}.use_mbridge",),
    flags=(Flag(name="use_mbridge", where="megatron", type="bool", default=True,
                default_note="verl's engine/megatron.yaml (0.9)",
                help="Build the Megatron model through a bridge from the HF config and weights.",
                help_zh="通过 bridge 从 HF 配置和权重构建 Megatron 模型。", feeds="verl McoreEngineConfig.use_mbridge"),),
    rules=("mbridge-vpp", "verl-engine-mbridge"),
)

FEATURES = (MOE_ALLTOALL, MLA, MBRIDGE)
