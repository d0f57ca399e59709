"""The drop-in launcher: verl's own entry receives the validated, injected config; errors stop it first."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _preset_cases import after_preset, corpus_argv, require
from omegaconf import OmegaConf

from helpers import BASIC
from verl_mindspeed.catalog import OTC, ROLE_PREFIXES
from verl_mindspeed.integrations import launcher
from verl_mindspeed.integrations.hydra_callback import INSTALL_OVERRIDE

A, R, C = (ROLE_PREFIXES[r] for r in ("actor", "ref", "critic"))
BAD = f"+{A}.{OTC}.recompute_granularity=full"
ALIAS = f"+{A}.{OTC}.fused_permute_and_unpermute=True"


def test_launch_argv_installs_the_callback_once_with_its_options():
    argv = launcher.launch_argv(["--", "+mindspeed=dense", "a=1"], strict=True, release="2.3.0_core_r0.12.1")
    assert argv == ["+mindspeed=dense", "a=1", INSTALL_OVERRIDE, "++hydra.callbacks.verl_mindspeed.strict=true",
                    "++hydra.callbacks.verl_mindspeed.release=2.3.0_core_r0.12.1"]


def test_verl_main_body_receives_the_injected_config(monkeypatch, tmp_path, capsys):
    """In-process: real Hydra, real verl ``main`` (0.9.1: device detection, validate_config); only Ray is cut."""
    require("ray")
    main_ppo = require("verl.trainer.main_ppo")
    received = []
    monkeypatch.setattr(main_ppo, "run_ppo", lambda config, task_runner_class=None: received.append(config))
    monkeypatch.chdir(tmp_path)
    argv = after_preset(corpus_argv("qwen3_8b_dense_grpo"), "dense") + [
        ALIAS, f"+{A}.{OTC}.moe_token_dispatcher_type=alltoall", "+mindspeed=dense"]
    assert launcher.run(argv) == 0
    (config,) = received
    for prefix in (A, R):
        otc = OmegaConf.to_container(OmegaConf.select(config, f"{prefix}.{OTC}"), resolve=True)
        assert otc["use_fused_moe_token_permute_and_unpermute"] is True and "fused_permute_and_unpermute" not in otc
        assert otc["use_fused_rmsnorm"] is True and otc["normalization"] == "RMSNorm"
    assert "OK: 0 errors" in capsys.readouterr().out


@pytest.mark.parametrize("how", ["module", "console-script"])
def test_the_launcher_stops_a_bad_launch_before_ray(tmp_path, how):
    require("ray")
    entry = ([sys.executable, "-m", "verl_mindspeed.main_ppo"] if how == "module"
             else [str(Path(sys.executable).parent / "verl-mindspeed"), "run"])
    argv = entry + ["--config-path=config", "--config-name=ppo_megatron_trainer", BAD]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "recompute_granularity=full requires recompute_method" in proc.stderr
    assert "ray init kwargs" not in proc.stdout


FAKE_RECIPE = """
    import json, sys
    import hydra
    from omegaconf import OmegaConf

    @hydra.main(config_path={config_dir!r}, config_name="ppo_megatron_trainer", version_base=None)
    def main(config):
        with open({out!r}, "w") as f:
            json.dump(OmegaConf.to_container(config, resolve=True), f)
