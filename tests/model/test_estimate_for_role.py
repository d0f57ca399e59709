"""``estimate_for_role``: the estimate ``check --model-config`` reports for a role's megatron section."""

from __future__ import annotations

from helpers import FIXTURES
from verl_mindspeed.model import Layout, MemoryOptions, Recompute, estimate_for_role, estimate_memory, load_model_spec

SPEC = load_model_spec(FIXTURES / "models" / "Moonlight-16B-A3B-Instruct")[0]


def test_role_section_selects_the_same_layout_as_plan():
    section = {
        "tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 4, "context_parallel_size": 2,
        "expert_model_parallel_size": 2, "expert_tensor_parallel_size": 1,
        "virtual_pipeline_model_parallel_size": None, "use_distributed_optimizer": True,
        "override_transformer_config": {
            "num_layers_in_first_pipeline_stage": 7, "num_layers_in_last_pipeline_stage": 6,
            "context_parallel_algo": "hybrid_cp_algo", "ulysses_degree_in_cp": 2,
            "recompute_granularity": "full", "recompute_method": "block", "recompute_num_layers": 2},
    }
    opts = MemoryOptions(seq_len=8192)
    got = estimate_for_role(SPEC, section, 8, opts)
    want = estimate_memory(SPEC, Layout(pp=4, cp=2, ep=2, etp=1, first_stage_layers=7, last_stage_layers=6,
                                        cp_algo="hybrid_cp_algo", ulysses_degree=2,
                                        recompute=Recompute("full", "block", 2)), 8, opts)
    assert got == want and got.peak > 0


def test_the_section_flags_reach_the_estimate():
    base = {"tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 1}
    on = estimate_for_role(SPEC, base, 8)
    off = estimate_for_role(SPEC, {**base, "use_distributed_optimizer": False}, 8)
    assert off.optimizer > on.optimizer


def test_odd_sections_give_none_not_an_exception():
    assert estimate_for_role(SPEC, {"pipeline_model_parallel_size": 5}, 8) is None  # 5 does not divide 8 devices
    assert estimate_for_role(SPEC, {"pipeline_model_parallel_size": 4, "override_transformer_config": {
        "num_layers_in_first_pipeline_stage": 40}}, 8) is None  # the layers do not split
    odd = estimate_for_role(SPEC, {"tensor_model_parallel_size": "2", "override_transformer_config": None}, 8)
    assert odd is not None  # a non-integer size falls back to the default
