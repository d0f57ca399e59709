"""verl 0.9.1's driver refuses router replay R2 with the rollout-correction bypass (``validate_config``); ``check``
refuses the same launch before it, and its line is one verl's own check then accepts. Run with verl's own code: its
dataclass conversion of the composed actor section and its ``_validate_router_replay_config``."""

from __future__ import annotations

import pytest

from helpers import BASIC, require
from verl_mindspeed.compose import compose_argv
from verl_mindspeed.launch import evaluate

BASE = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo", *BASIC]
R2 = "actor_rollout_ref.actor.megatron.router_replay.mode=R2"
BYPASS = "algorithm.rollout_correction.bypass_mode"


def _verl_refuses(argv: list[str]) -> bool:
    config = require("verl.utils.config")
    cfg = compose_argv(argv).cfg
    actor = config.omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)
    try:
        config._validate_router_replay_config(actor, cfg.algorithm.get("rollout_correction", None))
    except ValueError:
        return True
    return False


def _replay(res) -> list:
    return [i for i in res.issues if i.rule == "verl-router-replay"]


@pytest.mark.parametrize("written, refused", [
    ([R2, f"{BYPASS}=True"], True),
    ([R2], False),
    ([f"{BYPASS}=True"], False),
    (["actor_rollout_ref.actor.megatron.router_replay.mode=R3", f"{BYPASS}=True",
      "actor_rollout_ref.rollout.enable_rollout_routing_replay=True"], False),
])
def test_check_refuses_what_verls_driver_refuses(base_cfg, written, refused):
    argv = [*BASE, *written]
    assert _verl_refuses(argv) is refused
    found = [i for i in _replay(evaluate(argv)) if i.key == BYPASS]
    assert bool(found) is refused
    if refused:
        (issue,) = found
        assert issue.severity == "error" and issue.override == f"{BYPASS}=False"
        fixed = [a for a in argv if not a.startswith(BYPASS)] + [issue.override]
        assert not _verl_refuses(fixed) and not _replay(evaluate(fixed))


def test_r3_without_the_rollouts_routes_on_the_installed_verl(base_cfg):
    argv = [*BASE, "actor_rollout_ref.actor.megatron.router_replay.mode=R3"]
    (issue,) = _replay(evaluate(argv))
    assert issue.override == "actor_rollout_ref.rollout.enable_rollout_routing_replay=True"
    assert not _replay(evaluate([*argv, issue.override]))
