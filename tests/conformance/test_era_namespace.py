"""The era model's merge semantics, proven with MindSpeed's real ``repatch``.

For each launch, ``resolve(cfg, era=..., injected=...).receives["builds"]`` lists what the project predicts:
each build's ``repatch`` dict and the cumulative namespace MindSpeed holds after it. ``guard_driver.py`` hands
those dicts, in that order, to MindSpeed's own ``repatch`` in the oracle venv and reads MindSpeed's namespace
(``mindspeed.args_utils.get_full_args()``) back after each call. For every build, every key the project
lists must hold the predicted value; and ``repatch`` must change no key that no dict carries.

engine era (verl 0.8+): critic, ref, actor, each with its own dict (FA defaulted, CP copied; the attention
backend as megatron's enum, as verl's engines hand it). legacy era (verl 0.6/0.7): actor, critic, ref, every
``repatch`` with the actor's dict (the critic does not call it).
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from test_guard_oracle import ERA_RELEASES, GAE, KL, A, C, R, composed, drive

DENSE = (f"+{A}.use_flash_attn=True", f"+{A}.normalization=RMSNorm", f"+{A}.use_fused_rmsnorm=True",
         f"+{A}.swiglu=True", f"+{A}.use_fused_swiglu=True", f"+{A}.position_embedding_type=rope",
         f"+{A}.use_fused_rotary_pos_emb=True")
MOE = (f"+{A}.moe_token_dispatcher_type=alltoall", f"+{A}.moe_grouped_gemm=True", f"+{A}.num_experts=8",
       f"+{A}.moe_permute_fusion=True", f"+{A}.use_fused_moe_token_permute_and_unpermute=True",
       f"+{A}.moe_router_topk=2")
GRPO = "algorithm.adv_estimator=grpo"
#: name -> overrides of verl's ppo_megatron_trainer.
LAUNCHES = {
    "dense": (GRPO, *DENSE),
    "moe": (GRPO, "actor_rollout_ref.actor.megatron.expert_model_parallel_size=2", *DENSE, *MOE),
    "with-critic": (GAE, *DENSE),
    "with-ref": (GRPO, KL, *DENSE),
    "ref-lost": (GRPO, KL, *DENSE, f"++{R}.use_fused_swiglu=False", f"+{R}.recompute_granularity=full",
                 f"+{R}.recompute_method=uniform", f"+{R}.recompute_num_layers=1"),
    "roles-differ": (GAE, KL, "actor_rollout_ref.actor.megatron.context_parallel_size=2",
                     "critic.megatron.context_parallel_size=2", f"+{A}.use_fused_rmsnorm=True",
                     f"+{C}.use_fused_rmsnorm=False", f"+{C}.use_fused_swiglu=True", f"+{C}.swiglu=True",
                     f"+{C}.recompute_granularity=full", f"+{C}.recompute_method=block",
                     f"+{C}.recompute_num_layers=2"),
}
MODES = [(era, injected) for era in ("engine", "legacy") for injected in (False, True)]


def predictions() -> dict[str, list[dict]]:
    """``"<launch>/<era>/<plain|injected>"`` -> the project's builds."""
    from verl_mindspeed import resolve

    out = {}
    for name, overrides in LAUNCHES.items():
        cfg = composed(*overrides)
        for era, injected in MODES:
            builds = resolve(cfg, era=era, injected=injected).receives["builds"]
            out[f"{name}/{era}/{'injected' if injected else 'plain'}"] = builds
    return out


@pytest.fixture(scope="module")
def replayed(upstream, verl_base):
    """``(predictions, {release: {sequence name: MindSpeed's namespace after each call}})``."""
    import pool as oracle_pool

    predicted = predictions()
    request = {"mode": "era", "sequences": [
        {"name": key, "enum": "/engine/" in key, "calls": [b["repatch"] for b in builds if b["repatch"] is not None]}
        for key, builds in predicted.items()]}
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}

    def one(release):
        answer, _ = drive(oracle_pool.python(release), release, request, env)
        assert answer["has_repatch"]
        return release, {s["name"]: s["steps"] for s in answer["sequences"]}

    with ThreadPoolExecutor(2) as pool:
        return predicted, dict(pool.map(one, ERA_RELEASES))


def disagreements(builds: list[dict], steps: list[dict]) -> list[str]:
    """Where MindSpeed's namespace after a build differs from the project's prediction for it."""
    out, done = [], 0
    for build in builds:
        if build["repatch"] is not None:
            step = steps[done]
            done += 1
            if "error" in step:
                return [f"{build['role']}: repatch raised {step['error']}"]
        if done == 0:
            if build["namespace"]:
                out.append(f"{build['role']}: predicted {build['namespace']} before any repatch")
            continue
        values = steps[done - 1]["values"]
        out += [f"{build['role']}: {k} predicted {v!r}, MindSpeed holds {values.get(k)!r}"
                for k, v in build["namespace"].items() if values.get(k) != v]
    return out


@pytest.mark.parametrize("release", ERA_RELEASES)
@pytest.mark.parametrize("mode", [f"{e}/{'injected' if i else 'plain'}" for e, i in MODES])
def test_predicted_namespace_is_mindspeeds(replayed, release, mode):
    predicted, got = replayed
    wrong = {}
    for key, builds in predicted.items():
        if f"/{mode}" in key:
            found = disagreements(builds, got[release][key])
            if found:
                wrong[key] = found
    assert not wrong, "\n".join(f"{k}: {line}" for k, lines in wrong.items() for line in lines)


@pytest.mark.parametrize("release", ERA_RELEASES)
def test_repatch_changes_no_key_outside_the_dicts(replayed, release):
    _, got = replayed
    changed = {name: step["changed"] for name, steps in got[release].items() for step in steps if step.get("changed")}
    assert not changed, changed


def test_the_launches_exercise_the_model(replayed):
    """Not vacuous: the builds differ per role, a key only an earlier build set sticks in MindSpeed's namespace
    (a replacing namespace would fail the proof), and legacy repeats the actor's dict and skips the critic."""
    predicted, got = replayed
    engine = predicted["roles-differ/engine/plain"]
    assert [b["role"] for b in engine] == ["critic", "ref", "actor"]
    assert engine[0]["repatch"]["use_fused_swiglu"] is True and "use_fused_swiglu" not in engine[2]["repatch"]
    assert engine[2]["namespace"]["use_fused_swiglu"] is True  # the critic's switch sticks
    assert engine[2]["namespace"]["context_parallel_size"] == 2
    for release in ERA_RELEASES:
        assert got[release]["roles-differ/engine/plain"][-1]["values"]["use_fused_swiglu"] is True, release
    legacy = predicted["roles-differ/legacy/plain"]
    assert [b["role"] for b in legacy] == ["actor", "critic", "ref"] and legacy[1]["repatch"] is None
    assert legacy[2]["repatch"] == legacy[0]["repatch"] and "use_fused_swiglu" not in legacy[0]["repatch"]
    lost = predicted["ref-lost/engine/plain"]
    assert lost[0]["repatch"]["use_fused_swiglu"] is False and lost[1]["repatch"]["use_fused_swiglu"] is True
    assert sys.modules.get("mindspeed") is None  # MindSpeed ran in the oracle venv, never here
