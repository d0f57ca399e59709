"""Every cross-field rule: a failing case with its exact message and a passing case, on verl's real tree."""

from __future__ import annotations

import pytest
from pytest import param

from verl_mindspeed.rules import RULES

M = "actor_rollout_ref.actor.megatron."
O = M + "override_transformer_config."
WORLD16 = {"trainer.n_gpus_per_node": 16}

# rule id -> (failing settings, severity, key, exact message, passing settings)
CASES = {
    "sp-requires-tp": (
        {O + "sequence_parallel": True}, "error", O + "sequence_parallel",
        "sequence_parallel=True requires tensor_model_parallel_size > 1 (got 1)",
        {O + "sequence_parallel": True, M + "tensor_model_parallel_size": 2},
    ),
    "ep-tp-requires-sp": (
        {M + "expert_model_parallel_size": 2, M + "tensor_model_parallel_size": 2, O + "sequence_parallel": False},
        "error", O + "sequence_parallel",
        "expert_model_parallel_size=2 with tensor_model_parallel_size=2 requires sequence_parallel=True",
        {M + "expert_model_parallel_size": 2, M + "tensor_model_parallel_size": 2},
    ),
    "cp-sizes-agree": (
        {M + "context_parallel_size": 2, O + "context_parallel_size": 4}, "error", O + "context_parallel_size",
        "override_transformer_config.context_parallel_size=4 and megatron.context_parallel_size=2 must be equal",
        {M + "context_parallel_size": 2, O + "context_parallel_size": 2},
    ),
    "model-parallel-divides-world": (
        {M + "tensor_model_parallel_size": 4, M + "pipeline_model_parallel_size": 3}, "error",
        M + "tensor_model_parallel_size",
        "tensor_model_parallel_size x pipeline_model_parallel_size x context_parallel_size = 4 x 3 x 1 = 12 must "
        "divide the device count trainer.nnodes x trainer.n_gpus_per_node = 8",
        {M + "tensor_model_parallel_size": 4, M + "pipeline_model_parallel_size": 2},
    ),
    "expert-parallel-divides-world": (
        {M + "expert_model_parallel_size": 16}, "error", M + "expert_model_parallel_size",
        "expert_tensor_parallel_size x expert_model_parallel_size x pipeline_model_parallel_size = 1 x 16 x 1 = 16 "
        "must divide the device count 8",
        {M + "expert_model_parallel_size": 8},
    ),
    "mbridge-vpp": (
        {M + "pipeline_model_parallel_size": 2, M + "virtual_pipeline_model_parallel_size": 2}, "error",
        M + "virtual_pipeline_model_parallel_size",
        "use_mbridge=True and virtual_pipeline_model_parallel_size=2 cannot be combined on NPU",
        {M + "pipeline_model_parallel_size": 2, M + "virtual_pipeline_model_parallel_size": 2, M + "use_mbridge": False},
    ),
    "vpp-requires-pp": (
        {M + "virtual_pipeline_model_parallel_size": 2, M + "use_mbridge": False}, "error",
        M + "virtual_pipeline_model_parallel_size",
        "virtual_pipeline_model_parallel_size=2 requires pipeline_model_parallel_size > 1",
        {M + "virtual_pipeline_model_parallel_size": None},
    ),
    "swap-optimizer-requires-distributed-optimizer": (
        {O + "swap_optimizer": True, M + "use_distributed_optimizer": False}, "error", M + "use_distributed_optimizer",
        "swap_optimizer=True requires megatron.use_distributed_optimizer=True",
        {O + "swap_optimizer": True},
    ),
    "swap-optimizer-conflicts": (
        {O + "swap_optimizer": True, O + "reuse_fp32_param": True}, "error", O + "reuse_fp32_param",
        "swap_optimizer=True and reuse_fp32_param=True cannot be combined",
        {O + "reuse_fp32_param": True},
    ),
    "noop-layers-in-range": (
        {O + "noop_layers": "0,28", O + "num_layers": 28}, "error", O + "noop_layers",
        "noop_layers='0,28' requires every index in [0, num_layers=28); out of range: 28",
        {O + "noop_layers": "0,27", O + "num_layers": 28},
    ),
    "recompute-full": (
        {O + "recompute_granularity": "full", O + "recompute_num_layers": 1}, "error", O + "recompute_method",
        "recompute_granularity=full requires recompute_method=uniform or block",
        {O + "recompute_granularity": "full", O + "recompute_method": "uniform", O + "recompute_num_layers": 1},
    ),
    "recompute-selective": (
        {O + "recompute_granularity": "selective", O + "recompute_num_layers": 2}, "error", O + "recompute_num_layers",
        "recompute_granularity=selective requires recompute_num_layers=null (got 2)",
        {O + "recompute_granularity": "selective"},
    ),
    "recompute-method-without-granularity": (
        {O + "recompute_method": "uniform"}, "warning", O + "recompute_method",
        "recompute_method=uniform has no effect: recompute_granularity is null",
        {O + "recompute_method": "uniform", O + "recompute_granularity": "full", O + "recompute_num_layers": 2},
    ),
    "recompute-modules": (
        {O + "recompute_granularity": "selective", O + "recompute_modules": ["moe_act"]}, "error",
        O + "recompute_modules", "recompute_modules with moe_act requires moe_grouped_gemm=True",
        {O + "recompute_granularity": "selective", O + "recompute_modules": ["moe_act"], O + "moe_grouped_gemm": True},
    ),
    "distribute-saved-activations-sp": (
        {M + "tensor_model_parallel_size": 2, O + "recompute_granularity": "selective",
         O + "distribute_saved_activations": True}, "error", O + "distribute_saved_activations",
        "distribute_saved_activations=True and sequence_parallel=True cannot be combined",
        {O + "recompute_granularity": "selective", O + "distribute_saved_activations": True},
    ),
    "flash-attn-off": (
        {O + "use_flash_attn": False}, "warning", O + "use_flash_attn",
        "use_flash_attn=False: MindSpeed then never registers its attention patch (the guide: FA must be on)",
        {O + "use_flash_attn": True},
    ),
    "cp-forces-flash-attn": (
        {M + "context_parallel_size": 2, O + "use_flash_attn": False}, "error", O + "use_flash_attn",
        "context_parallel_size=2 requires use_flash_attn=True",
        {M + "context_parallel_size": 2},
    ),
    "cp-algo-without-cp": (
        {O + "context_parallel_algo": "ulysses_cp_algo"}, "warning", O + "context_parallel_algo",
        "context_parallel_algo=ulysses_cp_algo has no effect: context_parallel_size is 1",
        {O + "context_parallel_algo": "megatron_cp_algo"},
    ),
    "cp-window-size": (
        {M + "context_parallel_size": 4, O + "cp_window_size": 3}, "error", O + "cp_window_size",
        "cp_window_size=3 requires a divisor of context_parallel_size=4 in [1, 4)",
        {M + "context_parallel_size": 4, O + "cp_window_size": 2},
    ),
    "hybrid-cp-ulysses-degree": (
        {M + "context_parallel_size": 4, O + "context_parallel_algo": "hybrid_cp_algo", O + "ulysses_degree_in_cp": 4},
        "error", O + "ulysses_degree_in_cp",
        "context_parallel_algo=hybrid_cp_algo requires context_parallel_size / ulysses_degree_in_cp to be an "
        "integer > 1 (got 4 / 4)",
        {M + "context_parallel_size": 4, O + "context_parallel_algo": "hybrid_cp_algo", O + "ulysses_degree_in_cp": 2},
    ),
    "cp-seq-length": (
        {M + "context_parallel_size": 2, O + "context_parallel_algo": "ulysses_cp_algo"}, "error", O + "seq_length",
        "context_parallel_algo=ulysses_cp_algo requires seq_length in override_transformer_config: MindSpeed reads "
        "it unguarded and fails inside the worker without it",
        {M + "context_parallel_size": 2, O + "context_parallel_algo": "ulysses_cp_algo", O + "seq_length": 4096},
    ),
    "mla-dimensions": (
        {O + "multi_head_latent_attention": True, O + "kv_lora_rank": 512}, "error", O + "multi_head_latent_attention",
        "multi_head_latent_attention=True requires v_head_dim, qk_rope_head_dim, qk_nope_head_dim in "
        "override_transformer_config",
        {O + "multi_head_latent_attention": True, O + "kv_lora_rank": 512, O + "v_head_dim": 128,
         O + "qk_rope_head_dim": 64, O + "qk_nope_head_dim": 128},
    ),
    "fused-op-companions": (
        {O + "use_fused_rmsnorm": True, O + "normalization": "LayerNorm"}, "warning", O + "normalization",
        "use_fused_rmsnorm=True requires normalization=RMSNorm (got LayerNorm); the fused kernel does not match "
        "this model",
        {O + "use_fused_rmsnorm": True, O + "normalization": "RMSNorm"},
    ),
    "permute-fusion-flags-agree": (
        {O + "use_fused_moe_token_permute_and_unpermute": True, O + "moe_permute_fusion": False}, "error",
        O + "moe_permute_fusion",
        "use_fused_moe_token_permute_and_unpermute=True and moe_permute_fusion=False must be equal "
        "(MindSpeed keeps them in sync)",
        {O + "use_fused_moe_token_permute_and_unpermute": True},
    ),
    "permute-fusion-dispatcher": (
        {O + "moe_permute_fusion": True, O + "moe_token_dispatcher_type": "allgather"}, "error",
        O + "moe_token_dispatcher_type",
        "fused permute/unpermute and moe_token_dispatcher_type=allgather cannot be combined",
        {O + "moe_permute_fusion": True},
    ),
    "moe-async-comm-alone": (
        {O + "moe_permutation_async_comm": True}, "warning", O + "moe_permutation_async_comm",
        "moe_permutation_async_comm=True has no effect on its own: it is a precondition of moe_tp_extend_ep, "
        "moe_alltoall_overlap_comm, moe_allgather_overlap_comm",
        {O + "moe_permutation_async_comm": True, O + "moe_alltoall_overlap_comm": True, O + "moe_grouped_gemm": True,
         M + "expert_model_parallel_size": 2},
    ),
    "moe-overlap-prerequisites": (
        {O + "moe_alltoall_overlap_comm": True, M + "expert_model_parallel_size": 2}, "error", O + "moe_grouped_gemm",
        "moe_alltoall_overlap_comm=True requires moe_grouped_gemm=True",
        {O + "moe_alltoall_overlap_comm": True, O + "moe_grouped_gemm": True, M + "expert_model_parallel_size": 2},
    ),
    "mc2-requires-sp-tp": (
        {O + "use_ascend_mc2": True}, "error", M + "tensor_model_parallel_size",
        "use_ascend_mc2=True requires tensor_model_parallel_size > 1",
        {O + "use_ascend_mc2": True, M + "tensor_model_parallel_size": 2},
    ),
    "mc2-conflicts": (
        {O + "use_ascend_mc2": True, M + "tensor_model_parallel_size": 2, O + "use_ascend_coc": True}, "error",
        O + "use_ascend_coc", "use_ascend_mc2=True and use_ascend_coc=True cannot be combined",
        {O + "use_ascend_mc2": True, M + "tensor_model_parallel_size": 2},
    ),
    "cp-algo-release": (
        {M + "context_parallel_size": 2, O + "context_parallel_algo": "kvallgather_cp_algo"}, "error",
        O + "context_parallel_algo",
        "context_parallel_algo=kvallgather_cp_algo requires MindSpeed 26.0.0 or later (checking against "
        "2.3.0_core_r0.12.1, which has no code for it)",
        {M + "context_parallel_size": 2, O + "context_parallel_algo": "megatron_cp_algo"},
    ),
}
CASES["uneven-pp-needs-middle"] = (
    {M + "pipeline_model_parallel_size": 2, O + "num_layers_in_first_pipeline_stage": 1,
     O + "num_layers_in_last_pipeline_stage": 1}, "error", O + "num_layers_in_last_pipeline_stage",
    "num_layers_in_first_pipeline_stage and num_layers_in_last_pipeline_stage together require "
    "pipeline_model_parallel_size > 2 (got 2)",
    {M + "pipeline_model_parallel_size": 2, O + "num_layers_in_first_pipeline_stage": 1},
)
RELEASE = {"cp-algo-release": "2.3.0_core_r0.12.1"}


