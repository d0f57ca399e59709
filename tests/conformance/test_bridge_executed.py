"""Megatron-Bridge 0.3.1 executed on megatron-core 0.16.1 (the stack core_r0.16.0 runs on), driven as verl 0.9.1's
``_build_tf_config`` drives it, against what the project says that bridge puts in the config: the provider's
values (``simulate.bridge_view``, ``catalog/data/stacks.json``) and the rules that read them."""

from __future__ import annotations

from pathlib import Path

import pytest

from verl_mindspeed.model import load_model_spec
from verl_mindspeed.rules.stack import _provider_value
from verl_mindspeed.simulate import bridge_view
from verl_mindspeed.stack import GIVEN, build_stack

pytestmark = pytest.mark.conformance

MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "models"
FIXTURES = ("Qwen3-0.6B", "Qwen3-8B", "Qwen2.5-7B-Instruct", "Qwen3-30B-A3B", "Moonlight-16B-A3B-Instruct",
            "DeepSeek-V3")
STACK = build_stack("0.9.1", "core_r0.16.0", GIVEN)
KEYS = ("bias_activation_fusion", "seq_length", "position_embedding_type", "moe_token_dispatcher_type",
        "moe_grouped_gemm", "sequence_parallel", "tensor_model_parallel_size", "variable_seq_lengths",
        "moe_permute_fusion")


def verl_overrides(megatron: dict, otc: dict) -> dict:
    """``provider_overrides`` as verl 0.9.1 builds them (verl/workers/engine/megatron/transformer_impl.py lines
    354-372): the engine's sizes, its sequence_parallel (McoreEngineConfig turns it off at TP 1,
    verl/workers/config/engine.py line 236), verl's fixed values, then the role's dict over them."""
    vpp = megatron.get("virtual_pipeline_model_parallel_size")
    out = {name: megatron.get(name, default) for name, default in (
        ("tensor_model_parallel_size", 1), ("pipeline_model_parallel_size", 1), ("expert_model_parallel_size", 1),
        ("expert_tensor_parallel_size", None), ("context_parallel_size", 1))}
    out["sequence_parallel"] = bool(megatron.get("sequence_parallel", True)) and out["tensor_model_parallel_size"] > 1
    out.update({"virtual_pipeline_model_parallel_size": vpp, "overlap_p2p_comm": vpp is not None and vpp > 1,
                "batch_p2p_comm": False, "variable_seq_lengths": True, "attention_backend": "flash",
                "moe_token_dispatcher_type": "alltoall", "moe_router_load_balancing_type": "none"})
    out.update(otc)
    return out


@pytest.fixture(scope="module")
def executed(upstream):
    from verl_mindspeed.upstream import _bridge_layer

    layouts = [({}, {}), ({"tensor_model_parallel_size": 2, "sequence_parallel": True}, {}),
               ({}, {"not_a_provider_field": 1})]
    requests = [{"model_dir": str(MODELS / m), "overrides": verl_overrides(meg, otc), "keys": KEYS, "layout": i}
                for m in FIXTURES for i, (meg, otc) in enumerate(layouts)]
    found = _bridge_layer.providers("0.16.1", requests)
    return {(m, i): out for (m, i), out in zip(((m, i) for m in FIXTURES for i in range(len(layouts))), found)}


@pytest.mark.parametrize("model", FIXTURES)
def test_the_provider_values_the_project_reads_are_the_executed_ones(executed, model):
    spec, _ = load_model_spec(MODELS / model)
    run = executed[(model, 0)]
    assert run["error"] is None, run
    values = run["values"]
    assert values["bias_activation_fusion"] is _provider_value(STACK, spec, "bias_activation_fusion")[0]
    view = bridge_view({"use_mbridge": True, "vanilla_mbridge": False, "tensor_model_parallel_size": 1}, {}, spec)
    for key in ("seq_length", "position_embedding_type", "moe_token_dispatcher_type", "sequence_parallel"):
        assert values[key] == view[key], (key, values[key], view[key])
    if spec.is_moe:
        assert values["moe_grouped_gemm"] is view["moe_grouped_gemm"] is True


