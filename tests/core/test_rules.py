"""Every cross-field rule: failing cases with their exact message, and passing cases, on verl's real tree.

A case runs the resolver on verl 0.9.1's composed config with some settings, as a launch through
verl-mindspeed (``injected``, the default) or as a plain verl launch, for one MindSpeed release and verl era.
"""

from __future__ import annotations

import pytest
from pytest import param

from verl_mindspeed.model import load_model_spec
from verl_mindspeed.rules import RULES
from verl_mindspeed.stack import FOUND, GIVEN, build_stack

M = "actor_rollout_ref.actor.megatron."
O = M + "override_transformer_config."
C = "critic.megatron."
PLAIN = {"injected": False}
R23 = {"release": "2.3.0_core_r0.12.1"}
MCORE16 = {"release": "core_r0.16.0"}
GAE = {"algorithm.adv_estimator": "gae", "critic.strategy": "megatron"}
MB = {M + "vanilla_mbridge": True}
FIXTURES = __import__("pathlib").Path(__file__).resolve().parents[1] / "fixtures" / "models"
MLA_MOE_MODEL = load_model_spec(FIXTURES / "Moonlight-16B-A3B-Instruct")[0]  # DeepSeek-V3 family: shared experts
# mbridge: the bridge that does not set position_embedding_type
MOE_MODEL = load_model_spec(FIXTURES / "Qwen3-30B-A3B")[0]
MLA = {O + "multi_head_latent_attention": True, O + "kv_lora_rank": 512, O + "v_head_dim": 128,
       O + "qk_rope_head_dim": 64, O + "qk_nope_head_dim": 128}

# stacks for the stack's rules: MindSpeed 26.1.0 (megatron-core 0.12.1, no Megatron-Bridge imports there); core_r0.16.0
# with Megatron-Bridge 0.3.1 (imports) or 0.5.1 (does not); core_r0.18.0 found on a host with or without its adaptor;
# master told it runs on megatron-core 0.18.2 with Megatron-Bridge 0.5.1 (which refuses unknown overrides)
S26 = build_stack("0.9.1", "26.1.0_core_r0.12.1", GIVEN)
S16 = build_stack("0.9.1", "core_r0.16.0", GIVEN)
S16_MB05 = build_stack("0.9.1", "core_r0.16.0", GIVEN, bridges={"megatron-bridge": "0.5.1"})
_S18 = build_stack("0.9.1", "core_r0.18.0", GIVEN, core="0.18.2", bridges={"megatron-bridge": "0.5.1"})
S18_NO_ADAPTOR = __import__("dataclasses").replace(_S18, source={**_S18.source, "mindspeed": FOUND}, adaptor=False)
S18_ADAPTOR = __import__("dataclasses").replace(S18_NO_ADAPTOR, adaptor=True)
S18_MASTER = build_stack("0.9.1", "master", GIVEN, core="0.18.2", bridges={"megatron-bridge": "0.5.1"})

# (rule id, failing settings, severity, key, exact message, passing settings, options)
AC, RO = "actor_rollout_ref.actor.", "actor_rollout_ref.rollout."
#: PP 2 with a virtual pipeline of 2 on every role (the critic's too: the sizes agree), 16 prompts a step.
VPP2 = {f"{role}.megatron.{size}": 2 for role in ("actor_rollout_ref.actor", "critic")
        for size in ("pipeline_model_parallel_size", "virtual_pipeline_model_parallel_size")} | {
    "data.train_batch_size": 16, AC + "ppo_mini_batch_size": 16, "critic.ppo_mini_batch_size": 16}
