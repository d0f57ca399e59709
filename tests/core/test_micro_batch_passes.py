"""Each pass's micro batches per rank (``rules/verl_passes.py``): the engine's even split and interleaved
pipelining's groups.

verl's own ``prepare_micro_batches`` is run on CPU over a grid of samples per rank and micro batch sizes: a launch
is refused exactly where it raises.
megatron-core's own ``forward_backward_pipelining_with_interleaving`` is run on CPU up to its checks of the micro
batch count, over a grid of counts, groups and pipeline sizes: the rule's ``fills`` says a count runs exactly where
megatron-core goes past those checks. verl's engine asserts a multiple of the group before it (read from the
installed verl's source). On a launch: the error, its line pasted back, and the cases not judged.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import BASIC, require
from verl_mindspeed.doctor._replay import pasted
from verl_mindspeed.launch import evaluate
from verl_mindspeed.rules.verl_passes import fills

MESSAGES = ("The number of contiguous micro-batches in a virtual pipeline stage", "The remainder of M")


class _Passed(Exception):
    """Raised by the stand-in for the first communication: the schedule got past its checks."""


def _megatron_runs(monkeypatch, count: int, group: int, pp: int) -> bool:
    """Whether megatron-core's interleaved schedule accepts ``count`` micro batches in groups of ``group`` on ``pp``
    stages (its own code, until the first step after its checks)."""
    torch = require("torch")
    schedules = require("megatron.core.pipeline_parallel.schedules")
    from megatron.core import ModelParallelConfig

    config = ModelParallelConfig(pipeline_model_parallel_size=pp, virtual_pipeline_model_parallel_size=2,
                                 microbatch_group_size_per_vp_stage=group, pipeline_dtype=torch.float32)
    chunks = [torch.nn.Linear(1, 1), torch.nn.Linear(1, 1)]
    for chunk in chunks:
        chunk.config = config
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, *a, **k: self)
    ps = schedules.parallel_state
    monkeypatch.setattr(ps, "get_pipeline_model_parallel_world_size", lambda *a, **k: pp)
    monkeypatch.setattr(ps, "get_pipeline_model_parallel_rank", lambda *a, **k: 0)

    def passed(*_a, **_k):
        raise _Passed

    monkeypatch.setattr(schedules, "get_model_type", passed)  # the first call after the checks
    try:
        schedules.forward_backward_pipelining_with_interleaving(
            forward_step_func=None, data_iterator=[None, None], model=chunks, num_microbatches=count, seq_length=8,
            micro_batch_size=1, forward_only=True)
    except _Passed:
        return True
    except (ValueError, RuntimeError) as exc:
        assert str(exc).startswith(MESSAGES), exc
        return False
    raise AssertionError("the schedule neither refused nor went past its checks")


@pytest.mark.parametrize("pp", [2, 3, 4])
def test_fills_is_megatron_cores_own_check(monkeypatch, pp):
    for group in range(1, 2 * pp + 2):
        for count in range(1, 4 * pp + 2):
            with monkeypatch.context() as m:
                assert fills(count, group, pp, engine=False) == _megatron_runs(m, count, group, pp), (count, group)


def test_the_engine_asserts_whole_groups_before_megatron():
    verl = pytest.importorskip("verl")
    source = (Path(verl.__file__).parent / "workers/engine/megatron/transformer_impl.py").read_text(encoding="utf-8")
    assert "assert len(micro_batches) % num_batches_divided_by == 0" in source
    assert not fills(5, 3, 2, engine=True) and fills(5, 3, 2, engine=False)  # remainder 2 = PP: megatron only
    assert fills(6, 3, 2, engine=True)


A = "actor_rollout_ref.actor"
BASE = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo", *BASIC, "trainer.nnodes=1",
        "trainer.n_gpus_per_node=8", "data.train_batch_size=16", f"{A}.ppo_mini_batch_size=16",
        f"{A}.ppo_micro_batch_size_per_gpu=4", "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4",
        f"{A}.megatron.pipeline_model_parallel_size=2"]
VPP = f"{A}.megatron.virtual_pipeline_model_parallel_size=2"


def _vpp(argv):
    return [i for i in evaluate(argv).issues if i.rule == "vpp-micro-batches"]



def test_one_micro_batch_per_rank_under_two_stages_is_refused_and_the_line_clears_it(base_cfg):
    """16 prompts over a data-parallel size of 4 (8 devices / PP 2) in micro batches of 4: M = 1 < PP = 2."""
    argv = [*BASE, VPP]
    found = _vpp(argv)
    assert [(i.severity, i.key) for i in found] == [
        ("error", "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"),
        ("error", f"{A}.ppo_micro_batch_size_per_gpu")]
    assert all("M = 1" in i.message or "= 16 x 1 / 4 / 4" in i.message for i in found)
    for issue in found:
        argv = pasted(argv, issue.override)
    assert not _vpp(argv) and not evaluate(argv).errors


def test_no_virtual_pipeline_dynamic_batching_or_whole_groups_are_not_refused(base_cfg):
    assert not _vpp(list(BASE))
    assert not _vpp([*BASE, VPP, f"{A}.use_dynamic_bsz=True", f"{A}.ppo_max_token_len_per_gpu=4096"])
    assert not _vpp([*BASE, VPP, f"{A}.ppo_micro_batch_size_per_gpu=2",
                     "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2"])


def test_a_batch_no_micro_size_can_split_proposes_no_virtual_pipeline(base_cfg):
    """PP 4 on 8 devices: data-parallel size 2, 16 x 1 / 2 = 8 per rank; the group of 4 needs M in 4, 8: micro 2 or
    1 do; with 3 prompts per rank (train 6), none does, and the line drops the virtual pipeline."""
    argv = [*BASE, f"{A}.megatron.pipeline_model_parallel_size=4", VPP, "data.train_batch_size=6",
            f"{A}.ppo_mini_batch_size=6", f"{A}.ppo_micro_batch_size_per_gpu=3",
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=3"]
    found = _vpp(argv)
    assert found and {i.override for i in found} == {f"{A}.megatron.virtual_pipeline_model_parallel_size=null"}
    assert not _vpp(pasted(argv, found[0].override))



def _verl_splits(samples: int, micro: int) -> bool:
    """Whether verl's engine splits ``samples`` rows into micro batches of ``micro`` (its own code, on CPU)."""
    torch = require("torch")
    tensordict = require("tensordict")
    utils = require("verl.workers.engine.utils")
    from verl.utils import tensordict_utils as tu

    data = tensordict.TensorDict({"x": torch.zeros(samples, 1)}, batch_size=[samples])
    tu.assign_non_tensor(data, use_dynamic_bsz=False, micro_batch_size_per_gpu=micro)
    try:
        batches, _ = utils.prepare_micro_batches(data)
    except AssertionError as exc:
        assert "data size must be divisible" in str(exc)
        return False
    assert len(batches) == samples // micro
    return True


