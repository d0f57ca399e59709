"""The engine's even split of a pass's samples (``engine-micro-split``) on the trees of verl 0.6.1 to 0.9.1: judged
where the engine worker runs (0.8.0 on, 0.7.x with ``use_legacy_worker_impl=disable``), not on the legacy worker,
which splits unevenly (``DataProto.split``)."""

from __future__ import annotations

from _verl_cases import BASE, run

#: 8 devices, TP 1: 8 prompts give 1 sample per rank to the log-prob pass, which micro batches of 4 do not split.
ARGV = ["data.train_batch_size=8", "actor_rollout_ref.actor.ppo_mini_batch_size=8",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4", "algorithm.adv_estimator=grpo",
        "actor_rollout_ref.actor.use_kl_loss=False"]
KEY = "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"


def _split(argv, tree):
    return [i for i in run([*BASE, *argv], str(tree), do_inject=False).res.issues if i.rule == "engine-micro-split"]


def test_the_split_is_judged_where_the_engine_runs(verl_tree, verl_source):
    version, tree = verl_tree
    found = _split(ARGV, tree)
    if version in ("0.6.1", "0.7.1"):  # the legacy Megatron worker, their default
        assert found == []
        assert "DataProto" in verl_source.read("verl/workers/actor/megatron_actor.py")
        if version == "0.7.1":  # its engine worker, chosen, splits as 0.8.0's does
            (engine,) = _split([*ARGV, "trainer.use_legacy_worker_impl=disable"], tree)
            assert engine.key == KEY
        return
    assert "data size must be divisible by force_group_size * micro_batch_size_per_gpu" in \
        verl_source.read("verl/workers/engine/utils.py")
    (issue,) = found
    assert (issue.key, issue.override) == (KEY, f"{KEY}=1")
    assert not _split([*ARGV, issue.override], tree)
