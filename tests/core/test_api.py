"""The Python API: one import place, no name shadowed by a subpackage, validation that says what is wrong."""

from __future__ import annotations

import copy
import importlib
import pkgutil
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

import verl_mindspeed
from verl_mindspeed import ConfigError, MindSpeedConfig, TransformerOverrides, catalog

O = "actor_rollout_ref.actor.megatron.override_transformer_config."
M = "actor_rollout_ref.actor.megatron."


def _all_modules() -> list[str]:
    return [m.name for m in pkgutil.walk_packages(verl_mindspeed.__path__, "verl_mindspeed.")
            if ".conf" not in m.name and not m.name.endswith("__main__") and "main_ppo" not in m.name]


def test_no_export_is_shadowed_by_a_subpackage():
    for name in _all_modules():
        importlib.import_module(name)  # importing a subpackage sets an attribute of the package
    submodules = {n.split(".")[1] for n in _all_modules()}
    for name in verl_mindspeed.__all__:
        assert name not in submodules, name
        assert not isinstance(getattr(verl_mindspeed, name), types.ModuleType), name
    from verl_mindspeed import compose_argv, evaluate, inject, resolve

    assert all(callable(f) for f in (compose_argv, evaluate, inject, resolve))


@pytest.mark.parametrize("kwargs, key, fragment", [
    ({"tensor_model_parallel_size": 0}, "tensor_model_parallel_size", "must be an integer >= 1"),
    ({"virtual_pipeline_model_parallel_size": -2}, "virtual_pipeline_model_parallel_size", ">= 1"),
    ({"tensor_model_paralel_size": 2}, "tensor_model_paralel_size", "did you mean 'tensor_model_parallel_size'"),
    ({"use_flash_attn": True}, "use_flash_attn", "belongs in MindSpeedConfig(override_transformer_config="),
    ({"override_transformer_config": {"use_flash_atn": True}}, "override_transformer_config.use_flash_atn",
     "did you mean 'use_flash_attn'"),
    ({"override_transformer_config": {"recompute_num_layers": 0}}, "override_transformer_config.recompute_num_layers",
     ">= 1"),
    ({"override_transformer_config": 3}, "override_transformer_config", "must be a TransformerOverrides or a dict"),
])
def test_mindspeed_config_validates(kwargs, key, fragment):
    with pytest.raises(ConfigError) as info:
        MindSpeedConfig(**kwargs)
    (issue,) = info.value.issues
    assert issue.key == key and fragment in issue.message


def test_transformer_overrides_unknown_field_is_a_config_error():
    with pytest.raises(ConfigError) as info:
        TransformerOverrides(use_flash_atn=True)
    (issue,) = info.value.issues
    assert issue.suggestion == "use_flash_attn"
    assert "您是不是想用 'use_flash_attn'" in info.value.render("zh")
    with pytest.raises(ConfigError, match="belongs in MindSpeedConfig"):
        TransformerOverrides(tensor_model_parallel_size=2)


def test_a_dict_is_accepted_for_the_overrides():
    cfg = MindSpeedConfig(override_transformer_config={"use_flash_attn": True})
    assert cfg.to_override_transformer_config() == {"use_flash_attn": True}


def test_generated_constraints_follow_the_catalogue():
    for flag in catalog.flags("otc"):
        if flag.minimum is not None:
            with pytest.raises(ConfigError):
                TransformerOverrides(**{flag.name: flag.minimum - 1})
            TransformerOverrides(**{flag.name: flag.minimum})
        if flag.type == "str" and flag.choices:
            with pytest.raises(ConfigError):
                TransformerOverrides(**{flag.name: flag.choices[0] + "x"})


VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**12), st.floats(allow_nan=True), st.text(max_size=8),
                   st.lists(st.integers(-2, 9), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(),
                                                                             max_size=2))
NAMES = st.one_of(st.sampled_from([f.name for f in catalog.flags("otc")] + [f.name for f in catalog.flags("megatron")]
                                  + ["override_transformer_config", "use_flash_atn"]), st.text(min_size=1, max_size=12))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(NAMES, VALUES, max_size=4), st.booleans())
def test_any_keyword_arguments_build_or_raise_config_error(kwargs, outer):
    cls = MindSpeedConfig if outer else TransformerOverrides
    try:
        cfg = cls(**kwargs)
    except ConfigError as exc:
        assert exc.issues and all(i.severity == "error" for i in exc.issues)
        exc.render("zh")
        return
    if outer:
        cfg.to_overrides()


def test_inject_refuses_a_resolution_with_errors(make_cfg):
    from verl_mindspeed import inject, resolve

    cfg = make_cfg({O + "use_ascend_mc2": True, M + "tensor_model_parallel_size": 1})
    before = OmegaConf.to_container(copy.deepcopy(cfg), resolve=False)
    result = resolve(cfg, injected=True)
    assert result.errors
    with pytest.raises(ConfigError):
        inject(cfg, result)
    assert OmegaConf.to_container(cfg, resolve=False) == before
    inject(cfg, result, force=True)
    assert cfg.actor_rollout_ref.actor.megatron.override_transformer_config.use_flash_attn is True
