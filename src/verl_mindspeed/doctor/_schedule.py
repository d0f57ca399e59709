"""A pass's micro batches refused: verl's engine splitting a rank's samples unevenly (``check``'s
``engine-micro-split``), or the interleaved pipeline schedule refusing their count (``vpp-micro-batches``).

verl's engine asserts that the micro batch size divides a rank's samples (``data size must be divisible by
force_group_size * micro_batch_size_per_gpu``, ``prepare_micro_batches``); the index's field
(``micro_batch_size_per_gpu``) is, by its name, only the reward model's key, which this pass does not read.

With a virtual pipeline size above 1, megatron-core's ``forward_backward_pipelining_with_interleaving`` takes micro
batches in groups of ``microbatch_group_size_per_vp_stage`` (the pipeline size by default) and refuses a count
outside ``[PP, M]`` or leaving a remainder under the pipeline size; verl's Megatron engine asserts whole groups
before it (``micro_batches ... must be divisible by num_batches_divided_by 2``), and its legacy actor under dynamic
batching (``... microbatch_group_size_per_vp_stage 2``). The count is the launch's: the batch x ``rollout.n`` over
the data-parallel size and the micro batch size. The index's condition reads only the count, so the site alone says
"upstream code".

With the launch, ``check``'s rule on the replay gives the pass and its line. Without it, the micro batch sizes of
the passes are named with no line (which pass ran is not in the message), and the virtual pipeline size with the
line that always clears this refusal: no interleaving.
"""

from __future__ import annotations

import re
from typing import Optional

from ..i18n import Msg, tr
from ._blame import Cause, Verdict
from ._log import Raised
from ._replay import Replay, issue_causes

_SPLIT = re.compile(r"data size must be divisible by force_group_size \* micro_batch_size_per_gpu")
_REFUSED = re.compile(r"contiguous micro-batches in a virtual pipeline stage ?should range in|"
                      r"The remainder of M \(the total micro-batches\)|"
                      r"must be divisible by (?:num_batches_divided_by|microbatch_group_size_per_vp_stage) \d")
_ACTOR = "actor_rollout_ref.actor"
#: The micro batch sizes of the passes ``check`` judges, then the virtual pipeline size.
MICRO = (f"{_ACTOR}.ppo_micro_batch_size_per_gpu", "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu")
VPP = f"{_ACTOR}.megatron.virtual_pipeline_model_parallel_size"


def schedule_groups(raised: Raised, what: Msg, launch: Optional[Replay], options: dict) -> Optional[Verdict]:
    if _SPLIT.search(raised.message) is not None:
        rule, said, groups = "engine-micro-split", tr(
            "{what}: each pass's micro batch size must divide its samples per rank (the batch x rollout.n / "
            "data-parallel size)", what=what), False
    elif _REFUSED.search(raised.message) is not None:
        rule, said, groups = "vpp-micro-batches", tr(
            "{what}: with a virtual pipeline size above 1 each pass's micro batches per rank (the batch x "
            "rollout.n / data-parallel size / its micro batch size) must fill whole groups of "
            "microbatch_group_size_per_vp_stage, the pipeline size by default", what=what), True
    else:
        return None
    found = [i for i in launch.issues if i.rule == rule and i.severity == "error"] if launch is not None else []
    if found:
        return Verdict("override", said, issue_causes(launch, found, **options), ("micro_batch_size_per_gpu",),
                       "confirmed")
    # which pass ran is not in the message: the micro batch sizes with no line; no interleaving always clears the
    # groups' refusal
    return Verdict("override", said, [*(Cause(key) for key in MICRO), *([Cause(VPP, f"{VPP}=null")] if groups else [])],
                   ("micro_batch_size_per_gpu",), "possible")


__all__ = ["schedule_groups"]
