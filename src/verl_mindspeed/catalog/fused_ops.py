"""Catalogue rows for MindSpeed's fused operators."""

from __future__ import annotations

from ._types import Feature, Flag, From, Injection

A = "actor_rollout_ref.actor.megatron"
O = "override_transformer_config"


def _switch(name: str, help: str, feeds: str, **kw) -> Flag:
    return Flag(name=name, where="otc", type="bool", process_wide=True, help=help, feeds=feeds, **kw)


FLASH_ATTN = Feature(
    id="flash_attn", name="Fusion attention (FA)", kind="fused_op", status="Preview",
    source="seed",
    description="Ascend's fused attention kernel; must be on, or MindSpeed never registers its attention patch.",
    seed_keys=(f"{A}.{O}.use_flash_attn",),
    flags=(
        _switch("use_flash_attn", "Fused attention; verl 0.8+ turns it on when unset, this tool always does.", "MindSpeed/megatron --use-flash-attn",
                default=True, default_note="verl 0.8+ setdefault; injected by this tool",
                synonyms=("use_fa", "fa", "fusion_attention", "use_fusion_attention", "use_fused_attention")),
        Flag(name="attention_backend", where="otc", type="str", choices=("flash", "fused", "unfused", "local", "auto"),
             default="flash", default_note="verl's engine/megatron.yaml",
             help="Megatron attention backend name; verl maps it to megatron's AttnBackend.",
             feeds="TransformerConfig.attention_backend"),
    ),
    rules=("cp-forces-flash-attn",),
    injects=(Injection(key="use_flash_attn", value=From("dict.not_batch_invariant"),
                       why="MindSpeed registers its attention patch only when it is on (verl 0.8+ sets the same "
                           "default)"),),
)

RMSNORM = Feature(
    id="fused_rmsnorm", name="Fused RMSNorm", kind="fused_op", status="Preview", source="seed",
    description="Fused RMSNorm kernel, paired with normalization=RMSNorm.",
    seed_keys=(f"{A}.{O}.use_fused_rmsnorm",),
    flags=(
        _switch("use_fused_rmsnorm", "Fused RMSNorm kernel.", "MindSpeed --use-fused-rmsnorm"),
        Flag(name="normalization", where="otc", type="str", choices=("LayerNorm", "RMSNorm"),
             default_note="derived from the HF model by verl's bridge",
             help="Normalization layer type.", feeds="TransformerConfig.normalization"),
    ),
    companions=("normalization=RMSNorm",),
    rules=("fused-op-companions",),
)

SWIGLU = Feature(
    id="fused_swiglu", name="Fused SwiGLU", kind="fused_op", status="Preview", source="seed",
    description="Fused SwiGLU activation kernel, paired with swiglu=True.",
    seed_keys=(f"{A}.{O}.use_fused_swiglu",),
    flags=(
        _switch("use_fused_swiglu", "Fused SwiGLU kernel.", "MindSpeed --use-fused-swiglu"),
        _switch("swiglu", "Gated linear unit with SiLU (what MindSpeed's SwiGLU patch looks for).", "megatron --swiglu"),
        Flag(name="bias_activation_fusion", where="otc", type="bool",
             help="Megatron's fused bias+activation path: the MLP calls the SwiGLU functions MindSpeed's fused kernel "
                  "replaces only when it is True.", feeds="megatron TransformerConfig.bias_activation_fusion"),
    ),
    companions=("swiglu=True", "bias_activation_fusion=True"),
    rules=("fused-op-companions", "fused-swiglu-inert"),
    injects=(Injection(key="bias_activation_fusion", value=True, when=("use_fused_swiglu",),
                       requires=("bridge.not_converter",),
                       why="megatron's MLP calls MindSpeed's fused SwiGLU only with it, and Megatron-Bridge and mbridge "
                           "leave it False for most dense models"),),
)