"""


def test_another_hydra_entry_through_the_environment(tmp_path):
    """VERL_MINDSPEED_ENTRY: a recipe's own @hydra.main gets the injected config (here a stand-in recipe)."""
    from verl_mindspeed.compose import find_verl_tree

    require("verl")
    out = tmp_path / "received.json"
    (tmp_path / "fake_recipe.py").write_text(textwrap.dedent(FAKE_RECIPE.format(
        config_dir=str(find_verl_tree().config_dir), out=str(out))))
    env = {**os.environ, "VERL_MINDSPEED_ENTRY": "fake_recipe",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    argv = [sys.executable, "-m", "verl_mindspeed.main_ppo", "algorithm.adv_estimator=gae", ALIAS,
            f"+{A}.{OTC}.moe_token_dispatcher_type=alltoall", "+mindspeed=memory_saving", *BASIC]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    import json

    received = json.loads(out.read_text())
    critic = received["critic"]["megatron"][OTC]
    actor = received["actor_rollout_ref"]["actor"]["megatron"][OTC]
    assert actor["swap_optimizer"] is True and actor["use_fused_moe_token_permute_and_unpermute"] is True
    assert "fused_permute_and_unpermute" not in actor
    # critic has its own dict in verl; the MindSpeed switches of the shared process reach it by injection
    assert critic["swap_optimizer"] is True and critic["use_flash_attn"] is True


HYDRA_SHAPES = [
    ["a=1", "b=2"],
    ["--config-path=config", "--config-name=ppo_megatron_trainer", "a=1", "--cfg", "job"],
    ["a=1", "--cfg", "job", "--resolve"],
    ["--cfg", "job", "a=1"],
    ["-cp", "config", "-cn", "ppo_megatron_trainer", "a=1", "-m"],
    ["a=1", "hydra.run.dir=/tmp/x", "--info", "config"],
    ["--cfg", "job"],
    ["--help"],
    ["-m", "--config-name", "ppo_megatron_trainer"],
    ["a=-1", "-cd", "/tmp", "--"],
]


@pytest.mark.parametrize("argv", HYDRA_SHAPES, ids=[" ".join(a) for a in HYDRA_SHAPES])
def test_the_launchers_overrides_join_the_users_overrides(argv):
    """Whatever the user's flags, Hydra's own parser accepts the launcher's argv and reads every override."""
    from hydra._internal.utils import get_args_parser

    user = get_args_parser().parse_args([a for a in argv if a != "--"])
    full = launcher.launch_argv(argv, strict=True, model_config="/models/my model/config.json", lang="zh")
    parsed = get_args_parser().parse_args(full)  # argparse exits on 'unrecognized arguments'
    ours = [o for o in parsed.overrides if o.startswith("++hydra.callbacks.verl_mindspeed")]
    assert [o for o in parsed.overrides if o not in ours] == user.overrides
    assert INSTALL_OVERRIDE in ours and "++hydra.callbacks.verl_mindspeed.strict=true" in ours
    assert "++hydra.callbacks.verl_mindspeed.model_config='/models/my model/config.json'" in ours
    assert {k: v for k, v in vars(parsed).items() if k != "overrides"} == \
        {k: v for k, v in vars(user).items() if k != "overrides"}


def test_hydra_flags_through_verls_real_entry(monkeypatch, tmp_path, capsys):
    """--cfg job after the overrides, with a hydra.* override: verl's @hydra.main prints the job config."""
    require("verl.trainer.main_ppo")
    monkeypatch.chdir(tmp_path)
    argv = ["--config-path=config", "--config-name=ppo_megatron_trainer", f"{A}.tensor_model_parallel_size=2",
            f"hydra.run.dir={tmp_path}/out", "--cfg", "job", "--resolve"]
    assert launcher.run(argv) == 0
    out = capsys.readouterr().out
    assert "actor_rollout_ref:" in out and "tensor_model_parallel_size: 2" in out


def test_hydra_help_through_verls_real_entry(monkeypatch, tmp_path, capsys):
    require("verl.trainer.main_ppo")
    monkeypatch.chdir(tmp_path)
    assert launcher.run(["--config-name=ppo_megatron_trainer", "--help"]) == 0
    assert "Powered by Hydra" in capsys.readouterr().out


def test_a_missing_entry_is_one_line(monkeypatch, capsys):
    monkeypatch.setenv(launcher.ENTRY_ENV, "no_such_module_anywhere")
    assert launcher.run(["a=1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("verl-mindspeed: cannot import the entry no_such_module_anywhere") and err.count("\n") == 1


def test_run_command_reports_a_missing_args_file(capsys):
    from verl_mindspeed.cli import main

    assert main(["run", "--args-file", "/nonexistent.args"]) == 2
    assert "cannot read /nonexistent.args" in capsys.readouterr().err
