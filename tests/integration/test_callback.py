"""The Hydra callback: validation and injection in the object Hydra hands to verl, and the stop before Ray."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from _preset_cases import launch, require
from omegaconf import OmegaConf, open_dict

from helpers import BASIC
from verl_mindspeed.catalog import OTC, ROLE_PREFIXES
from verl_mindspeed.compose import compose_argv
from verl_mindspeed.integrations.hydra_callback import MindSpeedCallback

A, R, C = (ROLE_PREFIXES[r] for r in ("actor", "ref", "critic"))
BASE = ["--config-name=ppo_megatron_trainer", "actor_rollout_ref.actor.use_kl_loss=True",
        "algorithm.adv_estimator=gae", *BASIC]
BAD = f"+{A}.{OTC}.recompute_granularity=full"


@pytest.fixture(autouse=True)
def _verl():
    require("verl")


def test_on_run_start_injects_into_the_object_it_receives(capsys):
    cfg = compose_argv(BASE + ["+mindspeed=validate", "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2",
                               "critic.megatron.tensor_model_parallel_size=2",
                               f"+{A}.{OTC}.fused_permute_and_unpermute=True",
                               f"+{A}.{OTC}.moe_token_dispatcher_type=alltoall",
                               f"++{A}.{OTC}.recompute_granularity=none"]).cfg
    MindSpeedCallback().on_run_start(cfg)  # returns nothing: only the object itself can carry the result
    for prefix in (A, R, C):
        otc = OmegaConf.to_container(OmegaConf.select(cfg, f"{prefix}.{OTC}"), resolve=True)
        assert otc["use_fused_moe_token_permute_and_unpermute"] is True and otc["moe_permute_fusion"] is True, prefix
        assert "fused_permute_and_unpermute" not in otc, prefix
        assert otc["use_flash_attn"] is True, prefix
    actor = OmegaConf.to_container(OmegaConf.select(cfg, f"{A}.{OTC}"))
    assert actor["recompute_granularity"] is None and actor["moe_token_dispatcher_type"] == "alltoall"
    out = capsys.readouterr().out
    assert "OK: 0 errors" in out and "roles checked: actor, ref, critic" in out


def test_errors_exit_before_anything_else_and_leave_the_config_untouched(capsys):
    cfg = compose_argv(BASE + ["+mindspeed=validate", BAD]).cfg
    before = OmegaConf.to_container(cfg)
    with pytest.raises(SystemExit) as exc:
        MindSpeedCallback().on_run_start(cfg)
    assert exc.value.code == 1
    assert OmegaConf.to_container(cfg) == before
    err = capsys.readouterr().err
    assert "recompute_granularity=full requires recompute_method" in err
    assert f"fix:  ++{A}.{OTC}.recompute_method=uniform" in err
    assert "stopping before Ray starts" in err


def test_a_preset_that_hydra_did_not_find_stops_the_run(capsys):
    cfg = compose_argv(BASE).cfg
    with open_dict(cfg):
        cfg.mindspeed = "dense"  # what +mindspeed=dense gives when the group is not on the search path
    with pytest.raises(SystemExit) as exc:
        MindSpeedCallback().on_run_start(cfg)
    assert exc.value.code == 1
    assert "+mindspeed=dense added a plain key instead of loading a preset" in capsys.readouterr().err


def test_options_reach_the_callback(capsys):
    # MindSpeed 2.2.0 runs on megatron-core 0.12.1, where only mbridge builds the models (the ref follows the actor)
    cfg = compose_argv(BASE + ["+mindspeed=validate", "actor_rollout_ref.actor.megatron.vanilla_mbridge=True",
                              "critic.megatron.vanilla_mbridge=True"]).cfg
    MindSpeedCallback(quiet=True, release="2.2.0_core_r0.12.1").on_run_start(cfg)
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("OK: 0 errors")


def test_the_callback_imports_neither_torch_nor_verl():
    code = (
        "import sys\n"
        "from verl_mindspeed.compose import compose_argv\n"
        "from verl_mindspeed.integrations.hydra_callback import MindSpeedCallback\n"
        f"cfg = compose_argv(['--config-name=ppo_megatron_trainer', '+mindspeed=dense', *{BASIC!r}]).cfg\n"
        "MindSpeedCallback(quiet=True).on_run_start(cfg)\n"
        "heavy = sorted(m for m in ('torch', 'verl', 'ray', 'megatron.core') if m in sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_verl_main_ppo_with_a_bad_override_stops_before_ray(tmp_path):
    """The real ``python3 -m verl.trainer.main_ppo``: Hydra runs the preset's callback, which exits 1."""
    require("ray")
    argv = [sys.executable, "-m", "verl.trainer.main_ppo", "--config-path=config",
            "--config-name=ppo_megatron_trainer", "+mindspeed=validate", BAD]
    env = {**os.environ, "RAY_ADDRESS": "", "HYDRA_FULL_ERROR": "1"}
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=180, cwd=tmp_path, env=env)
    elapsed = time.monotonic() - start
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "recompute_granularity=full requires recompute_method=uniform or block" in proc.stderr
    assert f"fix:  ++{A}.{OTC}.recompute_method=uniform" in proc.stderr
    assert "stopping before Ray starts" in proc.stderr
    assert "ray init kwargs" not in proc.stdout and "Started a local Ray instance" not in proc.stdout + proc.stderr
    assert elapsed < 90, f"{elapsed:.1f} s (almost all of it importing verl, torch and ray)"


def test_verl_main_ppo_with_a_preset_on_a_corpus_launch_passes_the_check(tmp_path):
    """The same entry with a valid corpus command: the check passes, verl's --cfg job shows the preset's flags."""
    require("ray")
    argv = [sys.executable, "-m", "verl.trainer.main_ppo", *launch("dense"), "--cfg", "job"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "use_fused_rmsnorm: true" in proc.stdout and "position_embedding_type: rope" in proc.stdout