PERMUTE = Feature(
    id="fused_permute_unpermute", name="Fused MoE permute/unpermute",
    kind="fused_op", status="Preview", source="seed",
    description="Fused token permute and unpermute for MoE dispatch. The guide's name fused_permute_and_unpermute "
                "does not exist in MindSpeed; the real flags are kept equal.",
    seed_keys=(f"{A}.{O}.fused_permute_and_unpermute",),
    flags=(
        _switch("use_fused_moe_token_permute_and_unpermute", "Fused MoE token permute/unpermute.", "MindSpeed --use-fused-moe-token-permute-and-unpermute",
                aliases=("fused_permute_and_unpermute", "fused_permute_unpermute"),
                synonyms=("use_fused_permute", "use_fused_permute_unpermute", "use_fused_permute_and_unpermute",
                          "use_fused_moe_permute", "fused_moe_permute")),
        Flag(name="moe_permute_fusion", where="otc", type="bool",
             help="Megatron's permute-fusion switch, kept equal to the MindSpeed flag.",
             feeds="TransformerConfig.moe_permute_fusion"),
    ),
    notes=("Needs CANN >= 8.3.RC1 and torch_npu >= 7.2.RC1, else MindSpeed turns it off with a warning.",),
    rules=("permute-fusion-dispatcher", "moe-dispatcher-in-dict", "bridge-permute-fusion"),
    injects=tuple(Injection(key=key, value=True, requires=("bridge.permute_fusion",),
                            why="Megatron-Bridge turns permute fusion on for this MoE model; MindSpeed registers its "
                                "NPU permute only when the switch is in the dict")
                  for key in ("use_fused_moe_token_permute_and_unpermute", "moe_permute_fusion")),
)

GROUPED_GEMM = Feature(
    id="grouped_gemm", name="Grouped GEMM", kind="fused_op", status="Preview", source="seed",
    description="Computes all local experts in one grouped matrix multiply.",
    seed_keys=(f"{A}.{O}.moe_grouped_gemm",),
    flags=(Flag(name="moe_grouped_gemm", where="otc", type="bool", help="Grouped GEMM for the local experts.", feeds="TransformerConfig.moe_grouped_gemm"),),
    rules=("moe-alltoall-overlap", "moe-allgather-overlap", "moe-tp-extend-ep", "recompute-modules"),
)

MC2 = Feature(
    id="mc2", name="MC2 (matmul + communication fusion)", kind="fused_op",
    status="Preview", source="seed",
    description="Fuses TP matmuls with their all-gather/reduce-scatter; needs SP and TP > 1; not for MoE models.",
    seed_keys=(f"{A}.{O}.use_ascend_mc2",),
    flags=(_switch("use_ascend_mc2", "MC2 fused matmul-communication kernels.",
                   "MindSpeed --use-ascend-mc2", synonyms=("mc2", "use_mc2", "enable_mc2", "ascend_mc2")),),
    notes=("MindSpeed's documentation: not on Atlas 900 A3; not for MoE models.",),
    rules=("mc2-requires-sp-tp", "mc2-conflicts"),
    injects=(
        Injection(key="tensor_model_parallel_size", value=From("engine.tp"), when=("use_ascend_mc2",),
                  why="MindSpeed's MC2 patch reads TP from the dict"),
        Injection(key="sequence_parallel", value=From("engine.sequence_parallel"), when=("use_ascend_mc2",),
                  why="MindSpeed's MC2 patch reads SP from the dict"),
    ),
)

ROPE = Feature(
    id="fused_rope", name="Fused RoPE", kind="fused_op", status="Preview",
    source="mindspeed-verl-guide",
    description="Fused rotary position embedding kernel, paired with position_embedding_type=rope.",
    seed_keys=(f"{A}.{O}.use_fused_rotary_pos_emb",),
    flags=(
        _switch("use_fused_rotary_pos_emb", "Fused rotary position embedding.",
                "MindSpeed --use-fused-rotary-pos-emb",
                synonyms=("use_fused_rope", "fused_rope", "rope_fusion", "use_rope_fusion", "fused_rotary_pos_emb")),
        Flag(name="position_embedding_type", where="otc", type="str",
             choices=("learned_absolute", "rope", "yarn", "mrope", "relative", "none"),
             default_note="derived from the HF model by verl's bridge",
             help="Position embedding type.", feeds="megatron --position-embedding-type"),
    ),
    companions=("position_embedding_type=rope",),
    rules=("fused-rope-position-embedding",),
    injects=(Injection(key="position_embedding_type", value="rope", when=("use_fused_rotary_pos_emb",),
                       requires=("bridge.not_megatron_bridge",),
                       why="MindSpeed's fused RoPE check reads it, and this model bridge does not set it"),),
)

FEATURES = (FLASH_ATTN, RMSNORM, SWIGLU, PERMUTE, GROUPED_GEMM, MC2, ROPE)
