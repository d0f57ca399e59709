"""Memory estimate formulas, layout enumeration, and the corpus layouts among plan's results."""

from __future__ import annotations

import time

import pytest
from helpers import FIXTURES

from verl_mindspeed.model import Layout, MemoryOptions, ModelSpec, estimate_memory, load_model_spec, plan_layouts
from verl_mindspeed.model._constraints import balanced_pipeline_split
from verl_mindspeed.model.memory import _layer_activation_bytes

MODELS = FIXTURES / "models"


def spec_of(name: str) -> ModelSpec:
    return load_model_spec(MODELS / name)[0]


# A GPT-style MHA layer whose SwiGLU width 8h/3 stores as much as the paper's 4h GeLU MLP.
GPT = ModelSpec(architecture="LlamaForCausalLM", family="dense", num_layers=4, hidden_size=768,
                ffn_hidden_size=2048, num_attention_heads=12, num_query_groups=12, head_dim=64, vocab_size=1024)


def test_layer_activations_follow_korthikanti():
    s, a, h = 1024, 12, 768
    no_fa = MemoryOptions(seq_len=s, flash_attention=False, sequence_parallel=False)
    assert _layer_activation_bytes(GPT, False, s, no_fa, 1) == s * h * (34 + 5 * a * s / h)
    fa_sp = MemoryOptions(seq_len=s)
    assert _layer_activation_bytes(GPT, False, s, fa_sp, 4) == s * h * 34 / 4


def test_memory_levers_move_the_estimate_the_right_way():
    spec, world = spec_of("Qwen3-30B-A3B"), 16
    base = estimate_memory(spec, Layout(tp=4, ep=4, etp=4), world)
    assert estimate_memory(spec, Layout(tp=4, ep=4, etp=4), world,
                           MemoryOptions(distributed_optimizer=False)).optimizer > base.optimizer
    assert estimate_memory(spec, Layout(tp=4, ep=4, etp=4), world,
                           MemoryOptions(full_recompute=True)).activations < base.activations
    assert estimate_memory(spec, Layout(tp=4, cp=2, ep=4, etp=4), world).activations < base.activations
    offload = estimate_memory(spec, Layout(tp=4, ep=4, etp=4), world,
                              MemoryOptions(param_offload=True, optimizer_offload=True))
    assert offload.peak == base.peak and offload.resident_outside_update < base.resident_outside_update
    assert estimate_memory(spec, Layout(tp=4, ep=4, etp=4), world,
                           MemoryOptions(ref_param_offload=True)).ref_weights == 0


@pytest.mark.parametrize("layers,pp,split", [(27, 4, (7, 6)), (28, 2, (None, None)), (27, 2, (14, None)),
                                             (61, 8, (7, 6)), (61, 32, None), (4, 8, None)])
def test_balanced_pipeline_split(layers, pp, split):
    assert balanced_pipeline_split(layers, pp) == split


CORPUS_LAYOUTS = [  # (model, nnodes, gpus per node, layout) from ../shared/corpus/real-scripts
    ("Moonlight-16B-A3B-Instruct", 1, 8, Layout(pp=4, cp=2, ep=2, etp=1, first_stage_layers=7, last_stage_layers=6)),
    ("Qwen3-30B-A3B", 1, 16, Layout(tp=4, ep=4, etp=4)),
    ("Qwen3-30B-A3B", 1, 16, Layout(tp=2, ep=8, etp=1)),
    ("Qwen3-0.6B", 1, 8, Layout(tp=2, pp=2)),
]


@pytest.mark.parametrize("name,nnodes,gpus,layout", CORPUS_LAYOUTS, ids=lambda v: str(v))
def test_corpus_layouts_are_among_the_valid_layouts(name, nnodes, gpus, layout):
    plans = plan_layouts(spec_of(name), nnodes, gpus)
    assert layout in [p.layout for p in plans]


def test_overrides_cover_actor_and_ref_and_cp_in_the_dict():
    spec = spec_of("Moonlight-16B-A3B-Instruct")
    plan = next(p for p in plan_layouts(spec, 1, 8) if p.layout == CORPUS_LAYOUTS[0][3])
    assert plan.overrides == (
        "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=1",
        "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=4",
        "actor_rollout_ref.actor.megatron.virtual_pipeline_model_parallel_size=null",
        "actor_rollout_ref.actor.megatron.context_parallel_size=2",
        "actor_rollout_ref.actor.megatron.expert_model_parallel_size=2",
        "actor_rollout_ref.actor.megatron.expert_tensor_parallel_size=1",
        "actor_rollout_ref.ref.megatron.tensor_model_parallel_size=1",
        "actor_rollout_ref.ref.megatron.pipeline_model_parallel_size=4",
        "actor_rollout_ref.ref.megatron.virtual_pipeline_model_parallel_size=null",
        "actor_rollout_ref.ref.megatron.context_parallel_size=2",
        "actor_rollout_ref.ref.megatron.expert_model_parallel_size=2",
        "actor_rollout_ref.ref.megatron.expert_tensor_parallel_size=1",
        "++actor_rollout_ref.actor.megatron.override_transformer_config.context_parallel_size=2",
        "++actor_rollout_ref.actor.megatron.override_transformer_config.num_layers_in_first_pipeline_stage=7",
        "++actor_rollout_ref.actor.megatron.override_transformer_config.num_layers_in_last_pipeline_stage=6",
    )


def test_ranking_puts_fitting_layouts_first():
    plans = plan_layouts(spec_of("Qwen3-30B-A3B"), 1, 16)
    fits = [p.fits for p in plans]
    assert fits == sorted(fits, reverse=True) and any(fits)


def test_deepseek_v3_on_64_devices_answers_within_a_second():
    spec = spec_of("DeepSeek-V3")
    started = time.perf_counter()
    plans = plan_layouts(spec, 8, 8)
    assert time.perf_counter() - started < 1.0
    assert plans and all(p.layout.tp * p.layout.pp * p.layout.cp <= 64 for p in plans)
