"""A size verl divides or multiplies by, set to zero or less, is an error with a line that clears it.

Before ``verl-positive-size``, ``check`` said OK to a rollout TP of 0 or -2, zero devices per node, ``rollout.n=0``
and a micro batch of 0: the rules read such a size as "not given" (``or 1``) or saw a world of no devices and
passed, and verl stops on each after Ray has started (a ZeroDivisionError in ``validate_config``, an empty
placement group, the rollout's world not divisible).
"""

from __future__ import annotations

import shlex

import pytest

from helpers import BASIC
from verl_mindspeed.launch import evaluate
from verl_mindspeed.rules.verl_sizes import SIZES

BASE = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=gae", *BASIC,
        "critic.ppo_micro_batch_size_per_gpu=1", "trainer.n_gpus_per_node=8"]


def _without(argv, key):
    return [a for a in argv if a.partition("=")[0].lstrip("+") != key]


@pytest.mark.parametrize("value", [0, -2])
@pytest.mark.parametrize("key", sorted(SIZES))
def test_a_size_of_zero_or_less_is_an_error_whose_line_clears_it(base_cfg, key, value):
    """Each size alone; the reference runs (the KL loss), and a deprecated micro batch size is the only one set."""
    argv = [*_without(_without(BASE, key), key + "_per_gpu"), "actor_rollout_ref.actor.use_kl_loss=True",
            f"{key}={value}"]
    errors = evaluate(argv).errors
    (found,) = [i for i in errors if i.rule == "verl-positive-size"]
    assert found.key == key and f"={value}" in found.message
    pasted = [*argv, *shlex.split(found.override)]
    assert not evaluate(pasted).errors, [(i.rule, i.key, i.override) for i in evaluate(pasted).errors]


def test_a_positive_size_is_not_reported(base_cfg):
    assert not [i for i in evaluate(BASE).errors if i.rule == "verl-positive-size"]


def test_the_rollouts_tp_of_zero_was_an_ok(base_cfg):
    """The case the review found: the rollout rule read 0 as "not given" and found the world divisible."""
    res = evaluate([*BASE, "actor_rollout_ref.rollout.tensor_model_parallel_size=0"])
    assert [(i.rule, i.override) for i in res.errors] == [
        ("verl-positive-size", "actor_rollout_ref.rollout.tensor_model_parallel_size=1")]


def test_a_node_of_no_devices_gets_as_many_as_the_layout_needs(base_cfg):
    argv = [*_without(BASE, "trainer.n_gpus_per_node"), "trainer.n_gpus_per_node=0",
            "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2",
            "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2",
            "actor_rollout_ref.rollout.tensor_model_parallel_size=8"]
    (found,) = [i for i in evaluate(argv).errors if i.rule == "verl-positive-size"]
    assert found.override == "trainer.n_gpus_per_node=8"


def test_a_role_the_launch_does_not_run_is_not_judged(base_cfg):
    """GRPO without a critic: verl never reads the critic's batch sizes."""
    argv = [*_without(BASE, "algorithm.adv_estimator"), "algorithm.adv_estimator=grpo",
            "critic.ppo_micro_batch_size_per_gpu=0"]
    argv = [a for a in argv if a != "critic.ppo_micro_batch_size_per_gpu=1"]
    assert not [i for i in evaluate(argv).errors if i.rule == "verl-positive-size"]


def test_the_fully_async_entry_keeps_its_train_batch_of_zero(base_cfg):
    """Its rollouter asserts ``data.train_batch_size == 0`` (it streams prompts) and never runs validate_config."""
    argv = ["--config-name=fully_async_ppo_megatron_trainer", "data.train_batch_size=0"]
    res = evaluate(argv, entry="verl.experimental.fully_async_policy.fully_async_main")
    assert not [i for i in res.errors if i.rule == "verl-positive-size"]
    assert [i for i in evaluate([*BASE, "data.train_batch_size=0"]).errors if i.rule == "verl-positive-size"]