def _split(argv):
    return [i for i in evaluate(argv).issues if i.rule == "engine-micro-split"]


@pytest.mark.parametrize("train", [8, 16, 24])
def test_the_engines_split_is_refused_where_verls_own_code_refuses_it(base_cfg, train):
    """8 devices, TP 1: data-parallel size 8, so the log-prob pass has train / 8 samples per rank."""
    R = "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"
    base = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo", *BASIC, "trainer.nnodes=1",
            "trainer.n_gpus_per_node=8", f"data.train_batch_size={train}", f"{A}.ppo_mini_batch_size=8"]
    for micro in (1, 2, 3, 4, 8):
        found = [i for i in _split([*base, f"{R}={micro}"]) if i.key == R]
        assert bool(found) == (not _verl_splits(train // 8, micro)), (train, micro)
        if found:
            line = found[0].override
            assert _verl_splits(train // 8, int(line.split("=")[1]))
            assert not [i for i in _split([*base, line]) if i.key == R]



def test_a_fix_search_over_a_batch_of_twelve_digits_stays_bounded(base_cfg):
    """2 x a prime of twelve digits per rank, with micro batches of just under that prime: no size divides between
    them, and a search from the micro batch size down would run for hours. The line found is within the ceiling."""
    prime = 100000000003
    R = "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"
    argv = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo", *BASIC, "trainer.nnodes=1",
            "trainer.n_gpus_per_node=8", f"data.train_batch_size={8 * 2 * prime}", f"{A}.ppo_mini_batch_size=8",
            f"{R}={prime - 1}"]
    (found,) = _split(argv)
    assert found.override == f"{R}=2"
