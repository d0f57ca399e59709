"""Normalization, unknown keys, roles, injection and idempotence on verl's real tree."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from omegaconf import OmegaConf
from pytest import param

from verl_mindspeed.resolver import inject, resolve

M = "actor_rollout_ref.actor.megatron."
O = M + "override_transformer_config."
MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "models"
REF = "actor_rollout_ref.ref.megatron."


def otc(result, role="actor"):
    return result.roles[role]["override_transformer_config"]


@pytest.mark.parametrize("value, expected", [
    param([0, 7], "0,7", id="list"),
    param(7, "7", id="int"),
    param("0, 7", "0,7", id="spaced-string"),
    param("0,7", "0,7", id="already-right"),
])
def test_noop_layers_become_a_digit_string(resolve_cfg, value, expected):
    result = resolve_cfg({O + "noop_layers": value})
    assert otc(result)["noop_layers"] == expected
    assert result.errors == []


@pytest.mark.parametrize("value", ["a,b", "-1", [0, "x"], True, ""])
def test_bad_noop_layers_are_errors(resolve_cfg, value):
    result = resolve_cfg({O + "noop_layers": value})
    assert [i.rule for i in result.errors] == ["noop-layers-format"]


def test_none_string_becomes_null(resolve_cfg):
    result = resolve_cfg({O + "recompute_granularity": "none"})
    assert otc(result)["recompute_granularity"] is None
    assert [i.rule for i in result.notes if i.key.endswith("recompute_granularity")] == ["recompute-none-string"]


@pytest.mark.parametrize("alias", ["fused_permute_and_unpermute", "fused_permute_unpermute"])
def test_alias_maps_to_both_real_flags_with_a_warning(resolve_cfg, alias):
    result = resolve_cfg({O + alias: True})
    d = otc(result)
    assert alias not in d
    assert d["use_fused_moe_token_permute_and_unpermute"] is True and d["moe_permute_fusion"] is True
    warn = [i for i in result.warnings if i.rule == "alias"]
    assert warn and warn[0].suggestion == O + "use_fused_moe_token_permute_and_unpermute"


def test_flash_attn_defaults_to_true_and_user_value_wins(resolve_cfg):
    assert otc(resolve_cfg())["use_flash_attn"] is True
    assert otc(resolve_cfg({O + "use_flash_attn": False}))["use_flash_attn"] is False


def test_copies_mindspeed_needs(resolve_cfg):
    result = resolve_cfg({M + "context_parallel_size": 2, M + "tensor_model_parallel_size": 2,
                          O + "use_ascend_mc2": True, O + "swap_optimizer": True})
    d = otc(result)
    assert d["context_parallel_size"] == 2
    assert d["tensor_model_parallel_size"] == 2 and d["sequence_parallel"] is True
    assert d["use_distributed_optimizer"] is True
    assert result.errors == []


@pytest.mark.parametrize("key, severity, suggestion", [
    param("use_flash_atn", "error", "use_flash_attn", id="one-edit"),
    param("use_fused_rmsnrom", "error", "use_fused_rmsnorm", id="swap"),
    param("Swap_Optimizer", "error", "swap_optimizer", id="case"),
    param("totally_made_up_option_xyz", "warning", None, id="far"),
])
def test_unknown_keys(resolve_cfg, key, severity, suggestion):
    result = resolve_cfg({O + key: True})
    found = [i for i in result.issues if i.rule == "unknown-key"]
    assert [i.severity for i in found] == [severity]
    assert found[0].suggestion == (O + suggestion if suggestion else None)
    assert otc(result)[key] is True, "an unknown key is passed through, never dropped"


def test_strict_makes_far_keys_errors(resolve_cfg):
    result = resolve_cfg({O + "totally_made_up_option_xyz": 1}, strict=True)
    assert [i.rule for i in result.errors] == ["unknown-key"]


def test_unknown_key_under_megatron(resolve_cfg):
    result = resolve_cfg({M + "tensor_model_paralel_size": 2, M + "use_flash_attn": True, M + "grad_offload": True})
    by_key = {i.key: i for i in result.errors}
    assert by_key[M + "tensor_model_paralel_size"].suggestion == M + "tensor_model_parallel_size"
    assert by_key[M + "grad_offload"].suggestion is None
    assert by_key[M + "use_flash_attn"].suggestion == O + "use_flash_attn"


@pytest.mark.parametrize("key, value, fragment", [
    param("use_flash_attn", "yes", "use_flash_attn must be True or False, got 'yes' (str)", id="bool-yes"),
    param("use_ascend_mc2", "maybe", "use_ascend_mc2 must be True or False, got 'maybe' (str)", id="bool-maybe"),
    param("recompute_num_layers", 0, "recompute_num_layers must be an integer >= 1, got 0", id="int-min"),
    param("moe_token_dispatcher_type", "alltoal",
          "moe_token_dispatcher_type must be one of allgather, alltoall, flex, alltoall_seq; got 'alltoal'; "
          "did you mean 'alltoall'?", id="enum-near"),
    param("context_parallel_algo", "ring", "context_parallel_algo must be one of", id="enum-far"),
    param("moe_alltoall_overlap_comm", "on", "moe_alltoall_overlap_comm must be True or False", id="mindspeed-arg"),
])
def test_values(resolve_cfg, key, value, fragment):
    result = resolve_cfg({O + key: value})
    assert any(i.rule == "value" and fragment in i.message for i in result.errors), [i.line() for i in result.errors]


@pytest.mark.parametrize("value", ["yes", 1])
def test_a_refused_value_draws_no_warning_judged_on_it(resolve_cfg, value):
    """use_flash_attn=1 is a value error; a rule reading the refused value warned as well that the key 'is not in
    the dict verl passes', which the user plainly wrote: a warning judged on a refused value is not shown."""
    result = resolve_cfg({O + "use_flash_attn": value})
    assert [i.rule for i in result.errors if i.key == O + "use_flash_attn"] == ["value"]
    assert not [i.line() for i in result.warnings if i.key == O + "use_flash_attn"]