CASES = [
    ("sp-requires-tp", {O + "sequence_parallel": True}, "error", O + "sequence_parallel",
     "sequence_parallel=True requires tensor_model_parallel_size > 1 (got 1)",
     {O + "sequence_parallel": True, M + "tensor_model_parallel_size": 2}, {}),
    ("ep-tp-requires-sp",
     {M + "expert_model_parallel_size": 2, M + "tensor_model_parallel_size": 2, O + "sequence_parallel": False},
     "error", O + "sequence_parallel",
     "expert_model_parallel_size=2 with tensor_model_parallel_size=2 requires sequence_parallel=True",
     {M + "expert_model_parallel_size": 2, M + "tensor_model_parallel_size": 2}, {}),
    ("ep-tp-requires-sp",
     {M + "expert_model_parallel_size": 2, M + "tensor_model_parallel_size": 2, O + "sequence_parallel": False},
     "warning", O + "sequence_parallel",
     "expert_model_parallel_size=2 with tensor_model_parallel_size=2 requires sequence_parallel=True",
     {M + "expert_model_parallel_size": 2, M + "tensor_model_parallel_size": 2}, MCORE16),
    ("dict-sizes-agree", {M + "context_parallel_size": 2, O + "context_parallel_size": 4}, "error",
     O + "context_parallel_size",
     "override_transformer_config.context_parallel_size=4 and megatron.context_parallel_size=2 must be equal: verl "
     "copies the dict over the engine's size in the model's config, while the process groups use the engine's",
     {M + "context_parallel_size": 2, O + "context_parallel_size": 2}, {}),
    ("dict-sizes-agree", {M + "tensor_model_parallel_size": 2, O + "tensor_model_parallel_size": 4}, "error",
     O + "tensor_model_parallel_size",
     "override_transformer_config.tensor_model_parallel_size=4 and megatron.tensor_model_parallel_size=2 must be "
     "equal: verl copies the dict over the engine's size in the model's config, while the process groups use the "
     "engine's", {M + "tensor_model_parallel_size": 2, O + "tensor_model_parallel_size": 2}, {}),
    ("dict-sizes-agree", {M + "tensor_model_parallel_size": 2, O + "expert_tensor_parallel_size": 1}, "error",
     O + "expert_tensor_parallel_size",
     "override_transformer_config.expert_tensor_parallel_size=1 and megatron.expert_tensor_parallel_size=2 must be "
     "equal: verl copies the dict over the engine's size in the model's config, while the process groups use the "
     "engine's", {M + "tensor_model_parallel_size": 2, M + "expert_tensor_parallel_size": 1,
                  O + "expert_tensor_parallel_size": 1}, {}),
    ("dict-sizes-agree", {M + "tensor_model_parallel_size": 2, M + "sequence_parallel": False,
                          O + "sequence_parallel": True}, "warning", O + "sequence_parallel",
     "override_transformer_config.sequence_parallel=True overrides the engine's sequence_parallel=False: the model "
     "is built with the dict's value", {M + "tensor_model_parallel_size": 2, O + "sequence_parallel": True}, {}),
    ("verl-engine-mbridge", {M + "use_mbridge": False}, "error", M + "use_mbridge",
     "use_mbridge=False cannot run on verl 0.8.0 and later: verl's Megatron engine asserts 'use_mbridge must be "
     "True' when each worker starts", {M + "use_mbridge": False}, {"pass_opts": {"era": "legacy"}}),
    ("verl-micro-batch", {AC + "ppo_micro_batch_size_per_gpu": None}, "error", AC + "ppo_micro_batch_size_per_gpu",
     f"{AC}ppo_micro_batch_size_per_gpu is not set: without dynamic batching ({AC}use_dynamic_bsz=False) verl's "
     "driver requires a micro batch size and stops in validate_config, before any worker starts",
     {AC + "ppo_micro_batch_size_per_gpu": None, AC + "use_dynamic_bsz": True}, {}),
    ("verl-micro-batch", {RO + "log_prob_micro_batch_size": 8}, "error", RO + "log_prob_micro_batch_size",
     f"{RO}log_prob_micro_batch_size and {RO}log_prob_micro_batch_size_per_gpu are both set: verl's driver accepts "
     f"only {RO}log_prob_micro_batch_size_per_gpu (the former is deprecated)",
     {RO + "log_prob_micro_batch_size": 8, RO + "log_prob_micro_batch_size_per_gpu": None}, {}),
    ("moe-alltoall-mc2", {O + "moe_alltoall_mc2": True, M + "tensor_model_parallel_size": 2,
                          M + "expert_model_parallel_size": 2}, "error", M + "expert_tensor_parallel_size",
     "moe_alltoall_mc2=True with moe_token_dispatcher_type=alltoall requires expert_tensor_parallel_size=1 (got 2, "
     "which is TP when unset)", {O + "moe_alltoall_mc2": True, M + "tensor_model_parallel_size": 2,
                                  M + "expert_model_parallel_size": 2, M + "expert_tensor_parallel_size": 1},
     {"model": MOE_MODEL}),
    ("moe-alltoall-mc2", {O + "moe_alltoall_mc2": True, O + "moe_alltoall_overlap_comm": True,
                          O + "moe_token_dispatcher_type": "alltoall", O + "moe_grouped_gemm": True,
                          O + "moe_permutation_async_comm": True}, "error",
     O + "moe_alltoall_overlap_comm",
     "moe_alltoall_mc2 and moe_alltoall_overlap_comm cannot be combined (MindSpeed asserts it)",
     {O + "moe_alltoall_mc2": True, O + "moe_alltoall_overlap_comm": True, O + "moe_token_dispatcher_type": "alltoall",
      O + "moe_grouped_gemm": True, O + "moe_permutation_async_comm": True},
     {"model": MOE_MODEL, "pass_opts": {"model": MOE_MODEL, **MCORE16}}),
    ("model-parallel-divides-world", {M + "tensor_model_parallel_size": 4, M + "pipeline_model_parallel_size": 3},
     "error", M + "tensor_model_parallel_size",
     "tensor_model_parallel_size x pipeline_model_parallel_size x context_parallel_size = 4 x 3 x 1 = 12 must "
     "divide the device count trainer.nnodes x trainer.n_gpus_per_node = 8",
     {M + "tensor_model_parallel_size": 4, M + "pipeline_model_parallel_size": 2}, {}),
    ("expert-parallel-divides-world", {M + "expert_model_parallel_size": 16}, "error",
     M + "expert_model_parallel_size",
     "expert_tensor_parallel_size x expert_model_parallel_size x pipeline_model_parallel_size = 1 x 16 x 1 = 16 "
     "must divide the device count 8 (expert_tensor_parallel_size is unset: megatron takes TP)",
     {M + "expert_model_parallel_size": 8}, {}),
    ("mbridge-vpp", {M + "pipeline_model_parallel_size": 2, M + "virtual_pipeline_model_parallel_size": 2},
     "warning", M + "virtual_pipeline_model_parallel_size",
     "use_mbridge=True with virtual_pipeline_model_parallel_size=2: MindSpeed's verl guide says mbridge does not "
     "support VPP yet, though no code refuses it and verl's Ascend CI runs the pair",
     {M + "pipeline_model_parallel_size": 2, M + "virtual_pipeline_model_parallel_size": 2, M + "use_mbridge": False},
     {"pass_opts": {"era": "legacy"}}),
    ("vpp-requires-pp", {M + "virtual_pipeline_model_parallel_size": 1, M + "use_mbridge": False}, "error",
     M + "virtual_pipeline_model_parallel_size",
     "virtual_pipeline_model_parallel_size=1 requires pipeline_model_parallel_size > 1",
     {M + "virtual_pipeline_model_parallel_size": None}, {}),
    ("uneven-pp-needs-middle", {O + "num_layers_in_first_pipeline_stage": 3}, "error",
     O + "num_layers_in_first_pipeline_stage",
     "num_layers_in_first_pipeline_stage requires pipeline_model_parallel_size > 1 (got 1)",
     {O + "num_layers_in_first_pipeline_stage": 3, M + "pipeline_model_parallel_size": 2}, {}),
    *[("model-layers-pp",  # both uneven sizes at PP=1, no model needed: megatron-core 0.12.1 and 0.16.1 alike
       {O + "num_layers_in_first_pipeline_stage": 3, O + "num_layers_in_last_pipeline_stage": 1}, "error",
       O + "num_layers_in_last_pipeline_stage",
       "num_layers_in_first_pipeline_stage and num_layers_in_last_pipeline_stage at pipeline_model_parallel_size=1: "
       "megatron-core raises nothing and builds num_layers_in_last_pipeline_stage=1 layers",
       {O + "num_layers_in_first_pipeline_stage": 3, O + "num_layers_in_last_pipeline_stage": 1,
        M + "pipeline_model_parallel_size": 4}, options) for options in ({}, {"pass_opts": MCORE16, **MCORE16})],
    ("uneven-pp-needs-middle",
     {M + "pipeline_model_parallel_size": 2, O + "num_layers_in_first_pipeline_stage": 1,
      O + "num_layers_in_last_pipeline_stage": 1}, "error", O + "num_layers_in_last_pipeline_stage",
     "num_layers_in_first_pipeline_stage and num_layers_in_last_pipeline_stage together require "
     "pipeline_model_parallel_size > 2 (got 2)",
     {M + "pipeline_model_parallel_size": 2, O + "num_layers_in_first_pipeline_stage": 1,
      O + "num_layers_in_last_pipeline_stage": 1}, {"pass_opts": MCORE16}),
    ("swap-optimizer-requires-distributed-optimizer",
     {O + "swap_optimizer": True, M + "use_distributed_optimizer": False}, "error", M + "use_distributed_optimizer",
     "swap_optimizer=True requires megatron.use_distributed_optimizer=True", {O + "swap_optimizer": True}, {}),
    ("swap-optimizer-requires-distributed-optimizer", {O + "swap_optimizer": True}, "error",
     O + "use_distributed_optimizer",
     "swap_optimizer=True requires use_distributed_optimizer=True in override_transformer_config: MindSpeed "
     "26.1.0_core_r0.12.1 checks the copy in the dict, and verl does not put megatron.use_distributed_optimizer there",
     {O + "swap_optimizer": True, O + "use_distributed_optimizer": True}, PLAIN),
    ("reuse-fp32-param-under-verl", {O + "reuse_fp32_param": True}, "error", O + "reuse_fp32_param",
     "reuse_fp32_param=True cannot work under verl: MindSpeed validates it on the config verl builds and reads "
     "use_legacy_models, a Megatron-LM argument that config does not have (AttributeError when the model config is "
     "built)", {O + "reuse_fp32_param": False}, {}),
    ("swap-optimizer-conflicts", {O + "swap_optimizer": True, O + "reuse_fp32_param": True}, "error",
     O + "reuse_fp32_param", "swap_optimizer=True and reuse_fp32_param=True cannot be combined",
     {O + "swap_optimizer": True}, {}),
    ("noop-layers-in-range", {O + "noop_layers": "0,28", O + "num_layers": 28}, "error", O + "noop_layers",
     "noop_layers='0,28' requires every index in [0, num_layers=28); out of range: 28",
     {O + "noop_layers": "0,27", O + "num_layers": 28}, {}),
    ("recompute-full", {O + "recompute_granularity": "full", O + "recompute_num_layers": 1}, "error",
     O + "recompute_method", "recompute_granularity=full requires recompute_method=uniform or block",
     {O + "recompute_granularity": "full", O + "recompute_method": "uniform", O + "recompute_num_layers": 1}, {}),
    ("recompute-selective", {O + "recompute_granularity": "selective", O + "recompute_num_layers": 2}, "error",
     O + "recompute_num_layers", "recompute_granularity=selective requires recompute_num_layers=null (got 2)",
     {O + "recompute_granularity": "selective"}, {}),
    ("recompute-method-without-granularity", {O + "recompute_method": "uniform"}, "warning", O + "recompute_method",
     "recompute_method=uniform has no effect: recompute_granularity is null",
     {O + "recompute_method": "uniform", O + "recompute_granularity": "full", O + "recompute_num_layers": 2}, {}),
    ("recompute-modules",
     {O + "recompute_granularity": "selective", O + "recompute_modules": ["moe_act"], O + "moe_grouped_gemm": False},
     "error", O + "recompute_modules", "recompute_modules with moe_act requires moe_grouped_gemm=True",
     {O + "recompute_granularity": "selective", O + "recompute_modules": ["moe_act"]}, {}),
    ("distribute-saved-activations-sp",
     {M + "tensor_model_parallel_size": 2, O + "recompute_granularity": "selective",
      O + "distribute_saved_activations": True}, "error", O + "distribute_saved_activations",
     "distribute_saved_activations=True and sequence_parallel=True cannot be combined",
     {O + "recompute_granularity": "selective", O + "distribute_saved_activations": True}, {}),
    ("flash-attn-mask-crash", {O + "use_flash_attn": False}, "error", O + "use_flash_attn",
     "actor builds its config with use_flash_attn=False: MindSpeed's attention-mask generation then needs a "
     "micro_batch_size, which verl never sets, and the role stops at its first forward ('Please set "
     "micro_batch_size or set use_flash_attn=True in config.')", {O + "use_flash_attn": True}, {}),
    ("flash-attn-mask-crash", {}, "error", O + "use_flash_attn",
     "actor builds its config with use_flash_attn=absent: MindSpeed's attention-mask generation then needs a "
     "micro_batch_size, which verl never sets, and the role stops at its first forward ('Please set "
     "micro_batch_size or set use_flash_attn=True in config.')",
     {O + "use_flash_attn": True}, {"injected": False, "era": "legacy", "pass_opts": {"era": "legacy"}}),
    ("cp-forces-flash-attn", {M + "context_parallel_size": 2, O + "use_flash_attn": False}, "note",
     O + "use_flash_attn", "use_flash_attn=False is overridden: with context_parallel_size=2 MindSpeed's CP "
     "algorithm turns flash attention on itself", {M + "context_parallel_size": 2}, {}),
    ("cp-algo-without-cp", {O + "context_parallel_algo": "ulysses_cp_algo"}, "warning", O + "context_parallel_algo",
     "context_parallel_algo=ulysses_cp_algo has no effect: context_parallel_size is 1",
     {O + "context_parallel_algo": "megatron_cp_algo"}, {}),
    ("cp-algo-without-cp", {O + "use_fused_ring_attention_update": True}, "warning",
     O + "use_fused_ring_attention_update", "use_fused_ring_attention_update=True has no effect: only MindSpeed's "
     "ring attention reads it, and context_parallel_size is 1",
     {O + "use_fused_ring_attention_update": True, M + "context_parallel_size": 2}, {}),
    ("cp-window-size", {M + "context_parallel_size": 4, O + "cp_window_size": 3}, "error", O + "cp_window_size",
     "cp_window_size=3 requires a divisor of the ring size 4 in [1, 4) (context_parallel_algo=megatron_cp_algo)",
     {M + "context_parallel_size": 4, O + "cp_window_size": 3, O + "context_parallel_algo": "ulysses_cp_algo",
      O + "seq_length": 4096}, {}),
    ("cp-window-size",
     {M + "context_parallel_size": 8, O + "context_parallel_algo": "hybrid_cp_algo", O + "ulysses_degree_in_cp": 2,
      O + "cp_window_size": 4}, "error", O + "cp_window_size",
     "cp_window_size=4 requires a divisor of the ring size 4 in [1, 4) (context_parallel_algo=hybrid_cp_algo)",
     {M + "context_parallel_size": 8, O + "context_parallel_algo": "hybrid_cp_algo", O + "ulysses_degree_in_cp": 2,
      O + "cp_window_size": 2}, {}),
    ("hybrid-cp-ulysses-degree",
     {M + "context_parallel_size": 4, O + "context_parallel_algo": "hybrid_cp_algo", O + "ulysses_degree_in_cp": 4},
     "error", O + "ulysses_degree_in_cp",
     "context_parallel_algo=hybrid_cp_algo requires context_parallel_size / ulysses_degree_in_cp to be an integer "
     "> 1 (got 4 / 4)",
     {M + "context_parallel_size": 4, O + "context_parallel_algo": "hybrid_cp_algo", O + "ulysses_degree_in_cp": 2},
     {}),
    ("hybrid-cp-ulysses-degree",
     {M + "context_parallel_size": 4, O + "context_parallel_algo": "hybrid_adaptive_cp_algo", O + "seq_length": 4096},
     "error", O + "ulysses_degree_in_cp", "context_parallel_algo=hybrid_adaptive_cp_algo requires ulysses_degree_in_cp",
     {M + "context_parallel_size": 4, O + "context_parallel_algo": "hybrid_adaptive_cp_algo",
      O + "ulysses_degree_in_cp": 2, O + "seq_length": 4096}, {}),
    ("cp-seq-length", {M + "context_parallel_size": 2, O + "context_parallel_algo": "ulysses_cp_algo", **MB},
     "error", O + "seq_length", "context_parallel_algo=ulysses_cp_algo requires seq_length in "
     "override_transformer_config: MindSpeed reads it unguarded and fails inside the worker without it",
     {M + "context_parallel_size": 2, O + "context_parallel_algo": "ulysses_cp_algo", O + "seq_length": 4096, **MB},
     {}),
    # Megatron-Bridge (verl 0.9's default path): the provider carries seq_length, the model's max_position_embeddings
    ("cp-seq-length", {M + "context_parallel_size": 2, O + "context_parallel_algo": "ulysses_cp_algo",
                       O + "seq_length": 4095}, "error", O + "seq_length",
     "context_parallel_algo=ulysses_cp_algo requires seq_length divisible by 2 (got 4095)",
     {M + "context_parallel_size": 2, O + "context_parallel_algo": "ulysses_cp_algo"}, {"model": MOE_MODEL}),
    ("mla-dimensions", {O + "multi_head_latent_attention": True, O + "kv_lora_rank": 512}, "error",
     O + "multi_head_latent_attention",
     "multi_head_latent_attention=True requires v_head_dim, qk_rope_head_dim, qk_nope_head_dim in "
     "override_transformer_config: MindSpeed's MLA reads them there, not from the model's config.json",
     {O + "multi_head_latent_attention": True, O + "kv_lora_rank": 512, O + "v_head_dim": 128,
      O + "qk_rope_head_dim": 64, O + "qk_nope_head_dim": 128}, {}),
    ("mla-mask-seq-length", {**MB, **MLA}, "error", O + "seq_length",
     "actor builds an MLA config without seq_length: at its first forward MindSpeed makes the MLA attention mask "
     "from config.seq_length and the role stops with AttributeError", {**MB, **MLA, O + "seq_length": 4096}, {}),
    ("fused-rope-position-embedding", {O + "use_fused_rotary_pos_emb": True, **MB}, "error",
     O + "use_fused_rotary_pos_emb",
     "use_fused_rotary_pos_emb=True requires position_embedding_type=rope in override_transformer_config: this "
     "model bridge does not set it, and MindSpeed's check fails with AttributeError",
     {O + "use_fused_rotary_pos_emb": True}, PLAIN),
    ("fused-rope-position-embedding",
     {O + "use_fused_rotary_pos_emb": True, O + "position_embedding_type": "learned_absolute"}, "error",
     O + "position_embedding_type",
     "use_fused_rotary_pos_emb=True requires position_embedding_type=rope (got learned_absolute)",
     {O + "use_fused_rotary_pos_emb": True, **MB}, {}),
    ("fused-op-companions", {O + "use_fused_rmsnorm": True, O + "normalization": "LayerNorm"}, "warning",
     O + "normalization", "use_fused_rmsnorm=True requires normalization=RMSNorm (got LayerNorm); the fused kernel "
     "does not match this model", {O + "use_fused_rmsnorm": True, O + "normalization": "RMSNorm"}, {}),
    ("permute-fusion-dispatcher", {O + "moe_permute_fusion": True, O + "moe_token_dispatcher_type": "allgather"},
     "error", O + "moe_token_dispatcher_type",
     "fused permute/unpermute and moe_token_dispatcher_type=allgather cannot be combined",
     {O + "moe_permute_fusion": True}, {}),
    ("moe-topk1-pre-softmax", {O + "moe_router_topk": 1, O + "moe_router_score_function": "softmax",
                               O + "moe_router_pre_softmax": False}, "error",
     O + "moe_router_topk", "moe_router_topk=1 with the softmax router requires moe_router_pre_softmax=True "
     "(megatron-core: \"Please use --moe-router-pre-softmax when topk is 1\")",
     {O + "moe_router_topk": 1, O + "moe_router_score_function": "softmax", O + "moe_router_pre_softmax": True}, {}),
    ("moe-topk1-pre-softmax", {O + "moe_router_topk": 1}, "warning", O + "moe_router_topk",
     "moe_router_topk=1 with the softmax router requires moe_router_pre_softmax=True (megatron-core: \"Please use "
     "--moe-router-pre-softmax when topk is 1\"), unless the model's config path sets a sigmoid router or "
     "pre-softmax (give --model-config to know)", {O + "moe_router_topk": 1, O + "moe_router_pre_softmax": True}, {}),
    ("moe-pad-needs-capacity", {O + "moe_pad_expert_input_to_capacity": True}, "error",
     O + "moe_pad_expert_input_to_capacity",
     "moe_pad_expert_input_to_capacity=True requires moe_expert_capacity_factor",
     {O + "moe_pad_expert_input_to_capacity": True, O + "moe_expert_capacity_factor": 1.0}, {}),
    ("alltoall-seq-etp",
     {M + "tensor_model_parallel_size": 2, M + "expert_tensor_parallel_size": 1,
      O + "moe_token_dispatcher_type": "alltoall_seq"}, "error", M + "expert_tensor_parallel_size",
     "moe_token_dispatcher_type=alltoall_seq requires expert_tensor_parallel_size equal to tensor_model_parallel_size "
     "(got 1 and 2)", {M + "tensor_model_parallel_size": 2, O + "moe_token_dispatcher_type": "alltoall_seq",
                       O + "variable_seq_lengths": False}, {}),
    ("moe-shared-expert-overlap-dispatcher", {O + "moe_token_dispatcher_type": "flex"}, "error",
     O + "moe_token_dispatcher_type", "moe_token_dispatcher_type=flex requires moe_shared_expert_overlap=False (verl "
     "turns it on for this model): megatron-core allows the overlap only with alltoall",
     {O + "moe_token_dispatcher_type": "flex", O + "moe_shared_expert_overlap": False}, {"model": MLA_MOE_MODEL}),
    ("moe-dispatcher-variable-seq", {O + "moe_token_dispatcher_type": "allgather"}, "error",
     O + "moe_token_dispatcher_type", "moe_token_dispatcher_type=allgather requires variable_seq_lengths=False, but "
     "verl builds every model with variable_seq_lengths=True: megatron-core raises ValueError on a MoE model; use "
     "alltoall", {O + "moe_token_dispatcher_type": "alltoall"}, {"model": MOE_MODEL}),
    ("moe-dispatcher-variable-seq", {O + "moe_token_dispatcher_type": "alltoall_seq"}, "error",
     O + "moe_token_dispatcher_type", "moe_token_dispatcher_type=alltoall_seq requires variable_seq_lengths=False, "
     "but verl builds every model with variable_seq_lengths=True: megatron-core raises ValueError on a MoE model; use "
     "alltoall", {O + "moe_token_dispatcher_type": "alltoall_seq"},
     {"model": MOE_MODEL, "pass_opts": {"model": MOE_MODEL, **MCORE16}}),
    # a dense model: MindSpeed turns variable_seq_lengths off while megatron validates; unknown model: a warning
    ("moe-dispatcher-variable-seq", {O + "moe_token_dispatcher_type": "allgather"}, "warning",
     O + "moe_token_dispatcher_type", "moe_token_dispatcher_type=allgather requires variable_seq_lengths=False, but "
     "verl builds every model with variable_seq_lengths=True: megatron-core raises ValueError on a MoE model; use "
     "alltoall", {O + "moe_token_dispatcher_type": "allgather"},
     {"pass_opts": {"model": load_model_spec(FIXTURES / "Qwen3-8B")[0]}}),
    ("moe-async-comm-alone", {O + "moe_permutation_async_comm": True}, "warning", O + "moe_permutation_async_comm",
     "moe_permutation_async_comm=True has no effect on its own: it is a precondition of moe_tp_extend_ep, "
     "moe_alltoall_overlap_comm and moe_allgather_overlap_comm",
     {O + "moe_permutation_async_comm": True, O + "moe_alltoall_overlap_comm": True,
      M + "expert_model_parallel_size": 2}, {}),
    ("moe-dispatcher-in-dict", {O + "moe_permute_fusion": True}, "warning", O + "moe_permute_fusion",
     "fused permute/unpermute is only partly applied: MindSpeed registers its alltoall-dispatcher patches only when "
     "moe_token_dispatcher_type is in override_transformer_config",
     {O + "moe_permute_fusion": True, O + "moe_token_dispatcher_type": "alltoall"}, PLAIN),
    ("moe-dispatcher-in-dict", {O + "moe_alltoall_overlap_comm": True, M + "expert_model_parallel_size": 2},
     "warning", O + "moe_alltoall_overlap_comm",
     "moe_alltoall_overlap_comm=True has no effect: MindSpeed applies it only when moe_token_dispatcher_type is in "
     "override_transformer_config, and the model bridge sets the dispatcher elsewhere",
     {O + "moe_alltoall_overlap_comm": True, M + "expert_model_parallel_size": 2,
      O + "moe_token_dispatcher_type": "alltoall"}, PLAIN),
    ("bridge-permute-fusion", {}, "note", O + "moe_permute_fusion",
     "Megatron-Bridge turns moe_permute_fusion on for this MoE model, but MindSpeed registers its NPU "
     "permute/unpermute only when the switch is in override_transformer_config; set it there, True or False",
     {O + "moe_permute_fusion": False}, {"injected": False, "model": MOE_MODEL}),
    ("moe-alltoall-overlap", {O + "moe_alltoall_overlap_comm": True}, "error", M + "expert_model_parallel_size",
     "moe_alltoall_overlap_comm=True requires expert_model_parallel_size > 1",
     {O + "moe_alltoall_overlap_comm": True, M + "expert_model_parallel_size": 2}, {}),
    ("moe-alltoall-overlap",
     {O + "moe_alltoall_overlap_comm": True, M + "expert_model_parallel_size": 2, O + "moe_grouped_gemm": False},
     "error", O + "moe_grouped_gemm", "moe_alltoall_overlap_comm=True requires moe_grouped_gemm=True",
     {O + "moe_alltoall_overlap_comm": True, M + "expert_model_parallel_size": 2}, {}),
    ("moe-allgather-overlap", {O + "moe_allgather_overlap_comm": True, O + "moe_permutation_async_comm": True},
     "error", O + "moe_token_dispatcher_type",
     "moe_allgather_overlap_comm=True requires moe_token_dispatcher_type=allgather (got alltoall, which the model "
     "bridge sets unless the dict says otherwise)",
     {O + "moe_allgather_overlap_comm": True, O + "moe_permutation_async_comm": True,
      O + "moe_token_dispatcher_type": "allgather", O + "variable_seq_lengths": False}, {}),
    ("moe-tp-extend-ep",
     {O + "moe_tp_extend_ep": True, O + "moe_permutation_async_comm": True, M + "expert_model_parallel_size": 2},
     "error", O + "num_experts",
     "moe_tp_extend_ep=True requires num_experts in override_transformer_config: MindSpeed reads it there and fails "
     "with AttributeError without it",
     {O + "moe_tp_extend_ep": True, O + "moe_permutation_async_comm": True, M + "expert_model_parallel_size": 2,
      O + "num_experts": 8}, {}),
    ("mc2-requires-sp-tp", {O + "use_ascend_mc2": True}, "error", M + "tensor_model_parallel_size",
     "use_ascend_mc2=True requires tensor_model_parallel_size > 1",
     {O + "use_ascend_mc2": True, M + "tensor_model_parallel_size": 2}, {}),
    ("mc2-requires-sp-tp", {O + "use_ascend_mc2": True}, "warning", M + "tensor_model_parallel_size",
     "use_ascend_mc2=True requires tensor_model_parallel_size > 1",
     {O + "use_ascend_mc2": True, M + "tensor_model_parallel_size": 2}, R23),
    ("mc2-requires-sp-tp", {O + "use_ascend_mc2": True, M + "tensor_model_parallel_size": 2}, "error",
     O + "use_ascend_mc2",
     "use_ascend_mc2=True requires tensor_model_parallel_size in override_transformer_config: MindSpeed's MC2 patch "
     "reads them there and fails with AttributeError without them",
     {O + "use_ascend_mc2": True, M + "tensor_model_parallel_size": 2, O + "tensor_model_parallel_size": 2}, PLAIN),
    ("mc2-conflicts", {O + "use_ascend_mc2": True, M + "tensor_model_parallel_size": 2, O + "use_ascend_coc": True},
     "error", O + "use_ascend_coc", "use_ascend_mc2=True and use_ascend_coc=True cannot be combined",
     {O + "use_ascend_mc2": True, M + "tensor_model_parallel_size": 2}, {}),
    ("cp-algo-release", {M + "context_parallel_size": 2, O + "context_parallel_algo": "kvallgather_cp_algo"}, "error",
     O + "context_parallel_algo",
     "context_parallel_algo=kvallgather_cp_algo requires MindSpeed 26.0.0 or later (checking against "
     "2.3.0_core_r0.12.1, which has no code for it)",
     {M + "context_parallel_size": 2, O + "context_parallel_algo": "megatron_cp_algo"}, R23),
    ("role-sizes-agree", {**GAE, M + "tensor_model_parallel_size": 2}, "error", M + "tensor_model_parallel_size",
     "actor would run with the parallel sizes of critic (TP 2 vs 1): in verl 0.8.0 and later the critic is built "
     "first and initializes Megatron's parallel state, and later roles reuse it without checking",
     {**GAE, M + "tensor_model_parallel_size": 2, C + "tensor_model_parallel_size": 2}, {}),
    ("role-sizes-agree", {**GAE, M + "tensor_model_parallel_size": 2}, "warning", C + "tensor_model_parallel_size",
     "critic's parallel sizes are ignored (TP 1 vs 2): in verl 0.6.0 to 0.7.x the actor's worker initializes "
     "Megatron's parallel state and critic reuses it",
     {**GAE, M + "tensor_model_parallel_size": 2, C + "tensor_model_parallel_size": 2},
     {"era": "legacy", "pass_opts": {"era": "legacy"}}),
    ("legacy-critic-groups", {**GAE, M + "tensor_model_parallel_size": 2, C + "vanilla_mbridge": False}, "error",
     C + "tensor_model_parallel_size",
     "critic tensor_model_parallel_size=1 disagrees with the actor's process groups (TP=2); with "
     "vanilla_mbridge=False the critic's model is sized from its own config",
     {**GAE, M + "tensor_model_parallel_size": 2, C + "tensor_model_parallel_size": 2, C + "vanilla_mbridge": False},
     {"era": "legacy", "pass_opts": {"era": "legacy"}}),
    ("role-switches-differ", {**GAE, O + "use_fused_rmsnorm": True, C + "override_transformer_config.use_fused_rmsnorm":
                              False}, "warning", C + "override_transformer_config.use_fused_rmsnorm",
     "critic sets use_fused_rmsnorm=False but the actor sets True; MindSpeed's repatch merges every build's dict "
     "into one process-wide namespace in the order critic -> ref -> actor, so the last value wins for every role "
     "at run time",
     {**GAE, O + "use_fused_rmsnorm": True}, {}),
    ("ref-lost-inherited", {O + "use_fused_rmsnorm": True,
                            "actor_rollout_ref.ref.megatron.override_transformer_config.use_flash_attn": True},
     "warning", "actor_rollout_ref.ref.megatron.override_transformer_config",
     "writing under ref's override_transformer_config replaced the dict ref inherits from the actor; ref lost: "
     "use_fused_rmsnorm", {O + "use_fused_rmsnorm": True}, {}),
    ("critic-engine-07", {**GAE, "trainer.use_legacy_worker_impl": "disable"}, "error",
     "trainer.use_legacy_worker_impl",
     "trainer.use_legacy_worker_impl=disable and a Megatron critic cannot be combined in verl 0.7 (init_workers raises "
     "NotImplementedError)", {"trainer.use_legacy_worker_impl": "disable"},
     {"era": "legacy", "pass_opts": {"era": "legacy"}}),
    ("no-repatch", {O + "use_fused_rmsnorm": True}, "error", "--mindspeed-release",
     "MindSpeed 2.1.0_core_r0.12.1 cannot build verl's model config: its TransformerConfig.__post_init__ wrapper "
     "calls megatron.training's get_args(), which verl never initializes (AssertionError: args is not initialized); "
     "it also has no repatch, so verl would ignore the switches use_flash_attn, use_fused_rmsnorm",
     {O + "use_fused_rmsnorm": True},
     {"release": "2.1.0_core_r0.12.1", "pass_opts": {}}),
    # the colocated rollout's groups must divide the devices (a rule the doctor fed back from a public failure)
    ("rollout-world-divides", {"actor_rollout_ref.rollout.tensor_model_parallel_size": 3}, "error",
     "actor_rollout_ref.rollout.tensor_model_parallel_size",
     "the rollout's groups of TP x DP x PP = 3 x 1 x 1 devices do not divide the 8 devices it runs on (trainer.nnodes "
     "x trainer.n_gpus_per_node): verl asserts 'rollout world_size: 8 is not divisible by infer_world_size: 3' when "
     "the workers build the rollout", {"actor_rollout_ref.rollout.tensor_model_parallel_size": 2}, {}),
    # interleaved pipelining's micro batch groups: 16 prompts over a data-parallel size of 4 (8 devices / PP 2) in
    # micro batches of 4 is one per rank, under a group of PP = 2 (megatron-core's range check, verl's engine's assert)
    # the engine's even split: 16 prompts over a data-parallel size of 8 are 2 samples per rank, which micro batches
    # of 4 do not split (verl's prepare_micro_batches asserts it; the driver checks only the train batch)
    ("engine-micro-split", {"data.train_batch_size": 16, AC + "ppo_mini_batch_size": 16,
                            "critic.ppo_mini_batch_size": 16, RO + "log_prob_micro_batch_size_per_gpu": 4},
     "error", RO + "log_prob_micro_batch_size_per_gpu",
     "the actor's log-prob pass has 2 samples per rank (data.train_batch_size x rollout.n / data-parallel size = 16 x "
     "1 / 8), which micro batches of 4 (actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu) do not split: "
     "verl's engine asserts 'data size must be divisible by force_group_size * micro_batch_size_per_gpu' when the "
     "pass starts",
     {"data.train_batch_size": 16, AC + "ppo_mini_batch_size": 16, "critic.ppo_mini_batch_size": 16,
      RO + "log_prob_micro_batch_size_per_gpu": 2}, {}),
    ("vpp-micro-batches", {**VPP2, AC + "ppo_micro_batch_size_per_gpu": 4, RO + "log_prob_micro_batch_size_per_gpu": 4},
     "error", AC + "ppo_micro_batch_size_per_gpu",
     "the actor's update pass has M = 1 micro batches per rank (actor_rollout_ref.actor.ppo_mini_batch_size x "
     "rollout.n / data-parallel size / actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu = 16 x 1 / 4 / 4), and the "
     "interleaved schedule (virtual pipeline size 2) takes them in groups of 2: the pass stops when it starts (verl's "
     "engine asserts 'micro_batches ... must be divisible by num_batches_divided_by 2')",
     {**VPP2, AC + "ppo_micro_batch_size_per_gpu": 2, RO + "log_prob_micro_batch_size_per_gpu": 2}, {}),
    # a size verl divides by, at zero: the rollout rule read it as "not given" and the check said OK
    ("verl-positive-size", {"actor_rollout_ref.rollout.tensor_model_parallel_size": 0}, "error",
     "actor_rollout_ref.rollout.tensor_model_parallel_size",
     "actor_rollout_ref.rollout.tensor_model_parallel_size=0: verl divides or multiplies by it, so it must be 1 or "
     "more; verl does not check it when it reads the config, and the run stops after Ray has started",
     {"actor_rollout_ref.rollout.tensor_model_parallel_size": 1}, {}),
    # the FSDP engine's LoRA key on the Megatron engine: no adapter, and the KL loss's reference pass fails (fed back)
    ("megatron-lora-key", {"actor_rollout_ref.model.lora_rank": 16, AC + "use_kl_loss": True}, "error",
     "actor_rollout_ref.model.lora_rank",
     "actor_rollout_ref.model.lora_rank=16 builds no adapter on verl's Megatron engine, which reads LoRA from "
     "actor_rollout_ref.model.lora.rank: every parameter trains; and the trainer takes the reference from the actor "
     "with its adapter off (the KL loss needs it), which fails at the first reference pass (AttributeError: "
     "'NoneType' object has no attribute 'disable_adapter')",
     {"actor_rollout_ref.model.lora_rank": 16, "actor_rollout_ref.model.lora.rank": 16, AC + "use_kl_loss": True},
     {}),
    ("megatron-lora-key", {"actor_rollout_ref.model.lora_rank": 16, AC + "use_kl_loss": False}, "warning",
     "actor_rollout_ref.model.lora_rank",
     "actor_rollout_ref.model.lora_rank=16 builds no adapter on verl's Megatron engine, which reads LoRA from "
     "actor_rollout_ref.model.lora.rank: every parameter trains",
     {"actor_rollout_ref.model.lora.rank": 16, AC + "use_kl_loss": False}, {}),
    # a '???' of verl's config the launch leaves unset (fed back: a quickstart command without rollout.name)
    ("verl-mandatory-value", {"actor_rollout_ref.rollout.name": "???"}, "error", "actor_rollout_ref.rollout.name",
     "actor_rollout_ref.rollout.name has no value ('???' in verl's config) and the launch does not set it: verl stops "
     "with MissingMandatoryValue when it reads it", {"actor_rollout_ref.rollout.name": "vllm"}, {}),
    # verl 0.4/0.5 build the roles but never call repatch: the dict's MindSpeed switches do nothing there
    ("verl-no-repatch", {O + "use_fused_rmsnorm": True}, "warning", O[:-1],
     "verl 0.4.x and 0.5.x never hand override_transformer_config to MindSpeed (repatch arrived in verl 0.6.0): its "
     "MindSpeed switches use_flash_attn, use_fused_rmsnorm keep MindSpeed's defaults and have no effect, and "
     "MindSpeed's own checks of them do not run", {O + "use_fused_rmsnorm": True},
     {"era": "pre-repatch", "pass_opts": {"era": "legacy"}}),
    # the stack's own rules (rules/stack.py): judged on a stack, as check and the guard do
    ("stack-bridge-import", {}, "error", M + "vanilla_mbridge",
     "verl 0.9.1 builds this role through Megatron-Bridge (megatron.vanilla_mbridge=False, verl's default), and no "
     "Megatron-Bridge release imports with megatron-core 0.12.1, the line MindSpeed 26.1.0_core_r0.12.1 runs on: the "
     "worker stops with ImportError in init_model", MB, {"stack": S26}),
    ("stack-bridge-import", {}, "error", M + "vanilla_mbridge",
     "verl 0.9.1 builds this role through Megatron-Bridge (megatron.vanilla_mbridge=False), and Megatron-Bridge 0.5.1 "
     "does not import with megatron-core 0.16.1 (it needs 0.18): the worker stops with ImportError in init_model", {},
     {"stack": S16_MB05, "pass_opts": {"stack": S16}}),
    ("stack-adaptor", {}, "error", "--mindspeed-release",
     "MindSpeed core_r0.18.0 imports megatron_adaptor (mindspeed/__init__.py:3), and it is not installed here: every "
     "worker stops with ModuleNotFoundError when it imports MindSpeed", {},
     {"stack": S18_NO_ADAPTOR, "pass_opts": {"stack": S18_ADAPTOR}}),
    ("fused-swiglu-inert", {O + "use_fused_swiglu": True}, "warning", O + "use_fused_swiglu",
     "use_fused_swiglu=True has no effect: Megatron-Bridge 0.3.1's provider for Qwen3MoeForCausalLM leaves "
     "bias_activation_fusion False, and megatron's MLP calls the fused SwiGLU MindSpeed patches only when it is True",
     {O + "use_fused_swiglu": True, O + "bias_activation_fusion": True},
     {"stack": S16, "model": MOE_MODEL, "injected": False, "release": "core_r0.16.0"}),
    ("bridge-refuses-unknown", {O + "apply_rope_in_complex": True}, "error", O + "apply_rope_in_complex",
     "Megatron-Bridge 0.5.1's provider has no attribute 'apply_rope_in_complex' and refuses it: AttributeError in "
     "apply_overrides_and_finalize when the role builds its model", {},
     {"stack": S18_MASTER, "release": "master"}),
    # a key nothing registers is refused too (found by the executed bridge: it was an unknown-key warning)
    ("bridge-refuses-unknown", {O + "moe_router_topk_scalling": 2.0}, "error", O + "moe_router_topk_scalling",
     "'moe_router_topk_scalling' is not a MindSpeed, Megatron-LM or TransformerConfig option, nor a field of "
     "Megatron-Bridge 0.5.1's provider, which refuses it: AttributeError in apply_overrides_and_finalize when the role "
     "builds its model", {},
     {"stack": S18_MASTER, "release": "master"}),
    # on core_r0.18.0 a key of other MindSpeed releases only is refused as well: megatron_adaptor decides that
    # release's own namespace at most (found by the executed bridge over the generated space)
    ("bridge-refuses-unknown", {O + "swap_layer_input": True}, "error", O + "swap_layer_input",
     "Megatron-Bridge 0.5.1's provider has no attribute 'swap_layer_input' and refuses it: AttributeError in "
     "apply_overrides_and_finalize when the role builds its model", {},
     {"stack": S18_ADAPTOR, "release": "core_r0.18.0"}),
]


