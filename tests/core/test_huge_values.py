"""A size or batch of forty digits (a digit pasted over and over) gets its verdict like any other value.

The fix searches walked outward from the value one step at a time: the rollout's TP of forty digits hung
``rollout-world-divides``, and a VPP of forty digits hung the memory model's per-chunk loop. Each launch here
runs under an alarm that only a hang reaches (a minute, where a verdict takes a tenth of a second).
"""

from __future__ import annotations

import signal

import pytest

from helpers import BASIC, FIXTURES
from verl_mindspeed import catalog
from verl_mindspeed.launch import evaluate

M = "actor_rollout_ref.actor.megatron"
O = f"{M}.override_transformer_config"
R = "actor_rollout_ref.rollout"
HUGE = "9" * 40
BASE = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=gae", *BASIC,
        "critic.ppo_micro_batch_size_per_gpu=1"]
KEYS = [*(f"{M}.{f.name}" for f in catalog.flags("megatron") if f.type == "int"),
        *(f"++{O}.{f.name}" for f in catalog.flags("otc") if f.type == "int"),
        "data.train_batch_size", "actor_rollout_ref.actor.ppo_mini_batch_size",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", "trainer.n_gpus_per_node", "trainer.nnodes",
        f"{R}.n", f"{R}.tensor_model_parallel_size", f"{R}.data_parallel_size", f"{R}.pipeline_model_parallel_size",
        "critic.ppo_mini_batch_size", "critic.megatron.tensor_model_parallel_size"]


class _Hung(Exception):
    pass


def _judged(argv, **kw):
    """``evaluate(argv)``, or None where a minute passes without a verdict."""
    def alarm(*_):
        raise _Hung

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(60)
    try:
        return evaluate(argv, **kw)
    except _Hung:
        return None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("model", [None, "Qwen3-30B-A3B"])
def test_a_forty_digit_size_gets_a_verdict(base_cfg, model):
    config = str(FIXTURES / "models" / model) if model else None
    hung = [key for key in KEYS if _judged([*BASE, f"{key}={HUGE}"], model_config=config) is None]
    assert not hung


def test_the_rollouts_forty_digit_size_gets_the_nearest_that_divides(base_cfg):
    res = _judged([*BASE, f"{R}.tensor_model_parallel_size={HUGE}"])
    assert res is not None
    (found,) = [i for i in res.errors if i.rule == "rollout-world-divides"]
    assert found.override == f"{R}.tensor_model_parallel_size=8"


@pytest.mark.parametrize("written, line", [
    ("actor_rollout_ref.actor.ppo_mini_batch_size=140000", "actor_rollout_ref.actor.ppo_mini_batch_size=1024"),
    ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=200000", "data.train_batch_size=1600000"),
])
def test_a_batch_far_from_any_that_divides_gets_the_one_that_does(base_cfg, written, line):
    """The mini batch must fit in the train batch (1,024 here) and the train batch must be a multiple of DP x micro:
    found by arithmetic, however far, and pasted the error is gone."""
    argv = [*(a for a in BASE if not a.startswith(written.partition("=")[0] + "=")), "trainer.n_gpus_per_node=8",
            written]
    (found,) = [i for i in evaluate(argv).errors if i.rule == "batch-divisibility"]
    assert found.override == line
    assert not [i for i in evaluate([*argv, line]).errors if i.rule == "batch-divisibility"]
