"""The doctor on the interleaved schedule's refusal of a pass's micro batch count (``doctor/_schedule.py``).

Before, verl's engine assertion got "no launch key is at fault (upstream code)" (its condition reads only the
count), and megatron-core's range check named the pipeline size with no line.
"""

from __future__ import annotations

from verl_mindspeed.doctor import diagnose

W = "(WorkerDict pid=7) "
ENGINE = "AssertionError: micro_batches [TensorDict(...)] must be divisible by num_batches_divided_by 2 for megatron " \
         "backend"
MEGATRON = "ValueError: The number of contiguous micro-batches in a virtual pipeline stageshould range in " \
           "[PP=2 , M=1]"
A = "actor_rollout_ref.actor"
LAUNCH = ["python3", "-m", "verl.trainer.main_ppo", "--config-name=ppo_megatron_trainer",
          "algorithm.adv_estimator=grpo", "actor_rollout_ref.model.path=/nonexistent/model",
          "actor_rollout_ref.rollout.name=vllm",
          "trainer.n_gpus_per_node=8", "trainer.nnodes=1", "data.train_batch_size=16", f"{A}.ppo_mini_batch_size=16",
          f"{A}.ppo_micro_batch_size_per_gpu=4", "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4",
          f"{A}.megatron.pipeline_model_parallel_size=2", f"{A}.megatron.virtual_pipeline_model_parallel_size=2",
          f"++{A}.megatron.override_transformer_config.use_flash_attn=True"]


def test_without_the_launch_the_micro_sizes_are_named_and_no_interleaving_is_the_line():
    for log in (ENGINE, MEGATRON):
        found = diagnose(W + log)
        assert found.exit_code == 0 and found.failures[0].verdict.kind == "override"
        causes = {c.key: c.fix for c in found.causes}
        assert causes == {f"{A}.ppo_micro_batch_size_per_gpu": None,
                          "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": None,
                          f"{A}.megatron.virtual_pipeline_model_parallel_size":
                              f"{A}.megatron.virtual_pipeline_model_parallel_size=null"}


def test_with_the_launch_check_names_the_pass_and_its_line_clears_it():
    found = diagnose(W + ENGINE, LAUNCH)
    assert found.failures[0].verdict.certainty == "confirmed"
    assert [(c.key, c.fix, c.confirmed) for c in found.causes] == [
        ("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
         "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2", True),
        (f"{A}.ppo_micro_batch_size_per_gpu", f"{A}.ppo_micro_batch_size_per_gpu=2", True)]


SPLIT = "AssertionError: data size must be divisible by force_group_size * micro_batch_size_per_gpu"


def test_the_engines_uneven_split_names_the_passes_micro_sizes_not_the_reward_models():
    """The index's field is ``micro_batch_size_per_gpu``, by name only the reward model's key: it was named."""
    found = diagnose(W + SPLIT)
    assert [c.key for c in found.causes] == [f"{A}.ppo_micro_batch_size_per_gpu",
                                             "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"]
    launch = [w for w in LAUNCH if "virtual_pipeline" not in w and "pipeline_model_parallel_size" not in w]
    # 8 devices, TP 1: 2 samples per rank in both passes, which micro batches of 3 and 4 do not split
    launch = [w if "log_prob_micro" not in w else w.replace("=4", "=3") for w in launch]
    confirmed = diagnose(W + SPLIT, launch)
    assert [(c.key, c.fix, c.confirmed) for c in confirmed.causes] == [
        ("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
         "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2", True),
        (f"{A}.ppo_micro_batch_size_per_gpu", f"{A}.ppo_micro_batch_size_per_gpu=2", True)]