def _find(result, rule_id):
    return [i for i in result.issues if i.rule == rule_id]


def _opts(options: dict) -> dict:
    return {k: v for k, v in options.items() if k != "pass_opts"}


def test_every_registered_rule_has_cases():
    # the model rules, and the batch rule that needs a device count, have their cases in tests/model/test_model_rules.py
    core = {r.id for r in RULES if not r.fn.__module__.endswith("model_rules")} - {"batch-divisibility"}
    assert core - {c[0] for c in CASES} == set(), "add a failing and a passing case for each new rule"


@pytest.mark.parametrize("case", [param(c, id=f"{c[0]}-{i}") for i, c in enumerate(CASES)])
def test_rule_fails(case, resolve_cfg):
    rule_id, failing, severity, key, message, _, options = case
    result = resolve_cfg(failing, **_opts(options))
    found = [(i.severity, i.key, str(i.message)) for i in _find(result, rule_id)]
    assert (severity, key, message) in found


@pytest.mark.parametrize("case", [param(c, id=f"{c[0]}-{i}") for i, c in enumerate(CASES)])
def test_rule_passes(case, resolve_cfg):
    rule_id, _, _, _, _, passing, options = case
    result = resolve_cfg(passing, **options.get("pass_opts", _opts(options)))
    assert [i for i in _find(result, rule_id) if i.severity != "note" or rule_id == "bridge-permute-fusion"] == []
    assert result.errors == [], [i.line() for i in result.errors]


