"""A named choice of verl the release lacks is an error with the nearest value it has, per release.

Before, ``check`` said OK to ``adv_estimator=grpoo``, ``loss_agg_mode=token_mean``, ``rollout.name=vlm`` and, on
verl 0.7 and later, ``rollout.mode=sync``: verl reads them as text and fails where it uses them, after Ray and the
rollout have started. The values are read from each release's wheel (``tools/build_verl_choices.py``); the tree
here is the installed verl 0.9.1.
"""

from __future__ import annotations

import pytest

from helpers import BASIC
from verl_mindspeed.catalog import verl_choices
from verl_mindspeed.compose import compose_argv
from verl_mindspeed.compose._choices import choice_issues
from verl_mindspeed.launch import evaluate

BASE = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo", *BASIC]


def _chosen(res):
    return [i for i in res.issues if i.rule == "verl-choice"]


@pytest.mark.parametrize("written, line", [
    ("algorithm.adv_estimator=grpoo", "algorithm.adv_estimator=grpo"),
    ("actor_rollout_ref.actor.loss_agg_mode=token_mean", "actor_rollout_ref.actor.loss_agg_mode=token-mean"),
    ("actor_rollout_ref.actor.policy_loss.loss_mode=vanila", "actor_rollout_ref.actor.policy_loss.loss_mode=vanilla"),
    ("actor_rollout_ref.actor.kl_loss_type=low_var_k", "actor_rollout_ref.actor.kl_loss_type=low_var_kl"),
    ("algorithm.kl_penalty=k33+", "algorithm.kl_penalty=k3+"),
    ("actor_rollout_ref.rollout.name=vlm", "actor_rollout_ref.rollout.name=vllm"),
    ("actor_rollout_ref.rollout.mode=sync", "actor_rollout_ref.rollout.mode=async"),
    ("trainer.resume_mode=autp", "trainer.resume_mode=auto"),
    ("data.truncation=errr", "data.truncation=error"),
])
def test_a_choice_the_release_lacks_gets_the_nearest_it_has(base_cfg, written, line):
    argv = [*BASE, written]
    (found,) = _chosen(evaluate(argv))
    assert found.severity == "error" and found.key == written.partition("=")[0] and found.override == line
    assert "verl 0.9.1" in str(found.message)
    assert not evaluate([*argv, line]).errors


@pytest.mark.parametrize("written", [
    "algorithm.adv_estimator=rloo", "actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean",
    "actor_rollout_ref.actor.policy_loss.loss_mode=gspo", "actor_rollout_ref.actor.kl_loss_type=k3+",
    "algorithm.kl_penalty=low_var_kl", "actor_rollout_ref.rollout.name=sglang", "actor_rollout_ref.rollout.mode=async",
    "trainer.resume_mode=disable", "data.truncation=left",
])
def test_a_choice_the_release_has_passes(base_cfg, written):
    assert not _chosen(evaluate([*BASE, written]))


def test_a_value_far_from_every_choice_lists_them_without_a_line(base_cfg):
    (found,) = _chosen(evaluate([*BASE, "algorithm.adv_estimator=my_estimator"]))
    assert found.override is None and "gae" in str(found.message) and "grpo" in str(found.message)


def test_the_releases_differ_where_verl_changed(base_cfg):
    """``sync`` was a mode until 0.6.1; ``token-sum`` an aggregation from 0.9.0; before 0.6.0 no registry says."""
    assert ["sglang", "sync"] in verl_choices.of_release("0.6.1")["rollout"]
    assert ["vllm", "sync"] not in verl_choices.of_release("0.7.0")["rollout"]
    assert "token-sum" not in verl_choices.of_release("0.8.0")["loss_agg_mode"]
    assert "token-sum" in verl_choices.of_release("0.9.0")["loss_agg_mode"]
    assert "rollout" not in verl_choices.of_release("0.5.0") and verl_choices.of_release("0.10.0") is None
    comp = compose_argv([*BASE, "actor_rollout_ref.rollout.mode=sync"])
    assert not choice_issues("0.6.1", None, comp.cfg, comp.parsed)
    assert choice_issues("0.7.0", None, comp.cfg, comp.parsed)
    assert not choice_issues("0.10.0", None, comp.cfg, comp.parsed)  # a release the index lacks: not judged


def test_through_another_entry_it_is_a_warning(base_cfg):
    """A recipe may register its own estimator or loss."""
    comp = compose_argv([*BASE, "algorithm.adv_estimator=my_estimator"])
    (found,) = choice_issues("0.9.1", "recipe.dapo.main_dapo", comp.cfg, comp.parsed)
    assert found.severity == "warning"


def test_a_value_the_launch_does_not_write_is_not_judged(base_cfg):
    """verl's own YAML, or a recipe's, is not the user's to fix."""
    comp = compose_argv(BASE)
    assert not choice_issues("0.9.1", None, comp.cfg, comp.parsed)


def test_the_index_agrees_with_verl_executed():
    """Every value the index gives the installed verl is one its own look-ups accept, and a value beside them is
    one they refuse (the index is read from the wheel with ast; here verl's functions run)."""
    from helpers import require

    torch = require("torch")
    verl = require("verl")
    core = require("verl.trainer.ppo.core_algos")
    known = verl_choices.of_release(verl.__version__)
    assert known is not None
    x, mask = torch.zeros(2, 3), torch.ones(2, 3)
    look_ups = {"adv_estimator": core.get_adv_estimator_fn, "policy_loss": core.get_policy_loss_fn,
                "loss_agg_mode": lambda mode: core.agg_loss(x, mask, mode),
                "kl_penalty": lambda kind: core.kl_penalty(x, x, kind)}
    for kind, look_up in look_ups.items():
        for value in known[kind]:
            look_up(value)
        with pytest.raises((ValueError, NotImplementedError)):
            look_up(known[kind][0] + "_x")
    core.kl_penalty(x, x, "k3+")  # the trailing '+' the index allows