@pytest.mark.parametrize("model", FIXTURES)
def test_the_oracle_s_provider_values_are_the_executed_ones(executed, model):
    """The oracle's MindSpeed environments are on megatron-core 0.12.1 and 0.16.1 without Megatron-Bridge, so it
    still writes the provider's own values (verl_side.PROVIDER_EXTRAS, provider_seq_length): each is the value the
    executed provider holds."""
    import verl_side

    values = executed[(model, 0)]["values"]
    for key, value in verl_side.PROVIDER_EXTRAS[verl_side.model_family(str(MODELS / model))].items():
        assert values[key] == value, (key, values[key], value)
    assert values["seq_length"] == verl_side.provider_seq_length(str(MODELS / model))


@pytest.mark.parametrize("model", FIXTURES)
def test_sequence_parallel_at_tp_2_and_an_unknown_override_as_megatron_bridge_0_3_takes_them(executed, model):
    """SP and TP 2 finalize; an override the provider lacks is set silently before 0.5 (bridge-refuses-unknown
    fires only from 0.5)."""
    sp = executed[(model, 1)]
    assert sp["error"] is None and sp["values"]["sequence_parallel"] is True
    assert sp["values"]["tensor_model_parallel_size"] == 2
    unknown = executed[(model, 2)]
    assert unknown["error"] is None and not STACK.bridge_refuses_unknown()


@pytest.mark.parametrize("model", FIXTURES)
def test_fused_swiglu_is_said_inert_exactly_where_the_executed_provider_leaves_the_fusion_off(resolve_cfg, executed,
                                                                                            model):
    spec, _ = load_model_spec(MODELS / model)
    res = resolve_cfg({"actor_rollout_ref.actor.megatron.override_transformer_config.use_fused_swiglu": True},
                      release="core_r0.16.0", model=spec, injected=False, stack=STACK)
    warned = any(i.rule == "fused-swiglu-inert" for i in res.warnings)
    assert warned is (executed[(model, 0)]["values"]["bias_activation_fusion"] is False)


# mbridge 0.15.1 beside megatron-core 0.12.1 (the line MindSpeed 2.x/26.x patches), as verl's vanilla_mbridge=True
# path drives it: its config with the parallel sizes of Megatron's state (here TP 2), then the role's dict
STACK_12 = build_stack("0.9.1", "26.1.0_core_r0.12.1", GIVEN)
MB_KEYS = ("tensor_model_parallel_size", "sequence_parallel", "moe_token_dispatcher_type", "normalization",
           "gated_linear_unit", "moe_grouped_gemm", "moe_shared_expert_overlap", "multi_latent_attention", "num_layers",
           "num_attention_heads", "num_query_groups", "num_moe_experts", "bias_activation_fusion")
GROUPS = {"tensor_model_parallel_size": 2}


@pytest.fixture(scope="module")
def executed_mbridge(upstream):
    from verl_mindspeed.upstream import _bridge_layer

    requests = [{"model_dir": str(MODELS / m), "groups": GROUPS, "overrides": {}, "keys": MB_KEYS} for m in FIXTURES]
    return dict(zip(FIXTURES, _bridge_layer.providers("0.12.1", requests)))


@pytest.mark.parametrize("model", FIXTURES)
def test_the_mbridge_config_the_project_models_is_the_executed_one(executed_mbridge, model):
    spec, _ = load_model_spec(MODELS / model)
    run = executed_mbridge[model]
    assert run["error"] is None, run
    values = run["values"]
    view = bridge_view({"use_mbridge": True, "vanilla_mbridge": True}, GROUPS, spec)
    for key, value in view.items():
        if key in values:
            assert values[key] == value, (key, values[key], value)
    assert values["moe_grouped_gemm"] is spec.is_moe and values["multi_latent_attention"] is spec.is_mla


@pytest.mark.parametrize("model", FIXTURES)
def test_fused_swiglu_on_mbridge_is_said_inert_exactly_where_the_executed_config_leaves_the_fusion_off(
        resolve_cfg, executed_mbridge, model):
    spec, _ = load_model_spec(MODELS / model)
    res = resolve_cfg({"actor_rollout_ref.actor.megatron.override_transformer_config.use_fused_swiglu": True,
                       "actor_rollout_ref.actor.megatron.vanilla_mbridge": True},
                      release="26.1.0_core_r0.12.1", model=spec, injected=False, stack=STACK_12)
    warned = any(i.rule == "fused-swiglu-inert" for i in res.warnings)
    assert warned is (executed_mbridge[model]["values"]["bias_activation_fusion"] is False)
