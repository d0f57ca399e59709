"""Catalogue rows for MindSpeed's fused operators."""

from __future__ import annotations

from ._types import Feature, Flag

A = "actor_rollout_ref.actor.megatron"
O = "override_transformer_config"


def _switch(name: str, help: str, help_zh: str, feeds: str, **kw) -> Flag:
    return Flag(name=name, where="otc", type="bool", process_wide=True, help=help, help_zh=help_zh, feeds=feeds, **kw)


FLASH_ATTN = Feature(
    id="flash_attn", name="Fusion attention (FA)", name_zh="融合注意力 (FA)", kind="fused_op", status="Preview",
    source="seed",
    description="Ascend's fused attention kernel; must be on, or MindSpeed never registers its attention patch.",
    description_zh="昇腾融合注意力算子；必须开启，否则 MindSpeed 不注册注意力补丁。",
    seed_keys=(f"{A}.{O}.use_flash_attn",),
    flags=(
        _switch("use_flash_attn", "Fused attention; verl 0.8+ turns it on when unset, this tool always does.",
                "融合注意力；未设置时 verl 0.8+ 默认开启，本工具总是写入 true。", "MindSpeed/megatron --use-flash-attn",
                default=True, default_note="verl 0.8+ setdefault; injected by this tool",
                synonyms=("use_fa", "fa", "fusion_attention", "use_fusion_attention", "use_fused_attention")),
        Flag(name="attention_backend", where="otc", type="str", choices=("flash", "fused", "unfused", "local", "auto"),
             default="flash", default_note="verl's engine/megatron.yaml",
             help="Megatron attention backend name; verl maps it to megatron's AttnBackend.",
             help_zh="Megatron 注意力后端名称；verl 将其映射为 megatron 的 AttnBackend。",
             feeds="TransformerConfig.attention_backend"),
    ),
    rules=("cp-forces-flash-attn",),
)

RMSNORM = Feature(
    id="fused_rmsnorm", name="Fused RMSNorm", name_zh="融合 RMSNorm", kind="fused_op", status="Preview", source="seed",
    description="Fused RMSNorm kernel, paired with normalization=RMSNorm.",
    description_zh="融合 RMSNorm 算子，需配合 normalization=RMSNorm。",
    seed_keys=(f"{A}.{O}.use_fused_rmsnorm",),
    flags=(
        _switch("use_fused_rmsnorm", "Fused RMSNorm kernel.", "融合 RMSNorm 算子。", "MindSpeed --use-fused-rmsnorm"),
        Flag(name="normalization", where="otc", type="str", choices=("LayerNorm", "RMSNorm"),
             default_note="derived from the HF model by verl's bridge",
             help="Normalization layer type.", help_zh="归一化层类型。", feeds="TransformerConfig.normalization"),
    ),
    companions=("normalization=RMSNorm",),
    rules=("fused-op-companions",),
)

SWIGLU = Feature(
    id="fused_swiglu", name="Fused SwiGLU", name_zh="融合 SwiGLU", kind="fused_op", status="Preview", source="seed",
    description="Fused SwiGLU activation kernel, paired with swiglu=True.",
    description_zh="融合 SwiGLU 激活算子，需配合 swiglu=True。",
    seed_keys=(f"{A}.{O}.use_fused_swiglu",),
    flags=(
        _switch("use_fused_swiglu", "Fused SwiGLU kernel.", "融合 SwiGLU 算子。", "MindSpeed --use-fused-swiglu"),
        _switch("swiglu", "Gated linear unit with SiLU (what MindSpeed's SwiGLU patch looks for).",
                "SiLU 门控线性单元（MindSpeed SwiGLU 补丁读取的开关）。", "megatron --swiglu"),
    ),
    companions=("swiglu=True",),
    rules=("fused-op-companions",),
)

