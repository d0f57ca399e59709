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
from verl_mindspeed.upstream._provider import provider_overrides

pytestmark = pytest.mark.conformance

MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "models"
FIXTURES = ("Qwen3-0.6B", "Qwen3-8B", "Qwen2.5-7B-Instruct", "Qwen3-30B-A3B", "Moonlight-16B-A3B-Instruct",
            "DeepSeek-V3")
STACK = build_stack("0.9.1", "core_r0.16.0", GIVEN)
KEYS = ("bias_activation_fusion", "seq_length", "position_embedding_type", "moe_token_dispatcher_type",
        "moe_grouped_gemm", "sequence_parallel", "tensor_model_parallel_size", "variable_seq_lengths",
        "moe_permute_fusion")


#: The layouts each Megatron-Bridge provider is run at: verl's defaults, TP 2 with SP, an override it lacks.
LAYOUTS = [({}, {}), ({"tensor_model_parallel_size": 2, "sequence_parallel": True}, {}),
           ({}, {"not_a_provider_field": 1})]


def run_layouts(line: str, layouts: list, **kw) -> dict:
    """Megatron-Bridge's provider on ``line`` for every fixture model at every layout: ``{(model, layout): run}``."""
    from verl_mindspeed.upstream import _bridge_layer

    requests = [{"model_dir": str(MODELS / m), "overrides": provider_overrides(meg, otc), "keys": KEYS}
                for m in FIXTURES for meg, otc in layouts]
    found = iter(_bridge_layer.providers(line, requests, **kw))
    return {(m, i): next(found) for m in FIXTURES for i in range(len(layouts))}


def assert_provider_values(run: dict, stack, spec) -> tuple[dict, dict]:
    """The executed provider at verl's defaults holds what the project reads on ``stack``: the fusion from the
    stack's facts, the rest from the bridge view."""
    assert run["error"] is None, run
    values = run["values"]
    assert values["bias_activation_fusion"] is _provider_value(stack, spec, "bias_activation_fusion")[0]
    view = bridge_view({"use_mbridge": True, "vanilla_mbridge": False, "tensor_model_parallel_size": 1}, {}, spec)
    for key in ("seq_length", "position_embedding_type", "moe_token_dispatcher_type", "sequence_parallel"):
        assert values[key] == view[key], (key, values[key], view[key])
    return values, view


@pytest.fixture(scope="module")
def executed(upstream):
    return run_layouts("0.16.1", LAYOUTS)


@pytest.mark.parametrize("model", FIXTURES)
def test_the_provider_values_the_project_reads_are_the_executed_ones(executed, model):
    spec, _ = load_model_spec(MODELS / model)
    values, view = assert_provider_values(executed[(model, 0)], STACK, spec)
    if spec.is_moe:
        assert values["moe_grouped_gemm"] is view["moe_grouped_gemm"] is True


@pytest.mark.parametrize("model", FIXTURES)
def test_the_oracle_builds_on_the_executed_provider_then_verl_s_overrides(executed, model):
    """The oracle's config for the Megatron-Bridge path is verl's converter, the executed provider's values over it
    (verl_side.provider_values, nothing hand-written), then verl's overrides: a provider value the overrides leave
    alone reaches MindSpeed as the provider holds it, even where the converter says otherwise."""
    import verl_side
    from omegaconf import OmegaConf
    from verl.utils.config import omega_conf_to_dataclass

    model_dir = str(MODELS / model)
    run = executed[(model, 0)]["values"]
    engine = omega_conf_to_dataclass(OmegaConf.create({
        "_target_": "verl.workers.config.McoreEngineConfig", "tensor_model_parallel_size": 1,
        "override_transformer_config": {}}))
    _, converter = verl_side.converter_view(model_dir, engine)
    overrides = verl_side.provider_overrides(model_dir, engine)
    held = verl_side.provider_values(model_dir)
    assert set(held) <= set(verl_side.PROVIDER_KEYS) and "seq_length" in held
    for key, value in held.items():
        assert run.get(key, value) == value, (key, run.get(key), value)  # the probe's own run, same provider
    built = {**converter, **held, **overrides}
    assert built["seq_length"] == run["seq_length"]
    assert built["position_embedding_type"] == "rope"
    differs = {k for k in held if k in converter and converter[k] != held[k] and k not in overrides}
    for key in differs:
        assert built[key] == held[key] != converter[key]