def test_all_problems_are_collected_at_once(resolve_cfg):
    result = resolve_cfg({O + "use_ascend_mc2": True, O + "swap_optimizer": True,
                          M + "use_distributed_optimizer": False, O + "recompute_granularity": "full"})
    rules = {i.rule for i in result.errors}
    assert {"mc2-requires-sp-tp", "swap-optimizer-requires-distributed-optimizer", "recompute-full"} <= rules


def test_an_injected_launch_gets_the_companions_a_plain_one_misses(resolve_cfg):
    """The same MC2 + swap launch: plain, MindSpeed would fail; through verl-mindspeed, the companions are written."""
    settings = {O + "use_ascend_mc2": True, M + "tensor_model_parallel_size": 2, O + "swap_optimizer": True}
    plain = resolve_cfg(settings, injected=False)
    assert {i.rule for i in plain.errors} == {"mc2-requires-sp-tp", "swap-optimizer-requires-distributed-optimizer"}
    injected = resolve_cfg(settings)
    assert injected.errors == []
    actor = injected.roles["actor"]["override_transformer_config"]
    assert (actor["tensor_model_parallel_size"], actor["sequence_parallel"], actor["use_distributed_optimizer"]) == \
        (2, True, True)
    assert {i.key.rsplit(".", 1)[1] for i in injected.notes if i.rule == "inject"} >= {
        "tensor_model_parallel_size", "sequence_parallel", "use_distributed_optimizer"}


