"""verl 0.9.1's own conversion (``omega_conf_to_dataclass`` via the section's ``_target_``, as its workers do)
accepts every injected megatron section; an unknown key under ``megatron.`` makes it fail, and the
resolver reported that key as an error before."""

from __future__ import annotations

import pytest
from _verl_cases import BASE, CASE_IDS, CASES, ROLES, A, otc, run, section
from omegaconf import OmegaConf

from helpers import require


@pytest.fixture(scope="module")
def verl_config():
    require("verl")
    config = require("verl.utils.config")
    engine = require("verl.workers.config")
    return config.omega_conf_to_dataclass, engine.McoreEngineConfig


def _resolved(cfg):
    OmegaConf.resolve(cfg)  # what verl's TaskRunner.run does before building workers
    return cfg


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_injected_sections_convert(verl_config, case):
    to_dataclass, McoreEngineConfig = verl_config
    r = run([*BASE, *case.overrides], None)
    assert r.res.ok
    cfg = _resolved(r.cfg)
    for role in ROLES:
        engine = to_dataclass(section(cfg, role))
        assert type(engine) is McoreEngineConfig, role
        assert dict(engine.override_transformer_config) == case.expected(role, r.defaults), role
        for key, value in case.megatron.get(role, {}).items():
            assert getattr(engine, key) == value, (role, key)


def test_actor_role_converts_whole(verl_config):
    """The full actor config (McoreActorConfig, via its _target_) carries the injected dict unchanged."""
    to_dataclass, McoreEngineConfig = verl_config
    case = next(c for c in CASES if c.name == "long_context")
    r = run([*BASE, *case.overrides, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1"], None)
    cfg = _resolved(r.cfg)
    actor = to_dataclass(cfg.actor_rollout_ref.actor)
    assert type(actor).__name__ == "McoreActorConfig"
    assert isinstance(actor.megatron, McoreEngineConfig)
    assert dict(actor.megatron.override_transformer_config) == otc(cfg, "actor")
    assert actor.megatron.context_parallel_size == 2


@pytest.mark.parametrize("key, value, near", [
    ("tensor_model_paralel_size", 2, "tensor_model_parallel_size"),  # a typo
    ("use_flash_attn", True, None),  # a dict key written one level too high
])
def test_unknown_megatron_key(verl_config, key, value, near):
    to_dataclass, _ = verl_config
    r = run([*BASE, f"+{A}.{key}={value}"], None, do_inject=False)
    errors = [i for i in r.res.errors if i.rule == "unknown-megatron-key"]
    assert [i.key for i in errors] == [f"{A}.{key}"]
    if near:
        assert errors[0].suggestion == f"{A}.{near}"
    cfg = _resolved(r.cfg)
    with pytest.raises(Exception, match=key) as info:
        to_dataclass(section(cfg, "actor"))
    assert "unexpected keyword argument" in str(info.value)
    # the same config without the key converts: the failure is that key's alone
    with_out = run(list(BASE), None)
    assert type(to_dataclass(section(_resolved(with_out.cfg), "actor"))).__name__ == "McoreEngineConfig"
