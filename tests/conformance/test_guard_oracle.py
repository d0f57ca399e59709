"""The runtime guard and the era model against MindSpeed's real ``repatch`` (``guard_driver.py``).

Guard: the project's venv (verl 0.9.1, megatron-core 0.12.1) imports MindSpeed with the oracle's stubs, then
``import verl`` loads the guard through a ``verl.plugins`` entry point, and verl's real MindSpeed engines run
``_init_device_mesh`` role after role (critic, ref, actor) over megatron's real parallel state on the fake
process group. MindSpeed releases on the 0.12.1 line only (the project's venv has megatron-core 0.12.1).

Era model: ``resolve(...).receives["builds"]`` (each build's ``repatch`` dict and the cumulative namespace the
project predicts) replayed through MindSpeed's real ``repatch`` in the oracle venvs; after every build
MindSpeed's namespace must hold the predicted value of every key the project lists.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import sources

from conftest import _RAN

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "guard_driver.py"
SRC = HERE.parents[1] / "src"
GUARD_RELEASES = ("2.2.0_core_r0.12.1", "26.1.0_core_r0.12.1")
ERA_RELEASES = ("2.2.0_core_r0.12.1", "26.1.0_core_r0.12.1", "core_r0.16.0")
SECTIONS = {"actor": "actor_rollout_ref.actor.megatron", "ref": "actor_rollout_ref.ref.megatron",
            "critic": "critic.megatron"}
A, R, C = (f"{SECTIONS[r]}.override_transformer_config" for r in ("actor", "ref", "critic"))
GAE, KL = "algorithm.adv_estimator=gae", "actor_rollout_ref.actor.use_kl_loss=True"
BUILD_ORDER = ("critic", "ref", "actor")


def drive(python, release: str, request: dict, env: dict) -> tuple[dict, str]:
    mindspeed, megatron = sources.release_sources(release)
    done = subprocess.run([str(python), str(DRIVER), "--mindspeed", str(mindspeed), "--megatron", str(megatron),
                           "--release", release], input=json.dumps(request), capture_output=True, text=True,
                          env=env, timeout=900)
    lines = done.stdout.strip().splitlines()
    assert lines, f"the driver for {release} answered nothing:\n{done.stderr[-3000:]}"
    answer = json.loads(lines[-1])
    assert "harness_error" not in answer, answer
    _RAN.append(release)
    return answer, done.stderr


def composed(*overrides: str):
    from omegaconf import OmegaConf

    from verl_mindspeed.compose import compose_argv

    composition = compose_argv(["--config-name=ppo_megatron_trainer", *overrides])
    assert not [i for i in composition.issues if i.severity == "error"], composition.issues  # Hydra would refuse it
    cfg = composition.cfg
    OmegaConf.resolve(cfg)
    return cfg


# --------------------------------------------------------------------------- the guard

#: name -> (overrides, the role that must stop or None, what its message must say).
GUARD_CASES = {
    "critic-first": ((GAE, "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2"), "actor",
                     "verl-mindspeed guard: actor asked for TP=2 but the process groups were built with TP=1 by the "
                     "critic, which was built first (verl builds them once per process): set "
                     "critic.megatron.tensor_model_parallel_size=2"),
    "ref-first": (("algorithm.adv_estimator=grpo", KL, "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2",
                   "actor_rollout_ref.ref.megatron.tensor_model_parallel_size=1"), "actor",
                  "by the ref, which was built first (verl builds them once per process): set "
                  "actor_rollout_ref.ref.megatron.tensor_model_parallel_size=2"),
    "ref-inherits-cp": ((GAE, KL, "actor_rollout_ref.actor.megatron.context_parallel_size=2"), "ref",
                        "ref asked for CP=2 but the process groups were built with CP=1 by the critic"),
    "experts": ((GAE, "actor_rollout_ref.actor.megatron.expert_model_parallel_size=2"), "actor",
                "actor asked for EP=2 but the process groups were built with EP=1 by the critic"),
    "equal": ((GAE, KL, "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2",
               "actor_rollout_ref.actor.megatron.context_parallel_size=2",
               "critic.megatron.tensor_model_parallel_size=2",
               "critic.megatron.context_parallel_size=2", f"+{A}.use_fused_rmsnorm=True"), None, ""),
    "switches-differ": ((GAE, f"+{A}.use_fused_rmsnorm=False", f"+{C}.use_fused_rmsnorm=True"), None, ""),
}

DISABLED_CASES = ("critic-first", "equal")


def guard_request(names) -> dict:
    from omegaconf import OmegaConf
    from verl.trainer.ppo.utils import need_critic, need_reference_policy

    scenarios = []
    for name in names:
        overrides = GUARD_CASES[name][0]
        cfg = composed(*overrides)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # verl's note that GRPO disables the critic
            roles = [r for r in BUILD_ORDER if r == "actor" or (r == "critic" and need_critic(cfg))
                     or (r == "ref" and need_reference_policy(cfg))]
        scenarios.append({"name": name, "engines": [
            {"role": r, "section": OmegaConf.to_container(OmegaConf.select(cfg, SECTIONS[r]), resolve=True)}
            for r in roles]})
    return {"mode": "guard", "scenarios": scenarios}


@pytest.fixture(scope="module")
def guarded(upstream, verl_base, tmp_path_factory):
    """``{(release, enabled): (answer, stderr)}`` for every guard case."""
    plugin = tmp_path_factory.mktemp("plugin")
    dist = plugin / "verl_mindspeed_guard_probe-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: verl-mindspeed-guard-probe\nVersion: 0\n")
    (dist / "entry_points.txt").write_text("[verl.plugins]\nverl_mindspeed = verl_mindspeed.integrations.guard\n")
    requests = {True: guard_request(GUARD_CASES), False: guard_request(DISABLED_CASES)}
    base = {k: v for k, v in os.environ.items() if k not in ("VERL_MINDSPEED_GUARD", "VERL_USE_EXTERNAL_PLUGINS")}
    base.update(PYTHONPATH=os.pathsep.join([str(plugin), str(SRC)]), PYTHONDONTWRITEBYTECODE="1", LANG="C.UTF-8")
    runs = [(r, on) for r in GUARD_RELEASES for on in (True, False)]
    with ThreadPoolExecutor(2) as pool:
        done = pool.map(lambda run: drive(sys.executable, run[0], requests[run[1]],
                                          {**base, **({"VERL_MINDSPEED_GUARD": "1"} if run[1] else {})}), runs)
        return dict(zip(runs, done))


def scenario(answer: dict, name: str) -> dict:
    return next(s for s in answer["scenarios"] if s["name"] == name)


@pytest.mark.parametrize("release", GUARD_RELEASES)
def test_enabled_guard_wraps_through_the_entry_point(guarded, release):
    info = guarded[release, True][0]["info"]
    assert info == {"enabled": True, "installed": True, "repatch_wrapped": True, "mesh_wrapped": True}


@pytest.mark.parametrize("name", [n for n, case in GUARD_CASES.items() if case[1]])
@pytest.mark.parametrize("release", GUARD_RELEASES)
def test_a_mismatch_stops_with_the_message(guarded, release, name):
    _, role, message = GUARD_CASES[name]
    got = scenario(guarded[release, True][0], name)
    assert got["stopped"] is not None, got
    assert got["stopped"]["type"] == "GuardError" and got["stopped"]["role"] == role, got
    assert message in got["stopped"]["message"]


@pytest.mark.parametrize("release", GUARD_RELEASES)
def test_equal_sizes_pass(guarded, release):
    answer, stderr = guarded[release, True]
    for name in ("equal", "switches-differ"):
        got = scenario(answer, name)
        assert got["stopped"] is None, got
    assert scenario(answer, "equal")["built"] == ["critic", "ref", "actor"]
    assert scenario(answer, "equal")["live"] == {"tp": 2, "pp": 1, "cp": 2}
    assert "actor runs with the layout it asked for (TP=2, PP=1, CP=2, EP=1, ETP=2)" in stderr
    # switches are reported, not stopped on: MindSpeed's namespace is process-wide, the last build wins
    assert ("the critic asked for use_fused_rmsnorm=True, but the actor's repatch set use_fused_rmsnorm=False "
            "for the whole process") in stderr


@pytest.mark.parametrize("release", GUARD_RELEASES)
def test_disabled_does_nothing(guarded, release):
    answer, stderr = guarded[release, False]
    assert answer["info"] == {"enabled": False, "installed": False, "repatch_wrapped": False, "mesh_wrapped": False}
    for name in DISABLED_CASES:
        assert scenario(answer, name)["stopped"] is None, name
    # what the guard is for: without it the actor silently runs the critic's TP=1
    assert scenario(answer, "critic-first") == {"name": "critic-first", "stopped": None,
                                                "built": ["critic", "actor"], "live": {"tp": 1, "pp": 1, "cp": 1}}
    assert "verl-mindspeed guard" not in stderr