def test_ref_inherits_the_actor(resolve_cfg):
    result = resolve_cfg({O + "use_fused_rmsnorm": True, O + "recompute_granularity": "full",
                          O + "recompute_method": "block", O + "recompute_num_layers": 2})
    assert otc(result, "ref") == otc(result, "actor")
    assert not [i for i in result.issues if i.rule == "ref-lost-inherited"]


def test_ref_write_that_replaced_the_dict_is_named(resolve_cfg):
    result = resolve_cfg({O + "use_fused_rmsnorm": True, O + "recompute_granularity": "full",
                          O + "recompute_method": "block", O + "recompute_num_layers": 2,
                          REF + "override_transformer_config": {"use_flash_attn": True}})
    warn = [i for i in result.warnings if i.rule == "ref-lost-inherited"]
    assert len(warn) == 1
    assert "use_fused_rmsnorm" in warn[0].message and "recompute_granularity" in warn[0].message
    ref = otc(result, "ref")
    assert ref["use_fused_rmsnorm"] is True, "the MindSpeed switch is restored for ref"
    assert "recompute_granularity" not in ref, "megatron-native keys stay per role"


def test_roles_with_different_mindspeed_switches_warn(resolve_cfg):
    result = resolve_cfg({O + "use_fused_rmsnorm": True,
                          REF + "override_transformer_config": {"use_fused_rmsnorm": False}})
    assert [i.key for i in result.warnings if i.rule == "role-switches-differ"] == [
        REF + "override_transformer_config.use_fused_rmsnorm"]


def test_critic_gets_actor_switches_only_when_present(resolve_cfg):
    result = resolve_cfg({"algorithm.adv_estimator": "gae", O + "use_fused_swiglu": True,
                          O + "recompute_granularity": "selective"})
    assert set(result.roles) == {"actor", "ref", "critic"}
    critic = otc(result, "critic")
    assert critic["use_fused_swiglu"] is True
    assert critic["recompute_granularity"] is None, "critic keeps its own megatron-native settings"


