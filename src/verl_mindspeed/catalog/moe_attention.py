"""Catalogue rows for MoE token dispatch, multi-head latent attention and the mbridge loader."""

from __future__ import annotations

from ._types import Feature, Flag, From, Injection

A = "actor_rollout_ref.actor.megatron"
O = "override_transformer_config"

MOE_ALLTOALL = Feature(
    id="moe_alltoall", name="MoE alltoall dispatcher", kind="feature",
    status="Preview", source="seed",
    description="Dispatches MoE tokens with all-to-all; async permutation communication is only a precondition "
                "of MindSpeed's MoE overlap features and applies no patch of its own.",
    seed_keys=(f"{A}.{O}.moe_permutation_async_comm",),
    flags=(
        Flag(name="moe_permutation_async_comm", where="otc", type="bool", process_wide=True,
             help="Precondition of moe_tp_extend_ep and the MoE alltoall/allgather overlap features.",
             feeds="MindSpeed --moe-permutation-async-comm"),
        Flag(name="moe_token_dispatcher_type", where="otc", type="str",
             choices=("allgather", "alltoall", "flex", "alltoall_seq"),
             default_note="derived from the HF model by verl's bridge (megatron's own default: allgather)",
             value_synonyms=(("all_to_all", "alltoall"), ("a2a", "alltoall"), ("all2all", "alltoall"),
                             ("all_gather", "allgather")),
             help="MoE token dispatcher.",
             feeds="TransformerConfig.moe_token_dispatcher_type"),
        Flag(name="moe_alltoall_overlap_comm", where="otc", type="bool", process_wide=True,
             help="Overlap alltoall dispatch communication with computation.", feeds="MindSpeed --moe-alltoall-overlap-comm"),
        Flag(name="moe_tp_extend_ep", where="otc", type="bool", process_wide=True,
             help="Use the TP group to extend expert parallelism instead of splitting experts.", feeds="MindSpeed --moe-tp-extend-ep"),
    ),
    shown_otherwise="dict.moe_token_dispatcher_type",
    rules=("moe-async-comm-alone", "moe-dispatcher-in-dict", "moe-alltoall-overlap",
           "moe-allgather-overlap", "moe-tp-extend-ep", "alltoall-seq-etp", "moe-pad-needs-capacity"),
    injects=(
        Injection(key="moe_token_dispatcher_type", value=From("bridge.moe_token_dispatcher_type"),
                  when=("moe_alltoall_overlap_comm", "moe_allgather_overlap_comm", "moe_tp_extend_ep",
                        "use_fused_moe_token_permute_and_unpermute", "moe_permute_fusion"),
                  why="MindSpeed applies its MoE overlap and dispatcher-specific permute patches only when the "
                      "dispatcher is in the dict"),
        Injection(key="num_experts", value=From("model.num_experts"), when=("moe_tp_extend_ep",),
                  requires=("model.moe",),
                  why="MindSpeed's tp-extend-ep check reads num_experts from the dict; taken from the model's "
                      "config.json"),
    ),
)

MLA = Feature(
    id="mla", name="Multi-head latent attention (MLA)",
    kind="feature", status="Preview", source="seed",
    description="DeepSeek-style attention with low-rank compressed keys and values; MindSpeed needs the "
                "MLA dimensions in the dict.",
    seed_keys=(f"{A}.{O}.multi_head_latent_attention",),
    flags=(
        Flag(name="multi_head_latent_attention", where="otc", type="bool", process_wide=True,
             help="MindSpeed's MLA switch; needs kv_lora_rank, v_head_dim, qk_rope_head_dim, qk_nope_head_dim.",
             feeds="MindSpeed --multi-head-latent-attention"),
        Flag(name="q_lora_rank", where="otc", type="int", minimum=1, nullable=True, process_wide=True,
             help="Query low-rank dimension (null: no query compression).",
             feeds="MindSpeed --q-lora-rank"),
        Flag(name="kv_lora_rank", where="otc", type="int", minimum=1, nullable=True, process_wide=True,
             help="Key/value low-rank dimension.", feeds="MindSpeed --kv-lora-rank"),
        Flag(name="qk_rope_head_dim", where="otc", type="int", minimum=1, nullable=True, process_wide=True,
             help="Per-head dimension that carries RoPE.",
             feeds="MindSpeed --qk-rope-head-dim"),
        Flag(name="qk_nope_head_dim", where="otc", type="int", minimum=1, nullable=True, process_wide=True,
             help="Per-head dimension without RoPE.",
             feeds="MindSpeed --qk-nope-head-dim"),
        Flag(name="v_head_dim", where="otc", type="int", minimum=1, nullable=True, process_wide=True,
             help="Per-head value dimension.", feeds="MindSpeed --v-head-dim"),
    ),
    rules=("mla-dimensions",),
    injects=(Injection(key=None, value=From("model.mla_dims"), when=("multi_head_latent_attention",),
                       requires=("model",),
                       why="MindSpeed's MLA needs the dimension in the dict; taken from the model's config.json"),),
)

MBRIDGE = Feature(
    id="mbridge", name="mbridge weight loader", kind="feature", status="Preview",
    source="mindspeed-verl-guide",
    description="Loads HF weights straight into Megatron models; MindSpeed's verl guide says it does not support "
                "VPP on NPU yet (no code refuses the pair, and verl's Ascend CI runs it). verl 0.8 and later require "
                "it (their Megatron engine asserts use_mbridge=True).",
    seed_keys=(f"{A}.use_mbridge",),
    flags=(Flag(name="use_mbridge", where="megatron", type="bool", default=True,
                default_note="verl's engine/megatron.yaml (0.9)",
                help="Build the Megatron model through a bridge from the HF config and weights.", feeds="verl McoreEngineConfig.use_mbridge"),),
    rules=("mbridge-vpp", "verl-engine-mbridge"),
)

FEATURES = (MOE_ALLTOALL, MLA, MBRIDGE)