ENGINES = [({"tensor_model_parallel_size": 1}, {}),
           ({"tensor_model_parallel_size": 2, "sequence_parallel": True}, {"recompute_granularity": "full"}),
           ({"tensor_model_parallel_size": 4, "sequence_parallel": False, "pipeline_model_parallel_size": 2,
             "virtual_pipeline_model_parallel_size": 2}, {"sequence_parallel": True}),
           ({"expert_model_parallel_size": 8, "expert_tensor_parallel_size": 1, "context_parallel_size": 2},
            {"moe_token_dispatcher_type": "allgather", "use_flash_attn": True})]


@pytest.mark.parametrize("megatron, otc", ENGINES)
def test_the_overrides_check_upstream_hands_the_provider_are_the_ones_verl_s_build_hands_it(megatron, otc):
    """``provider_overrides`` (what ``check --upstream`` drives Megatron-Bridge with) equals what verl 0.9.1's real
    ``_build_tf_config`` passes to ``apply_overrides_and_finalize`` for the same engine config."""
    import verl_side
    from omegaconf import OmegaConf
    from verl.utils.config import omega_conf_to_dataclass

    engine = omega_conf_to_dataclass(OmegaConf.create({
        "_target_": "verl.workers.config.McoreEngineConfig", **megatron, "override_transformer_config": otc}))
    real = verl_side.provider_overrides(str(MODELS / "Qwen3-8B"), engine)
    real = {k: getattr(v, "name", v) for k, v in real.items()}  # the AttnBackend enum, as the probe takes it
    full = {k: getattr(engine, k) for k in ("tensor_model_parallel_size", "pipeline_model_parallel_size",
                                            "expert_model_parallel_size", "expert_tensor_parallel_size",
                                            "context_parallel_size", "virtual_pipeline_model_parallel_size",
                                            "sequence_parallel")}
    assert provider_overrides(full, otc) == real


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


# Megatron-Bridge 0.5.1 on megatron-core 0.18.2 (Python 3.12; the stack verl documents with MindSpeed core_r0.18.0):
# its own environment (upstream._bridge_layer.BRIDGE_ONLY), built once. MindSpeed core_r0.18.0 itself does not run
# here (it imports megatron_adaptor, which is not on the package index): nothing MindSpeed would add to the provider
# is in these values, and no MindSpeed verdict comes from this run.
STACK_18 = build_stack("0.9.1", "core_r0.18.0", GIVEN)
LAYOUTS_18 = [*LAYOUTS, ({}, {"use_flash_attn": True})]


@pytest.fixture(scope="module")
def executed_18(bridge_18):
    return run_layouts("0.18.2", LAYOUTS_18, progress=print)


@pytest.mark.parametrize("model", FIXTURES)
def test_megatron_bridge_0_5_provider_values_are_the_ones_the_project_reads(executed_18, model):
    spec, _ = load_model_spec(MODELS / model)
    assert STACK_18.megatron_bridge == "0.5.1" and STACK_18.megatron_core == "0.18.2"
    assert_provider_values(executed_18[(model, 0)], STACK_18, spec)
    sp = executed_18[(model, 1)]
    assert sp["error"] is None and sp["values"]["sequence_parallel"] is True


@pytest.mark.parametrize("model", FIXTURES)
def test_megatron_bridge_0_5_refuses_an_unknown_override_at_the_line_the_rule_cites(executed_18, model):
    """From 0.5.0 ``apply_overrides_and_finalize`` raises AttributeError on an override the provider lacks; a
    MindSpeed key is refused too unless megatron_adaptor's release patches the provider (never run here)."""
    from verl_mindspeed.rules.stack import _MB_REFUSES

    assert STACK_18.bridge_refuses_unknown()
    for layout in (2, 3):
        error = executed_18[(model, layout)]["error"]
        assert error is not None and error["type"] == "AttributeError", error
        where = error["file"].split("megatron/bridge/")[-1]
        assert where in _MB_REFUSES and f"line {error['line']}" in _MB_REFUSES, (error, _MB_REFUSES)


@pytest.mark.parametrize("model", FIXTURES)
def test_fused_swiglu_on_megatron_bridge_0_5_is_said_inert_exactly_where_the_executed_provider_leaves_it_off(
        resolve_cfg, executed_18, model):
    spec, _ = load_model_spec(MODELS / model)
    res = resolve_cfg({"actor_rollout_ref.actor.megatron.override_transformer_config.use_fused_swiglu": True},
                      release="core_r0.18.0", model=spec, injected=False, stack=STACK_18)
    warned = any(i.rule == "fused-swiglu-inert" for i in res.warnings)
    assert warned is (executed_18[(model, 0)]["values"]["bias_activation_fusion"] is False)
