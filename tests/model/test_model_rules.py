"""Every model/cluster rule: a passing and a failing case on real model configs, exact messages."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from helpers import FIXTURES
from verl_mindspeed.model import load_model_spec
from verl_mindspeed.rules import model_rules as mr
from verl_mindspeed.rules._base import Context, RoleView
from verl_mindspeed.rules.attention import hybrid_cp_ulysses_degree
from verl_mindspeed.rules.verl_engine import batch_divisibility

A = "actor_rollout_ref.actor.megatron"
OTC = f"{A}.override_transformer_config"


def spec_of(name: str):
    return load_model_spec(FIXTURES / "models" / name)[0]


def role(otc=None, **megatron) -> RoleView:
    return RoleView("actor", A, dict(megatron), dict(otc or {}), set(otc or {}))


def lines(fn, view: RoleView, model: str, **ctx) -> list[tuple[str, str, str]]:
    found = fn(view, Context(model=spec_of(model), **ctx))
    return [(i.severity, i.key, i.message) for i in found]


QWEN3_30B, QWEN3_06B, MOONLIGHT = "Qwen3-30B-A3B", "Qwen3-0.6B", "Moonlight-16B-A3B-Instruct"

CASES = [
    # (rule, role view, model, expected issues)
    pytest.param(mr.heads_divisible_by_tp, role(tensor_model_parallel_size=4), QWEN3_30B, [], id="heads-ok"),
    pytest.param(mr.heads_divisible_by_tp, role(tensor_model_parallel_size=3), QWEN3_30B, [(
        "error", f"{A}.tensor_model_parallel_size",
        "tensor_model_parallel_size=3 requires num_attention_heads divisible by 3 (the model has 32)")], id="heads"),
    pytest.param(mr.query_groups_divisible_by_tp, role(tensor_model_parallel_size=4), QWEN3_30B, [], id="groups-ok"),
    pytest.param(mr.query_groups_divisible_by_tp, role(tensor_model_parallel_size=8), QWEN3_30B, [(
        "error", f"{A}.tensor_model_parallel_size",
        "tensor_model_parallel_size=8 requires num_query_groups (num_key_value_heads) a multiple of 8 "
        "(the model has 4; megatron-core 0.16 also accepts a divisor)")], id="groups"),
    pytest.param(mr.ffn_divisible, role(tensor_model_parallel_size=2, expert_tensor_parallel_size=4), QWEN3_30B, [],
                 id="ffn-ok"),
    pytest.param(mr.ffn_divisible, role(tensor_model_parallel_size=1, expert_tensor_parallel_size=5), QWEN3_30B, [(
        "error", f"{A}.expert_tensor_parallel_size",
        "expert_tensor_parallel_size=5 requires moe_ffn_hidden_size (moe_intermediate_size) divisible by 5 "
        "(the model has 768)")], id="ffn"),
    pytest.param(mr.layers_split_over_pp, role(
        {"num_layers_in_first_pipeline_stage": 7, "num_layers_in_last_pipeline_stage": 6},
        pipeline_model_parallel_size=4), MOONLIGHT, [], id="pp-uneven-ok"),
    pytest.param(mr.layers_split_over_pp, role(pipeline_model_parallel_size=4), MOONLIGHT, [(
        "error", f"{A}.pipeline_model_parallel_size",
        "pipeline_model_parallel_size=4 requires the 27 layers to split evenly over 4 stages, "
        "or num_layers_in_first_pipeline_stage/num_layers_in_last_pipeline_stage with an even middle")],
        id="pp-uneven"),
    pytest.param(mr.layers_split_over_pp, role(
        {"num_layers_in_first_pipeline_stage": 7, "num_layers_in_last_pipeline_stage": 5},
        pipeline_model_parallel_size=4), MOONLIGHT, [(
            "error", f"{OTC}.num_layers_in_first_pipeline_stage",
            "num_layers_in_first_pipeline_stage=7 and num_layers_in_last_pipeline_stage=5 with "
            "pipeline_model_parallel_size=4 require the remaining 15 of 27 layers to split evenly over "
            "the 2 other stages, at least one layer each")], id="pp-middle"),
    pytest.param(mr.layers_split_over_pp, role({"noop_layers": "0,29", "num_layers": 30},
                                               pipeline_model_parallel_size=3), QWEN3_06B, [], id="pp-noop-ok"),
    pytest.param(mr.vpp_divides_stage_layers, role(pipeline_model_parallel_size=2,
                                                   virtual_pipeline_model_parallel_size=7), QWEN3_06B, [],
                 id="vpp-ok"),
    pytest.param(mr.vpp_divides_stage_layers, role(pipeline_model_parallel_size=2,
                                                   virtual_pipeline_model_parallel_size=3), QWEN3_06B, [(
        "error", f"{A}.virtual_pipeline_model_parallel_size",
        "virtual_pipeline_model_parallel_size=3 requires the layers of every pipeline stage (14, 14) divisible by 3")],
        id="vpp"),
    pytest.param(mr.recompute_divides_chunks, role(
        {"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 7},
        pipeline_model_parallel_size=2), QWEN3_06B, [], id="recompute-ok"),
    pytest.param(mr.recompute_divides_chunks, role(
        {"recompute_granularity": "full", "recompute_method": "block", "recompute_num_layers": 15},
        pipeline_model_parallel_size=2), QWEN3_06B, [], id="recompute-block-more-than-a-stage-ok"),
    pytest.param(mr.recompute_divides_chunks, role(
        {"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 4},
        pipeline_model_parallel_size=2), QWEN3_06B, [(
            "error", f"{OTC}.recompute_num_layers",
            "recompute_method=uniform with recompute_num_layers=4 requires it to divide the layers of every pipeline "
            "stage and model chunk (14): megatron's uniform recompute then indexes past the chunk (IndexError)")],
        id="recompute-uniform-does-not-divide"),
    pytest.param(mr.recompute_divides_chunks, role(
        {"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 2,
         "num_layers_in_first_pipeline_stage": 7, "num_layers_in_last_pipeline_stage": 6},
        pipeline_model_parallel_size=4), MOONLIGHT, [(
            "error", f"{OTC}.recompute_num_layers",
            "recompute_method=uniform with recompute_num_layers=2 requires it to divide the layers of every pipeline "
            "stage and model chunk (6, 7): megatron's uniform recompute then indexes past the chunk (IndexError)")],
        id="recompute-uneven-middle-and-first"),
    pytest.param(mr.recompute_divides_chunks, role(
        {"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 2},
        pipeline_model_parallel_size=2, virtual_pipeline_model_parallel_size=7), QWEN3_06B, [],
        id="recompute-vpp-chunks-ok"),
    pytest.param(mr.noop_layers_match_model, role({"noop_layers": "0,29", "num_layers": 30}), QWEN3_06B, [],
                 id="noop-ok"),
    pytest.param(mr.noop_layers_match_model, role({"noop_layers": "0,29"}), QWEN3_06B, [(
        "error", f"{OTC}.noop_layers",
        "noop_layers='0,29' requires num_layers=30 in override_transformer_config (the model's 28 layers plus the "
        "no-op layers); out of range now: 29")], id="noop-missing-num-layers"),
    pytest.param(mr.noop_layers_match_model, role({"noop_layers": "0,7", "num_layers": 28}), QWEN3_06B, [(
        "error", f"{OTC}.num_layers",
        "noop_layers='0,7' requires num_layers=30 (the model's 28 layers plus 2 no-op), got 28")], id="noop-count"),
    pytest.param(mr.experts_divisible_by_ep, role(expert_model_parallel_size=8), QWEN3_30B, [], id="ep-ok"),
    pytest.param(mr.experts_divisible_by_ep, role(expert_model_parallel_size=3), QWEN3_30B, [(
        "error", f"{A}.expert_model_parallel_size",
        "expert_model_parallel_size=3 requires num_experts divisible by 3 (the model has 128)")], id="ep"),
    pytest.param(mr.experts_divisible_by_ep, role(expert_model_parallel_size=2), QWEN3_06B, [(
        "error", f"{A}.expert_model_parallel_size",
        "expert_model_parallel_size=2 requires a MoE model (Qwen3ForCausalLM has no experts)")], id="ep-dense"),
    # the dict's EP=1 is what TransformerConfig checks (verl copies it over the engine's 2): nothing to raise here;
    # the mismatch itself is dict-sizes-agree's
    pytest.param(mr.experts_divisible_by_ep, role({"expert_model_parallel_size": 1}, expert_model_parallel_size=2),
                 QWEN3_06B, [], id="ep-dense-dict-1"),
    pytest.param(mr.ulysses_heads, role({"context_parallel_algo": "ulysses_cp_algo"}, context_parallel_size=4,
                                        tensor_model_parallel_size=2), QWEN3_30B, [], id="ulysses-ok"),
    pytest.param(mr.ulysses_heads, role({"context_parallel_algo": "ulysses_cp_algo"}, context_parallel_size=4,
                                        tensor_model_parallel_size=8), QWEN3_06B, [(
        "error", f"{OTC}.context_parallel_algo",
        "context_parallel_algo=ulysses_cp_algo requires num_attention_heads divisible by context_parallel_size x "
        "tensor_model_parallel_size = 4 x 8 = 32 (the model has 16)")], id="ulysses"),
    pytest.param(hybrid_cp_ulysses_degree, role({"context_parallel_algo": "hybrid_cp_algo",
                                                 "ulysses_degree_in_cp": 2},
                                                context_parallel_size=4, tensor_model_parallel_size=8), QWEN3_06B, [],
                 id="hybrid-ok"),
    pytest.param(hybrid_cp_ulysses_degree, role({"context_parallel_algo": "hybrid_cp_algo", "ulysses_degree_in_cp": 4},
                                                context_parallel_size=8, tensor_model_parallel_size=8), QWEN3_06B, [(
        "error", f"{OTC}.ulysses_degree_in_cp",
        "context_parallel_algo=hybrid_cp_algo requires num_attention_heads divisible by ulysses_degree_in_cp x "
        "tensor_model_parallel_size = 4 x 8 = 32 (the model has 16)")], id="hybrid"),
    pytest.param(mr.mla_matches_model, role({"multi_head_latent_attention": True, "kv_lora_rank": 512}), MOONLIGHT,
                 [], id="mla-ok"),
    pytest.param(mr.mla_matches_model, role({"multi_head_latent_attention": True}), QWEN3_30B, [(
        "error", f"{OTC}.multi_head_latent_attention",
        "multi_head_latent_attention=True and the model Qwen3MoeForCausalLM cannot be combined "
        "(it has no multi-head latent attention)")], id="mla-not-mla-model"),
    pytest.param(mr.mla_matches_model, role({"multi_latent_attention": True, "kv_lora_rank": 256}), MOONLIGHT, [(
        "error", f"{OTC}.kv_lora_rank", "kv_lora_rank=256 requires the model's value kv_lora_rank=512")],
        id="mla-dims"),
]


@pytest.mark.parametrize("fn,view,model,expected", CASES)
def test_rule(fn, view, model, expected):
    assert lines(fn, view, model) == expected


def test_query_groups_may_divide_tp_on_megatron_core_016():
    """Qwen3-30B-A3B has 4 KV heads: TP=8 fails on core 0.12.1 (not a multiple) but 0.16.1 accepts a divisor."""
    view = role(tensor_model_parallel_size=8)
    assert lines(mr.query_groups_divisible_by_tp, view, QWEN3_30B, release="core_r0.16.0") == []
    assert [i[0] for i in lines(mr.query_groups_divisible_by_tp, view, QWEN3_30B)] == ["error"]


def test_role_rules_need_a_model():
    view = role(tensor_model_parallel_size=3, expert_model_parallel_size=3, pipeline_model_parallel_size=5)
    for fn in (mr.heads_divisible_by_tp, mr.layers_split_over_pp, mr.experts_divisible_by_ep):
        assert list(fn(view, Context(model=None))) == []


def batch_cfg(**over):
    base = {"data": {"train_batch_size": 16}, "actor_rollout_ref": {
        "rollout": {"n": 8},
        "actor": {"ppo_mini_batch_size": 16, "ppo_micro_batch_size_per_gpu": 1, "use_dynamic_bsz": False}}}
    cfg = OmegaConf.create(base)
    for key, value in over.items():
        OmegaConf.update(cfg, key, value)
    return cfg


def batch(cfg, world=16, **sizes) -> list[tuple[str, str]]:
    found = batch_divisibility({"actor": role(**sizes)}, Context(world_size=world, config=cfg))
    return [(i.key, i.message) for i in found]


def test_batch_ok_for_qwen3_30b_corpus_layout():
    assert batch(batch_cfg(), tensor_model_parallel_size=4) == []


def test_batch_total_not_divisible():
    assert batch(batch_cfg(**{"data.train_batch_size": 6, "actor_rollout_ref.rollout.n": 1,
                              "actor_rollout_ref.actor.ppo_mini_batch_size": 4}),
                 tensor_model_parallel_size=4) == [(
        "data.train_batch_size",
        "data.train_batch_size x actor_rollout_ref.rollout.n = 6 x 1 = 6 requires a multiple of data-parallel size "
        "x actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu = 4 x 1 = 4")]


def test_batch_mini_larger_than_train():
    assert batch(batch_cfg(**{"actor_rollout_ref.actor.ppo_mini_batch_size": 32}), tensor_model_parallel_size=4) == [(
        "actor_rollout_ref.actor.ppo_mini_batch_size",
        "actor_rollout_ref.actor.ppo_mini_batch_size=32 requires data.train_batch_size >= 32 (got 16)")]


def test_batch_mini_not_divisible_by_dp_even_with_dynamic_bsz():
    cfg = batch_cfg(**{"actor_rollout_ref.actor.use_dynamic_bsz": True, "actor_rollout_ref.rollout.n": 1,
                       "actor_rollout_ref.actor.ppo_mini_batch_size": 6})
    assert batch(cfg, world=8) == [(
        "actor_rollout_ref.actor.ppo_mini_batch_size",
        "actor_rollout_ref.actor.ppo_mini_batch_size x actor_rollout_ref.rollout.n = 6 x 1 = 6 requires a multiple "
        "of the actor's data-parallel size 8")]


def test_a_top1_router_is_refused_for_the_softmax_router_the_model_has():
    """Qwen3-30B-A3B's config paths build a softmax router without pre-softmax: top-1 is megatron-core's refusal.
    Qwen2-MoE's set pre-softmax, and Moonlight's (DeepSeek-V3's) a sigmoid router: top-1 passes. An architecture no
    path is listed for gets the warning."""
    from dataclasses import replace

    from verl_mindspeed.rules._base import Context
    from verl_mindspeed.rules.router import topk1_pre_softmax

    top1 = role({"moe_router_topk": 1})
    assert lines(topk1_pre_softmax, top1, QWEN3_30B) == [(
        "error", f"{OTC}.moe_router_topk", "moe_router_topk=1 with the softmax router requires "
        "moe_router_pre_softmax=True (megatron-core: \"Please use --moe-router-pre-softmax when topk is 1\")")]
    assert lines(topk1_pre_softmax, role({"moe_router_topk": 1, "moe_router_pre_softmax": True}), QWEN3_30B) == []
    assert lines(topk1_pre_softmax, top1, MOONLIGHT) == []
    assert lines(topk1_pre_softmax, role(), QWEN3_30B) == []  # the model's own top-8
    qwen2_moe = replace(spec_of(QWEN3_30B), architecture="Qwen2MoeForCausalLM")
    assert list(topk1_pre_softmax(top1, Context(model=qwen2_moe))) == []
    other = replace(spec_of(QWEN3_30B), architecture="SomeMoeForCausalLM")
    (warned,) = topk1_pre_softmax(top1, Context(model=other))
    assert warned.severity == "warning" and "SomeMoeForCausalLM" in str(warned.message)
    assert "--model-config" not in str(warned.message)  # it was given
