#!/usr/bin/env python3
"""The doctor over the corpus of real failures: docs/doctor-corpus.md and docs/zh/doctor-corpus.md.

    python tools/doctor_corpus.py            # rewrite both pages
    python tools/doctor_corpus.py --check    # exit 1 when a page differs from what the doctor says now

Each folder of ``tests/fixtures/failures`` holds a log as posted in a public thread, the launch where the thread
shows it, and ``meta.json``: the cause and fix as the thread establishes them (``at_fault``: the keys or environment
variables at fault, empty when none is), with its source. The doctor reads each log (and replays the launch when
there is one); a row says what it named and whether that is the thread's key (by its last path component: other
projects spell the same setting ``--pipeline-model-parallel-size``). ``tests/core/test_doctor_corpus.py`` fails when
the pages drift.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

FAILURES = ROOT / "tests" / "fixtures" / "failures"
PAGES = {"en": ROOT / "docs" / "doctor-corpus.md", "zh": ROOT / "docs" / "zh" / "doctor-corpus.md"}
NO_FAULT = ("version-skew", "env", "resource", "upstream-bug")
#: Failures gathered from threads the doctor had not seen, in rounds, each run as gathered before any rule changed
#: for it (docs/doctor.md has those first runs); the page gives their figures apart as well.
HELD_OUT = frozenset({
    "agent_r1_15_sequence_length_larger_than_max_length_old_verl",
    "blog_ai6s_vllm_ascend_missing_vllm_C",
    "blog_gitcode_swift_grpo_npu_torch_not_compiled_cuda",
    "blog_verl_4090_flash_attn_undefined_symbol",
    "blog_verl_4090_sglang_peer_access_not_supported",
    "blog_verl_4090_torch_memory_saver_oom_first_step",
    "docs_chatlearn_megatron_core_r080_default_pg_not_initialized",
    "docs_chatlearn_ray_channel_timeout_vllm_tp_enforce_eager",
    "docs_chatlearn_vocab_parallel_embedding_size_mismatch",
    "docs_megatron_bridge_container_mcore_conflict_tensor_parallel",
    "docs_megatron_bridge_cpu_offloading_with_pipeline_parallel",
    "docs_megatron_bridge_deepep_timeout_dispatch_cpu_dsv3_h100",
    "docs_megatron_bridge_full_recompute_te_scoped_cuda_graph",
    "docs_megatron_bridge_gated_repo_hf_token",
    "docs_megatron_bridge_nemo_home_not_shared_multinode_sft",
    "docs_megatron_bridge_nemotron3_omni_flashinfer_cubin_mismatch",
    "docs_megatron_bridge_verl_ray_worker_pythonpath",
    "docs_megatron_lm_common_pile_py39_union_typeerror",
    "docs_mindspeed_faq_data_helpers_overflow",
    "docs_mindspeed_faq_megatron070_grad_norm_nan_append_eod",
    "docs_mindspeed_gloo_connectfullmesh_failed_large_cluster",
    "docs_mindspeed_llm_faq_alpaca_text_document_not_exists",
    "docs_mindspeed_llm_faq_ckpt_convert_layers_divisible_pp",
    "docs_mindspeed_llm_faq_invalid_device_id_nproc_per_node",
    "docs_mindspeed_llm_mla_fa_without_pad_shape_mismatch",
    "docs_mindspeed_mm_libatb_not_found_nnal_order",
    "docs_mindspeed_mm_llm_pp_zero_layer_learning_rate_none",
    "docs_mindspeed_mm_tp_size_exceeds_num_kv_heads",
    "docs_mindspeed_rl_libgomp_static_tls_data_preprocess",
    "docs_mindspeed_rl_swanlab_watch_text_typeerror",
    "docs_mindspeed_type_not_subscriptable_old_python",
    "docs_ms_swift_megatron_gradient_accumulation_fusion_apex",
    "docs_nemo_rl_fp8_block_scaled_gemm_requires_cuda_12_9",
    "docs_nemo_rl_missing_megatron_submodule",
    "docs_nemo_rl_qwen_token_id_out_of_vocabulary",
    "docs_nemo_rl_vllm014_prefix_caching_nan_logprobs",
    "docs_pai_megatron_patch_qwen3_next_nccl_unhandled_cuda_error",
    "docs_rlinf_torch_memory_saver_curesult_2",
    "docs_slime_gb10_ptxas_sm121a_not_defined",
    "docs_slime_sglang_get_model_info_port_conflict",
    "docs_slime_sglang_illegal_memory_access_mem_fraction",
    "docs_verl_faq_ray_unable_to_register_worker_raylet",
    "docs_verl_faq_tensordict_arm64_membership_check",
    "docs_verl_faq_triton_compile_module_from_src",
    "docs_verl_npu_faq_megatron_ckpt_nonshared_storage",
    "docs_verl_npu_faq_mindspeed_q_layernorm_keyerror",
    "docs_verl_npu_faq_torch_npu_device_not_visible",
    "docs_verl_npu_faq_weight_too_large_for_bucket",
    "docs_verl_vllm08_forkingpickler_tensordict",
    "docs_vllm_ascend_aclgraph_stream_resources_insufficient",
    "docs_vllm_ascend_glm5_tokenizers_backend_missing",
    "docs_vllm_ascend_mla_graph_mode_numheads_not_supported",
    "easyr1_207_prompt_length_exceeds_max_model_len",
    "easyr1_427_log_probs_indexerror",
    "foldagent_13_train_batch_size_less_than_ppo_mini_batch",
    "l1_21_launch_reward_fn_async_not_in_struct",
    "llamafactory_10108_neat_packing_context_parallel_alignment",
    "llamafactory_10505_mca_trainingargs_no_enable_torch_profiler",
    "llamafactory_9382_megatron_yaml_without_use_mca",
    "mbridge_10_qwen25_critic_load_weights_valueerror",
    "mbridge_155_modeltype_encoder_and_decoder_removed",
    "mbridge_158_cp_short_sequence_preprocess",
    "mbridge_42_qwen3_vl_moe_context_parallel_unsupported",
    "mbridge_pr126_qwen2_5_vl_rope_scaling_build_config",
    "mbridge_pr41_memory_efficient_save_single_safetensors",
    "mcore_bridge_pr175_max_seqlen_int_item",
    "megatron_bridge_1148_requires_unreleased_transformer_engine",
    "megatron_bridge_1210_qwen3_moe_checkpoint_conversion",
    "megatron_bridge_1292_packed_seq_cp_gt1_finetune",
    "megatron_bridge_1352_contrib_docker_missing_omegaconf",
    "megatron_bridge_1423_gpt_oss_distillation_export",
    "megatron_bridge_1502_dsv3_vpp_conflicts_with_pp_layout",
    "megatron_bridge_1513_export_share_embeddings_attr",
    "megatron_bridge_1560_from_hf_config_to_megatron_provider",
    "megatron_bridge_1631_qwen3vl_pp_input_ids",
    "megatron_bridge_1697_lora_eval_microbatches",
    "megatron_bridge_1819_gpt_oss_20b_export_failure",
    "megatron_bridge_1880_custom_pipeline_layout_reload",
    "megatron_bridge_1996_export_hf_weights_too_many_values",
    "megatron_bridge_2424_custom_pp_layout_export",
    "megatron_bridge_2655_export_flex_dispatcher_tpxep_assert",
    "megatron_bridge_2701_qwen35_dense_vision_unpack_version",
    "megatron_bridge_2746_qwen35_vl_etp_gate_up_shape",
    "megatron_bridge_3001_qwen35_moe_gate_up_shape_tp2_pp4",
    "megatron_bridge_3991_get_batch_cp_is_hybrid_cp_mlm_dev",
    "megatron_bridge_4077_ernie_moe_is_mtp_layer_kwarg",
    "megatron_bridge_4799_cpu_offloading_nothing_selected",
    "megatron_bridge_5239_eval_partial_global_batch",
    "megatron_bridge_546_etp_defaults_to_tp",
    "megatron_bridge_5954_energon_packing_mtp",
    "megatron_bridge_650_nemotronh_tp_comm_overlap_cuda_multicast",
    "megatron_bridge_694_nemo_2507_image_examples_import_fail",
    "megatron_bridge_919_save_hf_weights_tied_embeddings_shared_memory",
    "megatron_bridge_pr1336_gpt_oss_sequence_parallelism_kwarg",
    "megatron_bridge_pr2799_mtp_embedding_multiple_pp_ranks",
    "megatron_bridge_pr3187_lora_main_grad_l2_norm_logging",
    "megatron_bridge_pr409_comm_overlap_asdict_typeerror",
    "megatron_bridge_pr4261_mtp_input_ids_none_vpp",
    "megatron_bridge_pr4306_dsv4_export_pipeline_layout_lost",
    "megatron_bridge_pr4615_modelopt_te_grouped_linear_bool_len",
    "megatron_bridge_pr5740_flex_backend_null_invalid_backend",
    "megatron_bridge_pr5893_vp12_indivisible_layers_per_stage",
    "megatron_bridge_pr6002_vpp_layout_single_iterator",
    "megatron_bridge_pr6054_qwen3_235b_ep_pp_world_size",
    "megatron_bridge_pr6083_deepseek_v3_vr200_expert_grid_pp",
    "megatron_lm_1038_tp1_simple_loop_index_assert",
    "megatron_lm_1122_ngc_te_cudarngstatestracker_attr",
    "megatron_lm_112_parameter_has_no_main_grad",
    "megatron_lm_1220_multimodal_pp_rotary_nonetype",
    "megatron_lm_1658_rmsnorm_fused_layernorm_assert",
    "megatron_lm_1877_alltoall_dispatcher_view_empty_output",
    "megatron_lm_1882_te_fused_attn_cudnn_error_arbitrary_seqlen",
    "megatron_lm_1971_expert_bias_requires_sigmoid_router",
    "megatron_lm_2297_cannot_set_grad_twice_overlap_grad_reduce",
    "megatron_lm_2459_tp1_mock_vocab_out_of_range",
    "megatron_lm_296_tp_mismatch_with_checkpoint",
    "megatron_lm_3240_target_tp4_checkpoint_conversion",
    "megatron_lm_3643_mtp_packing_full_recompute",
    "megatron_lm_5323_gemma4_recompute_full",
    "megatron_lm_545_distopt_bucket_buffer_not_divisible",
    "megatron_lm_558_overlap_grad_reduce_distrib_optimizer",
    "megatron_lm_5643_dsv4_cp_sft_runtime_error",
    "megatron_lm_5755_gqa_heads_not_divisible_by_query_groups",
    "megatron_lm_5890_qwen35vl_vision_rope_max_seqlen",
    "megatron_lm_743_sequence_parallel_seq_len_mismatch",
    "megatron_lm_792_distopt_odd_dp_nccl_error",
    "megatron_lm_881_pp_example_index_out_of_bounds",
    "megatron_lm_pr1529_mtp_layer_tp_only_amax_red",
    "megatron_lm_pr3562_uniform_recompute_indexerror",
    "megatron_lm_pr4450_sft_tokenizer_transformers_v5_encoding",
    "megatron_lm_pr6286_layerwise_distopt_grad_reduce_handle_assert",
    "megatron_lm_pr7099_lr_decay_steps_zero_global_batch",
    "megatron_lm_pr7318_moe_main_grad_missing_te_precision_egtp",
    "megatron_lm_pr759_fused_kernels_import_checkpoint_convert",
    "megatron_lm_pr996_te_version_check_get_cpu_offload_context",
    "mindspeed_llm_7_hcclopmodesetfeature_importerror",
    "ms_swift_10073_megatron_gkd_teacher_api_context_parallel_token_mismatch",
    "ms_swift_3272_npu_grpo_vllm_segfault_atb_cache",
    "ms_swift_6195_cached_dataset_context_parallel_unsupported",
    "ms_swift_7085_mindspeed_lora_main_grad_missing",
    "ms_swift_9410_qwen35_mindspeed016_megatron_rlhf_assertionerror",
    "ms_swift_9621_npu_causal_conv1d_coredim_exceeds_65535_long_context",
    "ms_swift_pr1804_pai_megatron_patch_path_unbound",
    "ms_swift_pr7036_npu_weight_sync_hccl_tensor_on_cpu",
    "ms_swift_pr7158_vpp_mcore015_vp_stage_kwarg",
    "ms_swift_pr9790_mindspeed_lora_grad_accum_fusion_main_grad_none",
    "ms_swift_pr9814_npu_cp_gdn_tensor_a2a_importerror",
    "nemo_12828_deepseek_v2_recipe_world_size",
    "nemo_14288_vpp_microbatch_group_range",
    "nemo_14861_gemma3_recompute_full_rope",
    "nemo_rl_1102_megatron_to_hf_conversion_failed",
    "nemo_rl_1182_world_size_too_small_for_tp8_pp4",
    "nemo_rl_1228_llama31_provider_pipeline_split_rank",
    "nemo_rl_1525_nemotron_h_sequence_parallel_unsupported",
    "nemo_rl_2618_flashinfer_cutlass_moe_refit_shard_dim",
    "nemo_rl_355_dpo_val_ref_logprob_microbatch",
    "nemo_rl_801_converter_no_module_nemo_missing_mcore_extra",
    "nemo_rl_pr1075_moe_tp_ep_requires_sequence_parallel",
    "nemo_rl_pr2182_seq_packing_pad_multiple_expanded_size",
    "nemo_rl_pr3150_nanov3_megatron_generation_world_size",
    "nemo_rl_pr3566_te218_modelopt_grouped_linear_bool_len",
    "openrlhf_1193_vllm016_async_collective_rpc_needs_0_9_5",
    "openrlhf_pr728_vllm_engines_exceed_actor_gpus_hybrid_engine",
    "pai_megatron_patch_183_mistral_pp2_attention_mask_none",
    "pai_megatron_patch_332_first_dim_not_divisible_by_tp",
    "pai_megatron_patch_413_sft_packing_micro_batch_gt1",
    "pai_megatron_patch_719_qwen3_vpp_model_provider_vp_stage",
    "pai_megatron_patch_pr222_mg2hf_extra_state_none",
    "pettingllms_8_optim_optimizer_not_in_struct",
    "ragen_22_critic_ppo_micro_batch_size_zero_division",
    "rllm_197_ray_init_not_in_struct",
    "simplerl_reason_58_context_len_assert",
    "slime_10_device_lt_num_gpus_internal_assert_rollout",
    "slime_1221_distrib_optimizer_save_shape_assert",
    "slime_1585_megatron_training_module_missing_pip_mcore",
    "slime_1619_apex_fused_wgrad_missing_convert",
    "slime_1730_qwen35_hf_validate_args_tie_word_embeddings",
    "slime_1786_glm5_offload_train_tms_pause_invalid_argument",
    "slime_1845_ray_oom_checkpoint_save_host_memory",
    "slime_1886_colocate_offload_ckpt_save_invalid_argument",
    "slime_1893_ckpt_save_segfault_cudamemcpyasync_colocate_offload",
    "slime_1896_rollout_num_gpus_overallocated_colocate",
    "slime_1936_disable_weights_backuper_tms_ld_preload",
    "slime_1951_retool_logprob_oom_microbatch_over_max_tokens",
    "slime_288_docker_megatron_training_not_on_pythonpath",
    "slime_pr1290_megatron_bridge_vlm_mtp_kwargs",
    "slime_pr1690_torch_memory_saver_pause_invalid_argument_after_save",
    "slime_pr1702_qwen35_mtp_bridge_keyerror_gated_attention",
    "slime_pr1999_bridge_ignores_no_grad_accum_fusion_cublas",
    "slime_pr249_debug_rollout_only_dp_group_not_initialized",
    "slime_pr253_qwen3_32b_missing_untie_embeddings_flag",
    "swanlab_docs_pr170_val_generations_to_log_not_in_struct",
    "tinyzero_47_equal_chunk_batch_not_multiple_of_gpus",
    "transformer_engine_941_rmsnorm_bwd_map_base_at_pipeline",
    "transformer_engine_pr1031_cp_noncausal_missing_rng_states_segfault",
    "ttrl_24_reward_kwargs_not_in_struct",
    "twinkle_pr102_npu_grpo_weight_sync_hccl_resource_exhaustion",
    "verl_1015_prompt_longer_than_vllm_max_model_len",
    "verl_1108_dapo_num_gen_batches_ge_max_num_gen_batches",
    "verl_1293_prime_reward_manager_pickle_local_wrapped_fn",
    "verl_1305_qwen3_rmpad_unsupported_old_verl",
    "verl_1368_sglang_0_4_5_qwen3_rollout",
    "verl_1412_trust_remote_code_not_passed_to_rollout",
    "verl_1431_sglang_curesult_oom_gpu_memory_utilization",
    "verl_145_seq_balance_missing_micro_batch_typeerror",
    "verl_154_version_file_not_found",
    "verl_1565_fused_kernels_single_gpu_setstorage",
    "verl_158_slurm_ray_illegal_memory_access_env_before_ray_start",
    "verl_1703_fsdp2_save_checkpoint_error",
    "verl_1746_megatron_vllm_rollout_ray_error",
    "verl_1785_rollout_world_size_1_not_divisible_infer_tp_2",
    "verl_1873_max_position_embeddings_lt_prompt_plus_response",
    "verl_1915_dist_checkpointing_save_in_megatron_ckpt_manager",
    "verl_1929_async_server_actor_rollout_ref_not_in_struct",
    "verl_2152_npu_grpo_unpickle_exception",
    "verl_2197_megatron_qwen3_235b_nccl_timeout",
    "verl_2198_qwen25vl_lora_rollout_sharding_error",
    "verl_2380_ray_task_receiver_objects_valid_check_failed",
    "verl_2415_grpo_qwen3_8b_triton_compilation_error",
    "verl_2589_sglang_version_mismatch_multiturn",
    "verl_2597_megatron_dist_ckpt_load_crash",
    "verl_2863_dapo_async_vllm_rollout_error",
    "verl_2921_sglang_weight_sync_module_missing",
    "verl_2944_sglang_agent_loop_triton_0_active_drivers",
    "verl_2950_dapo_lora_host_memory_oom",
    "verl_302_vllm_wake_up_oom_gpu_memory_utilization",
    "verl_3043_qwen3moe_arch_not_supported_megatron",
    "verl_306_cuda_invalid_device_ordinal_vllm071",
    "verl_3150_prime_reward_manager_custom_fn_pickle",
    "verl_3240_qwen3_235b_mbridge_update_actor",
    "verl_3271_lora_vllm_v1_wake_up_failed",
    "verl_3316_npu_dapo_tbe_process_lookup_error_no_ray_shutdown",
    "verl_331_main_generation_actor_not_in_struct",
    "verl_3358_multinode_ray_init_local_cluster_gpus_16_lt_32",
    "verl_3412_mindspeed_npu_args_not_initialized",
    "verl_3431_npu_mindspeed_args_not_initialized",
    "verl_3593_mbridge_skips_deepseek_mla_patch",
    "verl_3730_fused_kernels_pp2_megatron_compute_log_prob",
    "verl_3787_rollout_is_quantile_tensor_too_large",
    "verl_3808_qwen25vl_megatron_compute_log_prob_typeerror",
    "verl_3842_fully_async_vllm_v1_engine_utils_missing",
    "verl_3873_megatron_sglang_nccl_timeout_second_rollout",
    "verl_3943_qwen3_vl_moe_mbridge_context_parallel",
    "verl_3947_npu_multinode_hccl_init_error",
    "verl_3992_mindspeed_moe_group_type_update_actor",
    "verl_4027_vllm_version_error_npu_multiturn",
    "verl_4057_vllm_scheduler_stats_assert",
    "verl_4152_balance_batch_megatron",
    "verl_4202_vllm084_missing_process_weights_after_loading",
    "verl_4262_rollout_n_could_not_override_key_n_not_in_struct",
    "verl_4308_async_rollout_nonetype_result",
    "verl_4413_vllm_dp_ep_npu",
    "verl_4424_hf_rollout_mode_sync_not_found",
    "verl_4495_rollout_mode_sync_removed_valueerror",
    "verl_4503_vllm_symm_mem_rendezvous_tp2",
    "verl_4651_one_step_off_npu_nccl_not_available",
    "verl_4656_cp_padding_short_sequences",
    "verl_4672_enable_activation_offloading_not_in_hfmodelconfig",
    "verl_4763_qwen3vl_rotary_packed_seq_params",
    "verl_4815_npu_mbridge_with_vpp_indexerror",
    "verl_491_multinode_training_error",
    "verl_5007_transformers5_autovision2seq_import",
    "verl_5008_megatron_async_rollout_no_running_event_loop",
    "verl_5074_npu_a2_hccl_init_error_code_5",
    "verl_5087_executemodelrequest_importerror",
    "verl_539_total_available_gpus_zero_after_validation",
    "verl_544_sequence_length_exceeds_max_prompt_length",
    "verl_5474_sglang_fully_async_rollouter_import_failure",
    "verl_5656_qwen3_5_mbridge_shape_mismatch",
    "verl_5788_qwen25vl_npu_patch_rmsnorm_attr",
    "verl_5821_train_batch_size_lt_ppo_mini_batch_size",
    "verl_5957_npu_ulysses_sp_position_ids_not_contiguous",
    "verl_5959_vllm013_disable_mm_preprocessor_cache_removed",
    "verl_6028_sglang_pin_continue_generation_import",
    "verl_6172_fp8_blackwell_compute_log_prob_runtimeerror",
    "verl_6224_vllm_ascend_applyrotaryemb_rollout",
    "verl_6256_qwen3moe_megatron_bridge_lora_vllm_keyerror_embed_tokens",
    "verl_6458_ci_vllm018_cann_shm_broadcast_hang",
    "verl_6528_qwen35_9b_megatron_mindspeed_npu",
    "verl_6608_npu_vllm_tp2_hccl_all_reduce",
    "verl_6613_gemma4_megatron_train_batch_error",
    "verl_6627_mbridge_unregistered_qwen3_5_moe",
    "verl_6642_qwen3vl_lora_vllm_worker_died",
    "verl_668_stuck_loading_7b_checkpoint",
    "verl_673_input_prompt_too_long_max_model_len_hardcoded",
    "verl_6764_ascend_vllm_engine_kv_cache_init_failure",
    "verl_6771_agent_loop_manager_init_runtime_error",
    "verl_6773_npu_smi_board_id_calledprocesserror",
    "verl_6894_fsdp2_grpo_npu_acl_stream_sync_507035",
    "verl_696_ray_job_upload_too_large_working_dir",
    "verl_700_tensordict_forkingpickler_torch26",
    "verl_705_sglang_rollout_pt_checkpoint_scheduler_crash",
    "verl_7071_docker_image_missing_megatron_bridge",
    "verl_716_quickstart_ppo_gsm8k_error",
    "verl_719_pthread_create_user_process_limit",
    "verl_7295_max_ckpt_to_keep_not_in_struct",
    "verl_7416_fully_async_hccl_checkpoint_broadcast_fails",
    "verl_7624_chunked_prefill_false_vllm024_validationerror",
    "verl_771_sequence_length_larger_than_max_length_agent_r1",
    "verl_77_raytaskerror_qwen2_7b_rm",
    "verl_904_triton_0_active_drivers_after_deepspeed",
    "verl_949_grpo_cant_start_new_thread",
    "verl_995_enforce_eager_with_free_cache_engine",
    "verl_omni_pr189_qwen3_omni_npu_config_no_text_config",
    "verl_omni_pr227_ray_noset_ascend_visible_devices",
    "verl_pr1467_megatron_ep_compute_log_prob",
    "verl_pr1598_prime_reward_model_fused_kernels_squeeze",
    "verl_pr1763_npu_gsm8k_parquet_not_prepared",
    "verl_pr1776_arm64_tensordict_012_membership_check",
    "verl_pr1944_mla_config_rotary_type_typo",
    "verl_pr1990_mla_config_override_multiple_values",
    "verl_pr1996_dsv3_megatron_duplicate_moe_override_kwargs",
    "verl_pr259_max_num_batched_tokens_lt_max_model_len",
    "verl_pr2905_missing_rollout_name_mandatory_value",
    "verl_pr3068_fsdp_engine_config_mixed_precision_hydra",
    "verl_pr332_npu_hccl_init_error_code_7",
    "verl_pr4168_one_step_off_rollout_megatron_world_size",
    "verl_pr4777_engine_param_offload_state_dict",
    "verl_pr4799_fsdp_save_ckpt_after_validation_model_on_cpu",
    "verl_pr4910_plus_enable_activation_offload_already_in_config",
    "verl_pr4973_r2_rollout_routing_replay_union_assert",
    "verl_pr4986_router_replay_alltoall_split_mismatch",
    "verl_pr5381_qwen3_5_27b_megatron_compute_log_prob",
    "verl_pr570_prime_illegal_memory_access_xformers",
    "verl_pr6212_qwen35_ulysses_sp_tensors_not_contiguous",
    "verl_pr6674_npu_mindspeed_repatch_batch_invariant",
    "verl_pr6927_mcore018_modeltype_encoder_and_decoder",
    "verl_pr7169_transformers54_flash_attn_import",
    "verl_pr7959_acl_graph_notify_exhaustion_cudagraph_mode",
    "verl_pr820_plus_val_before_train_could_not_append",
    "verl_pr960_vllm_cpu_swap_space",
    "vime_433_mindspeed_cp_strategy_unsupported",
    "vllm_ascend_1093_trl_grpo_import_pyhccl_module_missing",
    "vllm_ascend_116_copy_d2d_507001_expandable_segments",
    "vllm_ascend_1396_rollout_tp_cpu_group_assert",
    "vllm_ascend_14628_free_memory_less_than_gpu_mem_util",
    "vllm_ascend_14628_tp_exceeds_visible_npus",
    "vllm_ascend_1845_verl_lora_rollout_inplacecopy_cannot_broadcast",
    "vllm_ascend_198_tbe_subprocess_tp2",
    "vllm_ascend_3162_server_mode_grpo_hccl_transport_init_error",
    "vllm_ascend_3255_trl_vllm_serve_init_communicator_device_none",
    "vllm_ascend_379_swift_grpo_vllm_rollout_torch_npu_missing_rotary_op",
    "vllm_ascend_397_open_r1_grpo_deepspeed_hccl_init_error_code_2",
    "vllm_ascend_439_no_cxx_compiler_install",
    "vllm_ascend_556_sleep_mode_camem_allocator_not_available",
    "vllm_ascend_6370_x86_image_zeros_like_json_missing",
    "vllm_ascend_6676_socversion_mismatch_310p",
    "vllm_ascend_7360_qwen35_27b_tp8_causalconv1d_runtimeerror",
    "vllm_ascend_761_qwen3_235b_tp5",
    "vllm_ascend_809_qwen25vl_grpo_shape_invalid",
    "vllm_ascend_pr5287_hccl_buffsize_too_small_moe_dispatch",
    # round 21 (verl's Ascend and recipe threads; vllm-ascend, Megatron-Bridge, Megatron-LM)
    "verl_2012_npu_grpo_tbe_subprocess",
    "verl_2201_npu_activation_offload",
    "verl_2780_qwen25vl_flash_attn_top_left_mask",
    "verl_383_actor_died_log_prob_micro_batch",
    "verl_3992_mindspeed_group_type_dapo_npu",
    "verl_410_vllm_v1_spmd_mode",
    "verl_4357_prime_recipe_init_app_state_typeerror",
    "verl_5188_dapo_npu_recipe_regression",
    "verl_6412_npu_resume_kv_cache_oom",
    "verl_6770_npu_train_batch_size_memory",
    "verl_682_megatron_save_checkpoint_args",
    "verl_7550_npu_qwen35_resume_kv_cache",
    "megatron_bridge_4413_gemma4_dense_conversion_nonetype_megatron_module",
    "megatron_lm_1509_oom_when_loading_optimizer_state",
    "vllm_ascend_109_grpo_colocated_vllm_memory_profiling_assert",
    "vllm_ascend_1458_aclgraph_does_not_support_deepseek_enforce_eager",
    "vllm_ascend_167_multinode_ray_set_visible_device_failed",
    "vllm_ascend_1987_glm4_32b_tp2_npu_oom",
    "vllm_ascend_2712_310p_pipeline_parallel_hccl_init_error",
    "vllm_ascend_340_torch_npu_missing_npu_flash_attention",
    "vllm_ascend_5020_qwen3_next_npu_oom_gpu_memory_utilization",
    "vllm_ascend_540_failed_to_infer_device_type_old_torch_npu",
    "vllm_ascend_707_no_module_vllm_benchmarks_serve",
})


TEXT = {
    "en": {
        "title": "# The doctor on real failures",
        "intro": ("Each row is a failure posted in a public thread (verl, Megatron-LM, Megatron-Bridge, mbridge, "
                  "ms-swift, slime, NeMo, vllm-ascend) or page (a blog; the FAQ pages of verl, MindSpeed and "
                  "MindSpeed-LLM), kept in `tests/fixtures/failures/<folder>/` with the log as "
                  "posted, the launch where shown, and the cause and fix as the thread establishes them. The doctor "
                  "reads the log (and replays the launch where there is one). *named* is the thread's key among the "
                  "doctor's causes; *none blamed* is a failure with no key at fault for which the doctor blamed "
                  "no launch key (where the environment is at fault, it may name the variable instead). Generated by "
                  "`python tools/doctor_corpus.py`; a test fails when this page drifts."),
        "held": ("Of these, the {n} marked † were gathered last, from threads the doctor had not seen: "
                 "{hits} of {faults} with a key at fault get it named, {fixed} with a fix; {clean} of {nofault} with "
                 "no key at fault blame none."),
        "head": "| folder | thread | exception | thread's cause | at fault (thread) | doctor | result |",
        "summary": ("**{hits} of {faults}** established failures with a key at fault get it named ({rate}), "
                    "{fixed} of them with a fix (a line to paste, or the argument to delete where the thread sets no "
                    "value); "
                    "**{clean} of {nofault}** established failures with no key at fault blame none; "
                    "{crashes} logs made the doctor fail. Over all {total} logs: exit 0 (a cause) {zero}, exit 1 "
                    "(not placed) {one}, exit 2 (no exception in the excerpt) {two}."),
        "results": {"named": "named", "missed": "missed", "none blamed": "none blamed", "blamed": "blamed",
                    "-": "-"},
    },
    "zh": {
        "title": "# doctor 在真实失败上的表现",
        "intro": ("每一行是公开讨论串（verl、Megatron-LM、Megatron-Bridge、mbridge、ms-swift、slime、NeMo、"
                  "vllm-ascend）或页面（一篇博客；verl、MindSpeed 和 MindSpeed-LLM 的 FAQ 页面）中贴出的一次失败，"
                  "保存在 `tests/fixtures/failures/<folder>/`：原样的日志、讨论中给出的"
                  "启动命令，以及讨论确立的原因与修复。doctor 读取日志（有启动命令时会重放）。*已指出* 表示讨论中的"
                  "键在 doctor 给出的原因之中；*未归咎* 表示没有键出错的失败，doctor 也没有归咎任何启动参数"
                  "（环境出错时，它可以指出出错的环境变量）。"
                  "由 `python tools/doctor_corpus.py` 生成；本页与结果不一致时测试失败。"),
        "held": ("其中标 † 的 {n} 个是最后收集的，来自 doctor 未见过的讨论串：有键出错的 {faults} 个中 {hits} 个"
                 "被指出，{fixed} 个带有修复；没有键出错的 {nofault} 个中 {clean} 个没有归咎任何键。"),
        "head": "| 目录 | 讨论串 | 异常 | 讨论确立的原因 | 出错的键（讨论） | doctor | 结果 |",
        "summary": ("在原因已确立、且有键出错的失败中，**{hits} / {faults}** 被指出了该键（{rate}），其中 {fixed} 个"
                    "带有修复（可粘贴的一行，或在讨论未给出取值时要删除的参数）；"
                    "在原因已确立、且没有键出错的失败中，**{clean} / {nofault}** 没有归咎任何键；"
                    "有 {crashes} 个日志使 doctor 失败。全部 {total} 个日志中：退出码 0（找到原因）{zero} 个，"
                    "退出码 1（未定位）{one} 个，退出码 2（摘录中没有异常）{two} 个。"),
        "results": {"named": "已指出", "missed": "未指出", "none blamed": "未归咎", "blamed": "误归咎",
                    "-": "-"},
    },
}


@dataclass(frozen=True)
class Row:
    folder: str
    meta: dict
    exit_code: int
    named: tuple[str, ...]
    result: str
    fixed: bool = False
    """The cause naming the thread's key comes with a fix: a line, or the argument to delete where the thread's own
    fix sets no value (a deletion loses the value a thread's ``key=value`` keeps)."""


#: The sections of verl's config: a thread's key under one is a whole verl path, matched whole (an actor key named
#: for a rollout failure is not the thread's key); other projects' flags are matched by their last name.
_VERL = ("actor_rollout_ref.", "critic.", "data.", "trainer.", "algorithm.", "reward_model.", "reward.")


#: An environment variable: what a failure of the environment (category ``env``) may be named as, without blaming
#: a launch key; on any other row it is a blame like a key.
_ENV_VAR = re.compile(r"[A-Z][A-Z0-9_]+")


def _leaf(key: str) -> str:
    if key.startswith(_VERL):
        return key
    return key.lstrip("-").replace("-", "_").rsplit(".", 1)[-1]


@lru_cache(maxsize=1)
def rows() -> tuple[Row, ...]:
    from verl_mindspeed.doctor import diagnose
    from verl_mindspeed.launch import read_launch_file

    out = []
    for folder in sorted(p for p in FAILURES.iterdir() if p.is_dir()):
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        text = (folder / "log.txt").read_text(encoding="utf-8", errors="replace")
        source = None
        if (folder / "launch.sh").is_file():
            try:
                source = read_launch_file(str(folder / "launch.sh"), {"HOME": "/home/user"})
            except Exception:  # noqa: BLE001 - a launch excerpt without its python -m line: the log alone
                source = None
        try:
            found = diagnose(text, source.argv if source else None, source)
            code, named = found.exit_code, tuple(c.key for c in found.causes)
            keeps = {_leaf(a[k]) for a in meta["at_fault"] for k in ("key", "verl") if a.get(k) and a.get("fix")}
            # a deletion fixes a key the thread gives no value for; where the thread's fix keeps a value, it loses it
            forms = lambda key: {_leaf(key), _leaf(key).rsplit(".", 1)[-1]}  # noqa: E731
            with_fix = {name for c in found.causes if c.fix or (c.delete and not forms(c.key) & keeps)
                        for name in forms(c.key)}
        except Exception:  # noqa: BLE001 - counted, never hidden
            code, named, with_fix = -1, (), set()
        want = {_leaf(a[k]) for a in meta["at_fault"] for k in ("key", "verl") if a.get(k)}
        got = {_leaf(k) for k in named} | {_leaf(k).rsplit(".", 1)[-1] for k in named}  # whole, and by last name
        if code == -1:
            result = "crash"
        elif want:
            result = "named" if want & got else "missed"
        elif meta["category"] in NO_FAULT:  # an environment's failure may name the variable it is instead
            excused = (lambda k: bool(_ENV_VAR.fullmatch(k))) if meta["category"] == "env" else (lambda k: False)
            result = "blamed" if any(not excused(k) for k in named) else "none blamed"
        else:
            result = "-"
        out.append(Row(folder.name, meta, code, named, result, bool(want & with_fix)))
    return tuple(out)


def summary(only: frozenset[str] | None = None) -> dict:
    """The page's figures, over every row or over the folders ``only`` names."""
    est = [r for r in rows() if r.meta["established"] and (only is None or r.folder in only)]
    faults = [r for r in est if r.meta["at_fault"]]
    nofault = [r for r in est if not r.meta["at_fault"] and r.meta["category"] in NO_FAULT]
    hits = sum(r.result == "named" for r in faults)
    return {"hits": hits, "faults": len(faults), "rate": f"{100 * hits / max(1, len(faults)):.0f}%",
            "fixed": sum(r.result == "named" and r.fixed for r in faults),
            "clean": sum(r.result == "none blamed" for r in nofault), "nofault": len(nofault),
            "crashes": sum(r.result == "crash" for r in rows()), "total": len(rows()),
            "zero": sum(r.exit_code == 0 for r in rows()), "one": sum(r.exit_code == 1 for r in rows()),
            "two": sum(r.exit_code == 2 for r in rows())}


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def page(lang: str) -> str:
    text = TEXT[lang]
    lines = [text["title"], "", text["intro"], "", text["summary"].format(**summary()), "",
             text["held"].format(n=len(HELD_OUT), **summary(HELD_OUT)), "", text["head"],
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows():
        thread = r.meta["source"] + ("" if r.meta["established"] else " *") + (" †" if r.folder in HELD_OUT else "")
        fault = ", ".join(f"`{a['key']}`" for a in r.meta["at_fault"]) or "-"
        named = ", ".join(f"`{k}`" for k in r.named) or "-"
        lines.append(f"| `{r.folder}` | {_cell(thread)} | {_cell(r.meta['exception'])[:120]} | "
                     f"{_cell(r.meta['category'])} | {fault} | {named} (exit {r.exit_code}) | "
                     f"{text['results'].get(r.result, r.result)} |")
    lines += ["", "`*`: " + ("the thread does not establish the cause." if lang == "en" else "讨论串未确立原因。"), ""]
    return "\n".join(lines)


def main() -> int:
    from _pages import main as pages_main

    code = pages_main(__doc__, PAGES, page, "tools/doctor_corpus.py")
    print(summary())
    return code


if __name__ == "__main__":
    sys.exit(main())