def test_repatch_merges_in_build_order(resolve_cfg):
    """verl 0.8+: critic, then ref, then actor; each build sees every key set by the builds before it."""
    result = resolve_cfg({**GAE, O + "use_fused_rmsnorm": True}, injected=False)
    builds = result.receives["builds"]
    assert [b["role"] for b in builds] == ["critic", "ref", "actor"] or [b["role"] for b in builds] == \
        ["critic", "actor"]
    critic, actor = builds[0], builds[-1]
    assert "use_fused_rmsnorm" not in critic["namespace"]
    assert actor["namespace"]["use_fused_rmsnorm"] is True


@pytest.mark.parametrize("release, severity", [("2.3.0_core_r0.12.1", "warning"), ("26.0.0_core_r0.12.1", "error"),
                                               ("26.1.0_core_r0.12.1", "error"), ("core_r0.16.0", "warning"),
                                               ("master", "error")])
def test_mc2_at_tp1_raises_only_where_the_release_raises(resolve_cfg, release, severity):
    """mc2.py validate_args: an AssertionError on 26.0.0, 26.1.0 and master; a warning that skips MC2 elsewhere."""
    result = resolve_cfg({O + "use_ascend_mc2": True}, release=release)
    found = [i.severity for i in _find(result, "mc2-requires-sp-tp")]
    assert found == [severity]