PERMUTE = Feature(
    id="fused_permute_unpermute", name="Fused MoE permute/unpermute", name_zh="融合 MoE permute/unpermute",
    kind="fused_op", status="Preview", source="seed",
    description="Fused token permute and unpermute for MoE dispatch. The guide's name fused_permute_and_unpermute "
                "does not exist in MindSpeed; the real flags are kept equal.",
    description_zh="MoE 分发的融合 permute/unpermute 算子。指南中的 fused_permute_and_unpermute 在 MindSpeed 中不存在，"
                   "实际生效的两个开关保持一致。",
    seed_keys=(f"{A}.{O}.fused_permute_and_unpermute",),
    flags=(
        _switch("use_fused_moe_token_permute_and_unpermute", "Fused MoE token permute/unpermute.",
                "融合 MoE token permute/unpermute。", "MindSpeed --use-fused-moe-token-permute-and-unpermute",
                aliases=("fused_permute_and_unpermute", "fused_permute_unpermute"),
                synonyms=("use_fused_permute", "use_fused_permute_unpermute", "use_fused_permute_and_unpermute",
                          "use_fused_moe_permute", "fused_moe_permute")),
        Flag(name="moe_permute_fusion", where="otc", type="bool",
             help="Megatron's permute-fusion switch, kept equal to the MindSpeed flag.",
             help_zh="Megatron 的 permute 融合开关，与 MindSpeed 开关保持一致。",
             feeds="TransformerConfig.moe_permute_fusion"),
    ),
    notes=("Needs CANN >= 8.3.RC1 and torch_npu >= 7.2.RC1, else MindSpeed turns it off with a warning.",),
    notes_zh=("需要 CANN >= 8.3.RC1 且 torch_npu >= 7.2.RC1，否则 MindSpeed 会告警并关闭。",),
    rules=("permute-fusion-dispatcher", "moe-dispatcher-in-dict", "bridge-permute-fusion"),
)

GROUPED_GEMM = Feature(
    id="grouped_gemm", name="Grouped GEMM", name_zh="Grouped GEMM", kind="fused_op", status="Preview", source="seed",
    description="Computes all local experts in one grouped matrix multiply.",
    description_zh="用一次分组矩阵乘计算所有本地专家。",
    seed_keys=(f"{A}.{O}.moe_grouped_gemm",),
    flags=(Flag(name="moe_grouped_gemm", where="otc", type="bool", help="Grouped GEMM for the local experts.",
                help_zh="本地专家使用分组矩阵乘。", feeds="TransformerConfig.moe_grouped_gemm"),),
    rules=("moe-alltoall-overlap", "moe-allgather-overlap", "moe-tp-extend-ep", "recompute-modules"),
)

MC2 = Feature(
    id="mc2", name="MC2 (matmul + communication fusion)", name_zh="MC2（通算融合）", kind="fused_op",
    status="Preview", source="seed",
    description="Fuses TP matmuls with their all-gather/reduce-scatter; needs SP and TP > 1; not for MoE models.",
    description_zh="将 TP 矩阵乘与 all-gather/reduce-scatter 通信融合；需要 SP 且 TP > 1；不适用于 MoE 模型。",
    seed_keys=(f"{A}.{O}.use_ascend_mc2",),
    flags=(_switch("use_ascend_mc2", "MC2 fused matmul-communication kernels.", "MC2 通算融合算子。",
                   "MindSpeed --use-ascend-mc2", synonyms=("mc2", "use_mc2", "enable_mc2", "ascend_mc2")),),
    notes=("MindSpeed's documentation: not on Atlas 900 A3; not for MoE models.",),
    notes_zh=("MindSpeed 文档：不支持 Atlas 900 A3；不适用于 MoE 模型。",),
    rules=("mc2-requires-sp-tp", "mc2-conflicts"),
)

ROPE = Feature(
    id="fused_rope", name="Fused RoPE", name_zh="融合 RoPE", kind="fused_op", status="Preview",
    source="mindspeed-verl-guide",
    description="Fused rotary position embedding kernel, paired with position_embedding_type=rope.",
    description_zh="融合旋转位置编码算子，需配合 position_embedding_type=rope。",
    seed_keys=(f"{A}.{O}.use_fused_rotary_pos_emb",),
    flags=(
        _switch("use_fused_rotary_pos_emb", "Fused rotary position embedding.", "融合旋转位置编码。",
                "MindSpeed --use-fused-rotary-pos-emb",
                synonyms=("use_fused_rope", "fused_rope", "rope_fusion", "use_rope_fusion", "fused_rotary_pos_emb")),
        Flag(name="position_embedding_type", where="otc", type="str",
             choices=("learned_absolute", "rope", "yarn", "mrope", "relative", "none"),
             default_note="derived from the HF model by verl's bridge",
             help="Position embedding type.", help_zh="位置编码类型。", feeds="megatron --position-embedding-type"),
    ),
    companions=("position_embedding_type=rope",),
    rules=("fused-rope-position-embedding",),
)

FEATURES = (FLASH_ATTN, RMSNORM, SWIGLU, PERMUTE, GROUPED_GEMM, MC2, ROPE)
