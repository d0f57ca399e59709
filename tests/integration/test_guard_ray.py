"""The guard's switch travels from the Hydra callback to Ray workers the way verl starts Ray, and ``import verl``
there installs the guard through the ``verl.plugins`` entry point."""

from __future__ import annotations

import os
from pathlib import Path

import _guard_ray_side
import pytest
from omegaconf import OmegaConf

from helpers import BASIC, require
from verl_mindspeed.compose import compose_argv
from verl_mindspeed.integrations import guard
from verl_mindspeed.integrations.hydra_callback import MindSpeedCallback

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
BASE = ["--config-name=ppo_megatron_trainer", "+mindspeed=validate", *BASIC]
ENV_PATH = "ray_kwargs.ray_init.runtime_env.env_vars." + guard.ENV


@pytest.fixture
def clean_env(monkeypatch):
    monkeypatch.delenv(guard.ENV, raising=False)
    monkeypatch.delenv("VERL_USE_EXTERNAL_PLUGINS", raising=False)
    return monkeypatch


def test_the_callback_exports_the_switch_only_when_asked(clean_env, capsys):
    require("verl")
    cfg = compose_argv(BASE).cfg
    MindSpeedCallback().on_run_start(cfg)
    assert OmegaConf.select(cfg, ENV_PATH) is None and guard.ENV not in os.environ
    MindSpeedCallback(guard=True).on_run_start(cfg)
    assert OmegaConf.select(cfg, ENV_PATH) == "1" and os.environ[guard.ENV] == "1"


def test_a_switch_set_on_the_driver_is_exported_too(clean_env, capsys):
    require("verl")
    clean_env.setenv(guard.ENV, "1")
    cfg = compose_argv(BASE).cfg
    MindSpeedCallback().on_run_start(cfg)
    assert OmegaConf.select(cfg, ENV_PATH) == "1"


def test_ray_workers_get_the_switch_from_verls_runtime_env(clean_env, tmp_path, capsys):
    ray = require("ray")
    require("verl")
    from verl.trainer.constants_ppo import get_ppo_ray_runtime_env

    cfg = compose_argv(BASE).cfg
    MindSpeedCallback(guard=True).on_run_start(cfg)
    # A cluster started elsewhere does not inherit the driver's environment: drop the switch here, so only the
    # runtime env can carry it (as verl's run_ppo builds it for ray.init).
    clean_env.delenv(guard.ENV)
    runtime_env = OmegaConf.to_container(OmegaConf.merge(get_ppo_ray_runtime_env(cfg),
                                                         cfg.ray_kwargs.ray_init.runtime_env))
    dist = tmp_path / "verl_mindspeed_guard_probe-0.dist-info"  # the entry point, as an installed wheel declares it
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: verl-mindspeed-guard-probe\nVersion: 0\n")
    (dist / "entry_points.txt").write_text("[verl.plugins]\nverl_mindspeed = verl_mindspeed.integrations.guard\n")
    old = os.environ.get("PYTHONPATH")
    clean_env.setenv("PYTHONPATH", os.pathsep.join([str(HERE), str(tmp_path), str(SRC), *([old] if old else [])]))
    clean_env.setenv("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1",
             runtime_env=runtime_env)
    try:
        runner = ray.remote(num_cpus=0)(_guard_ray_side.Runner).remote()
        assert ray.get(runner.run.remote(), timeout=300) == ("1", True, "1")
    finally:
        ray.shutdown()
