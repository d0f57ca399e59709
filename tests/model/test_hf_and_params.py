"""Reading real config.json files, and parameter counts against published model sizes."""

from __future__ import annotations

import json

import pytest

from helpers import FIXTURES
from verl_mindspeed.model import active_parameters, load_model_spec, mla_dims, total_parameters

MODELS = FIXTURES / "models"


def spec_of(name: str):
    spec, note = load_model_spec(MODELS / name)
    assert note is None and spec is not None
    return spec


def test_qwen3_moe_maps_to_megatron_view():
    spec = spec_of("Qwen3-30B-A3B")
    assert (spec.family, spec.num_layers, spec.hidden_size, spec.num_attention_heads, spec.num_query_groups,
            spec.head_dim, spec.num_experts, spec.moe_router_topk, spec.moe_ffn_hidden_size,
            spec.tied_embeddings, spec.qk_layernorm) == ("moe", 48, 2048, 32, 4, 128, 128, 8, 768, False, True)
    assert spec.num_moe_layers == 48


def test_moonlight_is_deepseek_v3_style_mla():
    spec = spec_of("Moonlight-16B-A3B-Instruct/config.json")
    assert spec.family == "mla_moe" and spec.first_k_dense_replace == 1 and spec.num_moe_layers == 26
    assert spec.shared_expert_intermediate_size == 2 * 1408
    assert mla_dims(spec) == {"q_lora_rank": None, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
                              "qk_nope_head_dim": 128, "v_head_dim": 128}


def test_dense_models():
    qwen25, qwen3 = spec_of("Qwen2.5-7B-Instruct"), spec_of("Qwen3-0.6B")
    assert qwen25.qkv_bias and not qwen25.tied_embeddings and qwen25.head_dim == 128
    assert qwen3.tied_embeddings and qwen3.qk_layernorm and qwen3.head_dim == 128 and mla_dims(qwen3) == {}


@pytest.mark.parametrize("name,total,active", [
    ("Qwen2.5-7B-Instruct", 7.61e9, 7.61e9),
    ("Qwen3-30B-A3B", 30.5e9, 3.3e9),
    ("DeepSeek-V3", 671e9, 37e9),
])
def test_parameter_counts_within_two_percent_of_published(name, total, active):
    spec = spec_of(name)
    assert total_parameters(spec) == pytest.approx(total, rel=0.02)
    assert active_parameters(spec) == pytest.approx(active, rel=0.02)


def test_missing_unreadable_and_unknown_are_notes(tmp_path):
    assert load_model_spec(tmp_path / "nope") == (None, f"no model config at {tmp_path / 'nope'}; "
                                                        "model-aware checks are skipped")
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    spec, note = load_model_spec(tmp_path)
    assert spec is None and note.startswith(f"cannot read model config {tmp_path}:")
    bad.write_text(json.dumps({"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2"}))
    spec, note = load_model_spec(bad)
    assert spec is None and note.startswith("model architecture GPT2LMHeadModel is not one verl-mindspeed maps")
    bad.write_text(json.dumps({"architectures": ["Qwen3ForCausalLM"]}))
    spec, note = load_model_spec(bad)
    assert spec is None and note == "config.json has no num_attention_heads; a whole number is needed"


@pytest.mark.parametrize("name, seq_length", [
    ("Qwen3-8B", 40960), ("Qwen2.5-7B-Instruct", 32768), ("Qwen3-30B-A3B", 40960),
    ("DeepSeek-V3", 4096), ("Moonlight-16B-A3B-Instruct", 4096),
])
def test_megatron_bridge_seq_length_is_what_the_provider_sets(name, seq_length):
    """Megatron-Bridge v0.5.1's provider, run on CPU for these fixtures, gives max_position_embeddings, except the
    DeepSeek-V3 bridge (Moonlight included), which fixes 4096: the simulated bridge view says the same."""
    from verl_mindspeed.simulate import bridge_view

    spec, _ = load_model_spec(MODELS / name)
    view = bridge_view({"use_mbridge": True, "vanilla_mbridge": False, "tensor_model_parallel_size": 1}, {}, spec)
    assert view["seq_length"] == seq_length
