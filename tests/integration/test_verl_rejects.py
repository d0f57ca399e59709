"""What check says about a ``+key`` outside MindSpeed's dict is what verl 0.9.1's own conversion does with it.

verl turns sections with a ``_target_`` into dataclasses (``verl.utils.config.omega_conf_to_dataclass``): a
key its class has no field for raises ``TypeError``; a field its YAML leaves out is accepted; dict-typed fields
take anything. The check reads those fields from verl's sources with ``ast``; here verl itself decides.
"""

from __future__ import annotations

import dataclasses

import pytest
from omegaconf import OmegaConf

from helpers import BASIC, require
from verl_mindspeed.launch import evaluate

BASE = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo",
        "actor_rollout_ref.actor.use_kl_loss=True", "actor_rollout_ref.rollout.name=vllm", *BASIC]


@pytest.fixture(scope="module")
def to_dataclass():
    require("verl")
    return require("verl.utils.config").omega_conf_to_dataclass


def _verl_accepts(to_dataclass, argv: list[str], section: str) -> bool:
    from verl_mindspeed.compose import compose_argv

    cfg = compose_argv(argv).cfg
    OmegaConf.resolve(cfg)
    try:
        to_dataclass(OmegaConf.select(cfg, section))
    except Exception as exc:  # noqa: BLE001 - hydra wraps the TypeError in an InstantiationException
        assert "unexpected keyword argument" in str(exc), exc
        return False
    return True


def _unlisted_field(cls_path: str, section: str) -> str:
    """A field of verl's dataclass that its YAML section leaves out (so '+' is the way to set it)."""
    from verl_mindspeed.compose import compose_argv

    module, _, name = cls_path.rpartition(".")
    cls = getattr(require(module), name)
    present = set(OmegaConf.select(compose_argv(BASE).cfg, section).keys())
    simple = [f.name for f in dataclasses.fields(cls)
              if f.init and not f.name.startswith("_") and f.name not in present and f.type in (bool, "bool")]
    if not simple:
        pytest.skip(f"every bool field of {name} is in verl's YAML")
    return simple[0]


@pytest.mark.parametrize("section, key, value", [
    ("actor_rollout_ref.rollout", "rollout_world_size", "8"),
    ("actor_rollout_ref.rollout", "enable_expert_parallel", "True"),
    ("actor_rollout_ref.actor", "load_weight", "True"),
    ("actor_rollout_ref.actor.megatron", "grad_offload", "True"),
    ("algorithm", "use_pf_ppo_typo", "True"),
])
def test_keys_verl_rejects_are_errors(to_dataclass, section, key, value):
    argv = [*BASE, f"+{section}.{key}={value}"]
    assert not _verl_accepts(to_dataclass, argv, section)
    errors = [i for i in evaluate(argv).errors if i.key == f"{section}.{key}"]
    assert len(errors) == 1 and errors[0].override is None


def test_a_field_verls_yaml_leaves_out_is_accepted(to_dataclass):
    field = _unlisted_field("verl.workers.config.RolloutConfig", "actor_rollout_ref.rollout")
    argv = [*BASE, f"+actor_rollout_ref.rollout.{field}=True"]
    assert _verl_accepts(to_dataclass, argv, "actor_rollout_ref.rollout")
    assert [i for i in evaluate(argv).errors if field in i.key] == []


@pytest.mark.parametrize("line", [
    "+actor_rollout_ref.rollout.engine_kwargs.vllm.compilation_config.cudagraph_mode=FULL_DECODE_ONLY",
    "+actor_rollout_ref.actor.megatron.override_ddp_config.bucket_size=40000000",
    "+actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload=True",
])
def test_dict_fields_take_any_key(to_dataclass, line):
    section = (line[1:].split(".engine_kwargs")[0].split(".override_ddp_config")[0]
               .split(".override_optimizer_config")[0])
    argv = [*BASE, line]
    assert _verl_accepts(to_dataclass, argv, section)
    assert evaluate(argv).errors == []
