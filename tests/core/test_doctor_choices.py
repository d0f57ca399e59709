"""The doctor on verl's look-up of a named choice: the launch's key, with the release's nearest value.

Before, ``Unknown advantage estimator simply: grpoo`` got "no launch key is at fault (upstream code)": the raise's
condition reads only the registry. ``check`` refuses the same values before the launch (``verl-choice``).
"""

from __future__ import annotations

import pytest

from verl_mindspeed.doctor import diagnose

W = "(TaskRunner pid=4242) "


@pytest.mark.parametrize("log, key, line", [
    ("ValueError: Unknown advantage estimator simply: grpoo", "algorithm.adv_estimator",
     "algorithm.adv_estimator=grpo"),
    ("ValueError: Unsupported loss mode: vanila. Supported modes are: ['vanilla', 'gspo', 'clip_cov']",
     "actor_rollout_ref.actor.policy_loss.loss_mode", "actor_rollout_ref.actor.policy_loss.loss_mode=vanilla"),
    ("ValueError: Invalid loss_agg_mode: token_mean", "actor_rollout_ref.actor.loss_agg_mode",
     "actor_rollout_ref.actor.loss_agg_mode=token-mean"),
])
def test_the_key_looked_up_is_named_with_the_nearest_value(log, key, line):
    found = diagnose(W + log)
    assert found.exit_code == 0
    assert [(c.key, c.fix) for c in found.causes] == [(key, line)]


def test_the_critics_aggregation_where_the_critic_calls_it():
    """The critic's key where the launch writes it; else the actor's, which verl's critic.yaml copies."""
    log = "\n".join([W + "Traceback (most recent call last):",
                     W + '  File "/verl/verl/workers/critic/dp_critic.py", line 250, in update_critic',
                     W + "    vf_loss = core_algos.compute_value_loss(",
                     W + '  File "/verl/verl/trainer/ppo/core_algos.py", line 1204, in agg_loss',
                     W + '    raise ValueError(f"Invalid loss_agg_mode: {loss_agg_mode}")',
                     W + "ValueError: Invalid loss_agg_mode: seq-mean-tokn-mean"])
    argv = ["--config-name=ppo_megatron_trainer", "critic.loss_agg_mode=seq-mean-tokn-mean"]
    assert [(c.key, c.fix) for c in diagnose(log, argv).causes] == [
        ("critic.loss_agg_mode", "critic.loss_agg_mode=seq-mean-token-mean")]
    assert [c.key for c in diagnose(log).causes] == ["actor_rollout_ref.actor.loss_agg_mode"]


def test_the_kl_estimator_is_read_from_the_launch_where_the_message_prints_none():
    log = "\n".join([W + "Traceback (most recent call last):",
                     W + '  File "/verl/verl/trainer/ppo/ray_trainer.py", line 140, in apply_kl_penalty',
                     W + "    kld = core_algos.kl_penalty(",
                     W + '  File "/verl/verl/trainer/ppo/core_algos.py", line 2210, in kl_penalty',
                     W + "    forward_score = kl_penalty_forward(logprob, ref_logprob, base_kl_penalty)",
                     W + '  File "/verl/verl/trainer/ppo/core_algos.py", line 2262, in kl_penalty_forward',
                     W + "    raise NotImplementedError",
                     W + "NotImplementedError"])
    argv = ["--config-name=ppo_megatron_trainer", "algorithm.use_kl_in_reward=True", "algorithm.kl_penalty=low_var_k"]
    assert [(c.key, c.fix) for c in diagnose(log, argv).causes] == [
        ("algorithm.kl_penalty", "algorithm.kl_penalty=low_var_kl")]
    assert [c.key for c in diagnose(log).causes] == ["algorithm.kl_penalty"]


def test_the_distillation_losses_look_up_is_not_the_policy_loss():
    """The same words, listing the distillation losses: not the policy loss's key."""
    found = diagnose(W + "ValueError: Unsupported loss mode: fkl. Supported modes are: ['forward_kl_topk', 'k1']")
    assert "actor_rollout_ref.actor.policy_loss.loss_mode" not in [c.key for c in found.causes]
