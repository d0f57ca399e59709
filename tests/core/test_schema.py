"""The typed schema: one documented field per catalogue flag, strict validation, Hydra round trip."""

from __future__ import annotations

import ast
import dataclasses
import inspect

import pytest
from omegaconf import OmegaConf, ValidationError

from verl_mindspeed import ConfigError, MindSpeedConfig, TransformerOverrides, catalog
from verl_mindspeed.schema import MegatronSettings, _generated, structured


def test_fields_mirror_the_catalogue():
    otc = {f.name for f in dataclasses.fields(TransformerOverrides)}
    meg = {f.name for f in dataclasses.fields(MegatronSettings)}
    assert otc == {f.name for f in catalog.flags("otc")}
    assert meg == {f.name for f in catalog.flags("megatron")}


def test_every_field_has_a_docstring():
    tree = ast.parse(inspect.getsource(_generated))
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        body = cls.body
        for i, node in enumerate(body):
            if isinstance(node, ast.AnnAssign):
                nxt = body[i + 1] if i + 1 < len(body) else None
                assert isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant), node.target.id


def test_keyword_only():
    with pytest.raises(TypeError):
        TransformerOverrides(True)  # type: ignore[misc]


@pytest.mark.parametrize("kwargs, fragment", [
    ({"use_flash_attn": "yes"}, "use_flash_attn='yes'"),
    ({"recompute_granularity": "ful"}, "recompute_granularity='ful'"),
    ({"recompute_modules": ["core_attn", "bogus"]}, "recompute_modules"),
    ({"swap_optimizer_times": "16"}, "swap_optimizer_times='16'"),
])
def test_strict_validation(kwargs, fragment):
    with pytest.raises(ConfigError) as info:
        TransformerOverrides(**kwargs)
    assert fragment in str(info.value)


def test_collects_every_problem():
    with pytest.raises(ConfigError) as info:
        MindSpeedConfig(tensor_model_parallel_size="2",
                        override_transformer_config=TransformerOverrides(use_flash_attn=True))
    assert len(info.value.issues) == 1
    with pytest.raises(ConfigError) as info:
        TransformerOverrides(use_flash_attn=1, use_ascend_mc2="on")
    assert len(info.value.issues) == 2


def test_dict_is_in_mindspeed_form():
    cfg = MindSpeedConfig(override_transformer_config=TransformerOverrides(
        noop_layers=[0, 7], use_fused_moe_token_permute_and_unpermute=True))
    assert cfg.to_override_transformer_config() == {
        "noop_layers": "0,7", "use_fused_moe_token_permute_and_unpermute": True, "moe_permute_fusion": True}


def test_structured_twin_is_accepted_by_omegaconf():
    node = OmegaConf.structured(structured(MindSpeedConfig))
    assert set(node.override_transformer_config) == {f.name for f in catalog.flags("otc")}
    node.override_transformer_config.use_flash_attn = True
    with pytest.raises(ValidationError):
        node.override_transformer_config.use_flash_attn = "maybe"


def test_overrides_round_trip_through_verl_hydra(base_cfg):
    from verl_mindspeed.compose import compose_argv

    cfg = MindSpeedConfig(
        tensor_model_parallel_size=2, context_parallel_size=2,
        override_transformer_config=TransformerOverrides(
            use_flash_attn=True, sequence_parallel=True, noop_layers="0,27", num_layers=28,
            recompute_granularity="full", recompute_method="uniform", recompute_num_layers=1,
            recompute_modules=["core_attn", "mlp"], context_parallel_size=2),
    )
    comp = compose_argv(["--config-name=ppo_megatron_trainer", *cfg.to_overrides("actor")])
    assert comp.issues == []
    node = comp.cfg.actor_rollout_ref.actor.megatron
    assert node.tensor_model_parallel_size == 2 and node.context_parallel_size == 2
    got = OmegaConf.to_container(node.override_transformer_config)
    for key, value in cfg.to_override_transformer_config().items():
        assert got[key] == value, key