@pytest.mark.parametrize("release", ["2.2.0_core_r0.12.1", "26.1.0_core_r0.12.1"])
def test_mc2_with_sp_false_in_the_dict_never_reads_tp(resolve_cfg, release):
    """register_patches short-circuits on `not args.sequence_parallel`: TP is not read, so no AttributeError."""
    plain = resolve_cfg({O + "use_ascend_mc2": True, O + "sequence_parallel": False}, release=release, injected=False)
    messages = [str(i.message) for i in _find(plain, "mc2-requires-sp-tp")]
    assert messages and not any("AttributeError" in m for m in messages)
    without_sp = resolve_cfg({O + "use_ascend_mc2": True}, release=release, injected=False)
    assert any("AttributeError" in str(i.message) for i in _find(without_sp, "mc2-requires-sp-tp"))


def test_lora_on_a_stack_without_megatron_bridge_gets_no_line(resolve_cfg):
    """verl's get_peft_cls asserts Megatron-Bridge's provider: on MindSpeed 26.1.0 (megatron-core 0.12.1, where no
    Megatron-Bridge imports) no line makes LoRA work, so none is printed (the bridge rule's own fix would undo it)."""
    result = resolve_cfg({"actor_rollout_ref.model.lora_rank": 16, AC + "use_kl_loss": True}, stack=S26)
    (issue,) = [i for i in result.errors if i.rule == "megatron-lora-key"]
    assert issue.override is None and "needs a stack with Megatron-Bridge" in str(issue.message)
