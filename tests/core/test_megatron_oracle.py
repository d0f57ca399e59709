"""Oracle: the megatron-native part of resolved dicts builds a real megatron-core TransformerConfig on CPU,
and where the resolver reports a megatron rule as an error, megatron-core itself refuses the config."""

from __future__ import annotations

import dataclasses

import pytest
from pytest import param

from helpers import require

M = "actor_rollout_ref.actor.megatron."
O = M + "override_transformer_config."
SMALL = dict(num_layers=4, hidden_size=64, num_attention_heads=4)


def build(result, role="actor"):
    core = require("megatron.core.transformer")
    cls = core.TransformerConfig
    names = {f.name for f in dataclasses.fields(cls)}
    otc = result.roles[role]["override_transformer_config"]
    meg = result.roles[role]["megatron"]
    kwargs = {k: v for k, v in otc.items() if k in names}
    kwargs.update({k: meg[k] for k in ("tensor_model_parallel_size", "pipeline_model_parallel_size",
                                       "context_parallel_size", "expert_model_parallel_size") if k in meg})
    kwargs["sequence_parallel"] = otc.get("sequence_parallel", bool(meg.get("sequence_parallel")) and
                                          kwargs.get("tensor_model_parallel_size", 1) > 1)
    if kwargs.get("pipeline_model_parallel_size", 1) > 1:
        import torch

        kwargs["pipeline_dtype"] = torch.bfloat16
    kwargs.update(SMALL)
    kwargs.pop("moe_permute_fusion", None)  # needs Transformer Engine: not an option property
    return cls(**kwargs)


VALID = [
    param({}, id="defaults"),
    param({M + "tensor_model_parallel_size": 2}, id="tp2-sp"),
    param({O + "recompute_granularity": "full", O + "recompute_method": "uniform", O + "recompute_num_layers": 1},
          id="full-recompute"),
    param({O + "recompute_granularity": "selective", O + "recompute_modules": ["core_attn", "mlp"]}, id="selective"),
    param({O + "recompute_granularity": "none"}, id="none-string-normalized"),
    param({M + "pipeline_model_parallel_size": 2, O + "num_layers_in_first_pipeline_stage": 1,
           O + "noop_layers": [0, 3]}, id="pp-uneven-noop"),
    param({M + "tensor_model_parallel_size": 2, O + "use_ascend_mc2": True}, id="mc2"),
    param({O + "fused_permute_and_unpermute": True, O + "attention_backend": "fused"}, id="alias"),
    param({O + "moe_router_topk": 1, O + "moe_router_pre_softmax": True, O + "num_moe_experts": 4,
           O + "add_bias_linear": False}, id="topk1-pre-softmax"),
    param({O + "moe_router_topk": 1, O + "moe_router_score_function": "sigmoid", O + "num_moe_experts": 4,
           O + "add_bias_linear": False}, id="topk1-sigmoid"),
]


@pytest.mark.parametrize("settings", VALID)
def test_valid_resolved_dicts_construct(resolve_cfg, settings):
    result = resolve_cfg(settings)
    assert result.errors == [], [i.line() for i in result.errors]
    for role in result.roles:
        config = build(result, role)
        assert config.num_layers == 4


INVALID = [
    param({O + "recompute_granularity": "full", O + "recompute_num_layers": 1}, "recompute-full", id="full-no-method"),
    param({O + "recompute_granularity": "full", O + "recompute_method": "block"}, "recompute-full", id="full-no-n"),
    param({O + "recompute_granularity": "selective", O + "recompute_num_layers": 2}, "recompute-selective",
          id="selective-n"),
    param({O + "recompute_granularity": "selective", O + "recompute_modules": ["moe_act"],
           O + "moe_grouped_gemm": False},
          "recompute-modules",
          id="moe-act"),
    param({O + "moe_router_topk": 1, O + "moe_router_score_function": "softmax", O + "moe_router_pre_softmax": False,
           O + "num_moe_experts": 4, O + "add_bias_linear": False}, "moe-topk1-pre-softmax", id="topk1-softmax"),
    param({O + "sequence_parallel": True}, "sp-requires-tp", id="sp-tp1"),
    param({M + "pipeline_model_parallel_size": 2, O + "num_layers_in_first_pipeline_stage": 1,
           O + "num_layers_in_last_pipeline_stage": 1}, "uneven-pp-needs-middle", id="pp2-both-uneven"),
    param({M + "tensor_model_parallel_size": 2, M + "expert_model_parallel_size": 2,
           O + "sequence_parallel": False, O + "num_moe_experts": 4, O + "add_bias_linear": False},
          "ep-tp-requires-sp", id="ep-tp-no-sp"),
]


@pytest.mark.parametrize("settings, rule", INVALID)
def test_megatron_agrees_with_our_errors(resolve_cfg, settings, rule):
    result = resolve_cfg(settings)
    assert rule in {i.rule for i in result.errors}
    with pytest.raises((ValueError, AssertionError, ZeroDivisionError)):
        build(result)


def test_both_uneven_sizes_at_one_stage_build_the_last_stages_layers(resolve_cfg, monkeypatch):
    """Why model-layers-pp refuses both uneven sizes at PP=1 although megatron-core 0.12.1 accepts the config: its
    own layer count at PP=1 (a stage that is first and last at once) is num_layers_in_last_pipeline_stage, not
    num_layers."""
    block = require("megatron.core.transformer.transformer_block")
    parallel_state = require("megatron.core.parallel_state")
    result = resolve_cfg({O + "num_layers_in_first_pipeline_stage": 3, O + "num_layers_in_last_pipeline_stage": 1})
    assert "model-layers-pp" in {i.rule for i in result.errors}
    config = build(result)  # the config check passes: (4 - 3 - 1) % (1 - 2) == 0
    for name, value in (("get_pipeline_model_parallel_world_size", 1), ("is_pipeline_first_stage", True),
                        ("is_pipeline_last_stage", True), ("get_virtual_pipeline_model_parallel_world_size", None)):
        monkeypatch.setattr(parallel_state, name, lambda *a, _v=value, **k: _v)
    assert block.get_num_layers_to_build(config) == 1 != config.num_layers