def test_inject_then_resolve_is_idempotent(make_cfg, base_cfg):
    settings = {O + "noop_layers": [0, 27], O + "num_layers": 28, O + "fused_permute_and_unpermute": True,
                M + "context_parallel_size": 2, "critic.megatron.context_parallel_size": 2,
                "algorithm.adv_estimator": "gae"}
    cfg = make_cfg(settings)
    kw = dict(known_megatron_keys=base_cfg.tree.known_megatron_keys, otc_defaults=base_cfg.tree.otc_defaults,
              injected=True)
    first = resolve(cfg, **kw)
    inject(cfg, first)
    second = resolve(cfg, **kw)
    assert second.roles == first.roles
    assert second.errors == []
    again = copy.deepcopy(cfg)
    inject(again, second)
    assert OmegaConf.to_container(again, resolve=True) == OmegaConf.to_container(cfg, resolve=True)


def test_injected_config_survives_verl_style_resolve(make_cfg, base_cfg):
    cfg = make_cfg({O + "use_ascend_mc2": True, M + "tensor_model_parallel_size": 2})
    result = resolve(cfg, injected=True)
    inject(cfg, result)
    OmegaConf.resolve(cfg)  # what verl's TaskRunner.run does
    assert cfg.actor_rollout_ref.ref.megatron.override_transformer_config.use_ascend_mc2 is True
    assert cfg.actor_rollout_ref.actor.megatron.override_transformer_config.tensor_model_parallel_size == 2


def test_fsdp_strategy_reports_no_effect(resolve_cfg):
    result = resolve_cfg({"actor_rollout_ref.actor.strategy": "fsdp", O + "use_fused_rmsnorm": True})
    assert [i.rule for i in result.warnings] == ["strategy-not-megatron"]


def test_stray_preset_key_is_an_error(resolve_cfg):
    result = resolve_cfg({"mindspeed": "dnse"})
    assert [i.rule for i in result.errors] == ["preset-not-found"]


@pytest.mark.parametrize("nodes, world", [(1, 8), (2, 16)])
def test_the_upstream_case_spans_the_launch_device_count(resolve_cfg, nodes, world):
    """``check --upstream`` initializes megatron's groups over trainer.nnodes x trainer.n_gpus_per_node, as verl's
    trainer pool does, so megatron's own divisibility checks run on the real device count."""
    from verl_mindspeed.upstream import case_of

    res = resolve_cfg({"trainer.nnodes": nodes}, injected=False)
    step = next(s for s in case_of(res.simulation)["steps"] if s["op"] == "parallel")
    assert res.simulation.world == world and step["sizes"]["world"] == world


@pytest.mark.parametrize("switch, noted", [
    ("use_ascend_coc", True),  # mc2-conflicts names it as a conflict only: its own checks are MindSpeed's alone
    ("quant_grads", True),  # named by swap-optimizer-conflicts, not checked for itself
    ("moe_alltoall_mc2", False),  # moe-alltoall-mc2 mirrors its validate_args
])
def test_a_switch_outside_the_guide_is_noted_unless_a_rule_covers_it(resolve_cfg, switch, noted):
    res = resolve_cfg({O + switch: True}, injected=False, release="26.1.0_core_r0.12.1")
    notes = [i for i in res.notes if i.rule == "no-hand-rule" and i.key.endswith("." + switch)]
    assert bool(notes) is noted, res.notes


def test_the_upstream_case_builds_on_the_executed_bridge_values_then_the_bridge_view_and_the_dict(resolve_cfg):
    """A value the executed provider holds replaces the converter's; the role's dict still wins over it."""
    from verl_mindspeed.model import load_model_spec
    from verl_mindspeed.upstream import case_of, model_kwargs

    spec, _ = load_model_spec(MODELS / "Qwen3-30B-A3B")
    res = resolve_cfg({O + "masked_softmax_fusion": True}, injected=False, model=spec)
    provider = {"actor": {"bias_activation_fusion": False, "masked_softmax_fusion": False}}
    built = {s["role"]: s["kwargs"] for s in case_of(res.simulation, spec, provider)["steps"] if s["op"] == "build"}
    assert model_kwargs(spec)[1]["bias_activation_fusion"] is True
    assert built["actor"]["bias_activation_fusion"] is False
    assert built["actor"]["masked_softmax_fusion"] is True  # the dict over the provider
    assert all(kwargs["bias_activation_fusion"] is True for role, kwargs in built.items() if role != "actor")