def _find(result, rule_id):
    return [i for i in result.issues if i.rule == rule_id]


def test_every_registered_rule_has_cases():
    core = {r.id for r in RULES if not r.fn.__module__.endswith("model_rules")}
    assert core - set(CASES) == set(), "add a failing and a passing case for each new rule"


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_fails(rule_id, resolve_cfg):
    failing, severity, key, message, _ = CASES[rule_id]
    result = resolve_cfg(failing, release=RELEASE.get(rule_id))
    found = [(i.severity, i.key, i.message) for i in _find(result, rule_id)]
    assert (severity, key, message) in found


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_passes(rule_id, resolve_cfg):
    result = resolve_cfg(CASES[rule_id][4], release=RELEASE.get(rule_id))
    assert _find(result, rule_id) == []
    assert result.errors == [], [i.line() for i in result.errors]


@pytest.mark.parametrize("release, severity", [
    param("2.3.0_core_r0.12.1", "warning", id="2.x-warns-and-skips"),
    param("26.0.0_core_r0.12.1", "error", id="26.0-raises"),
    param("master", "error", id="master-raises"),
])
def test_mc2_severity_follows_release(resolve_cfg, release, severity):
    result = resolve_cfg({O + "use_ascend_mc2": True}, release=release)
    assert [i.severity for i in _find(result, "mc2-requires-sp-tp")] == [severity]


def test_rules_report_for_ref_when_its_layout_differs(resolve_cfg):
    result = resolve_cfg({O + "use_ascend_mc2": True, M + "tensor_model_parallel_size": 2,
                          "actor_rollout_ref.ref.megatron.tensor_model_parallel_size": 1})
    keys = {i.key for i in _find(result, "mc2-requires-sp-tp")}
    assert keys == {"actor_rollout_ref.ref.megatron.tensor_model_parallel_size"}


def test_all_problems_are_collected_at_once(resolve_cfg):
    result = resolve_cfg({O + "use_ascend_mc2": True, O + "swap_optimizer": True,
                          M + "use_distributed_optimizer": False, O + "recompute_granularity": "full"})
    rules = {i.rule for i in result.errors}
    assert {"mc2-requires-sp-tp", "swap-optimizer-requires-distributed-optimizer", "recompute-full"} <= rules
