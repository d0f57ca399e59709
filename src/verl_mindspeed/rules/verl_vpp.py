"""Interleaved pipelining (a virtual pipeline size above 1) takes micro batches in groups of
``microbatch_group_size_per_vp_stage`` (megatron-core's default: the pipeline size), so each pass's count of micro
batches per data-parallel rank must fill whole groups. Without dynamic batching that count is fixed by the launch:
``batch x rollout.n / data-parallel size / micro batch size``. Nothing checks it before the pass runs:

- megatron-core's ``forward_backward_pipelining_with_interleaving`` (every line, 0.12.1 to 0.18.2) raises when the
  group is larger than the count (``The number of contiguous micro-batches in a virtual pipeline stage should range
  in [PP=.., M=..]``) or leaves a remainder smaller than the pipeline size;
- verl's Megatron engine (0.6.1 on; the default from 0.8.0, or 0.7.x with ``use_legacy_worker_impl=disable``)
  asserts before it that the count is a multiple of the group (``micro_batches ... must be divisible by
  num_batches_divided_by ...``).

The passes judged are the actor's (its log-prob pass over ``train_batch_size x n``, with
``rollout.log_prob_micro_batch_size_per_gpu``, and its update over ``ppo_mini_batch_size x n``, with
``ppo_micro_batch_size_per_gpu``) and the reference's log-prob pass. Dynamic batching rounds the count up to whole
groups; the critic's passes are not judged.
"""

from __future__ import annotations

from typing import Iterable, Optional

from ..eras import ENGINE, ENGINE_07
from ..errors import Issue
from ..i18n import tr
from ..model.verl_options import select as _select
from ._base import Context, RoleView, _int, error, rule

_A, _R = "actor_rollout_ref.actor", "actor_rollout_ref.rollout"
#: (role, pass, the batch key multiplied by rollout.n, the micro batch key, the dynamic batching key)
PASSES = (
    ("actor", "log-prob", "data.train_batch_size", f"{_R}.log_prob_micro_batch_size_per_gpu",
     f"{_R}.log_prob_use_dynamic_bsz"),
    ("actor", "update", f"{_A}.ppo_mini_batch_size", f"{_A}.ppo_micro_batch_size_per_gpu", f"{_A}.use_dynamic_bsz"),
    ("ref", "log-prob", "data.train_batch_size", "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
     "actor_rollout_ref.ref.log_prob_use_dynamic_bsz"),
)
_CITES = ("megatron-core 0.12.1 megatron/core/pipeline_parallel/schedules.py forward_backward_pipelining_with_"
          "interleaving (microbatch_group_size_per_vp_stage against PP and M); verl 0.9.1 verl/workers/engine/"
          "megatron/transformer_impl.py forward_backward_batch (len(micro_batches) % num_batches_divided_by); "
          "verl/workers/engine/utils.py prepare_micro_batches; megatron-core model_parallel_config.py (the group "
          "defaults to the pipeline size)")


def fills(count: int, group: int, pp: int, engine: bool) -> bool:
    """Whether ``count`` micro batches run in groups of ``group`` on a pipeline of ``pp`` stages."""
    if group < pp or group > count:
        return False  # megatron-core's range check
    rest = count % group
    return rest == 0 if engine else not 0 < rest < pp


@rule("vpp-micro-batches", scope="run", cites=_CITES, holds_for="every verl release with a virtual pipeline size")
def vpp_micro_batches(roles: dict[str, RoleView], ctx: Context) -> Iterable[Issue]:
    """Each judged pass's micro batches per rank fill whole groups of the interleaved schedule."""
    cfg, world = ctx.config, ctx.world_size
    if cfg is None or not world:
        return
    engine = ctx.era is not None and ctx.era.id in (ENGINE, ENGINE_07)
    n = _int(_select(cfg, f"{_R}.n")) or 1
    for name, part, batch_key, micro_key, dynamic_key in PASSES:
        role = roles.get(name)
        if role is None or (role.vpp or 1) <= 1 or role.pp <= 1 or _select(cfg, dynamic_key) is True:
            continue
        if part == "log-prob" and name == "actor" and _select(cfg, "algorithm.rollout_correction.bypass_mode") is True:
            continue  # the rollout's log-probs stand in for the old ones: no such pass
        batch, micro, model_parallel = _int(_select(cfg, batch_key)), _int(_select(cfg, micro_key)), \
            role.tp * role.pp * role.cp
        if not batch or not micro or batch < 1 or micro < 1 or world % model_parallel:
            continue
        dp = world // model_parallel
        if (batch * n) % dp or (batch * n // dp) % micro:
            continue  # batch-divisibility (or verl's own split) reports these
        per_rank = batch * n // dp
        count, group = per_rank // micro, _int(role.built.get("microbatch_group_size_per_vp_stage")) or role.pp
        if fills(count, group, role.pp, engine):
            continue
        said = (tr("verl's engine asserts 'micro_batches ... must be divisible by num_batches_divided_by {group}'",
                   group=group) if engine else
                tr("megatron-core's schedule raises 'The number of contiguous micro-batches in a virtual pipeline "
                   "stage should range in [PP={pp} , M={count}]' or 'The remainder of M ...'", pp=role.pp,
                   count=count))
        yield error(micro_key, tr(
            "the {role}'s {part} pass has M = {count} micro batches per rank ({batch_key} x rollout.n / "
            "data-parallel size / {micro_key} = {batch} x {n} / {dp} / {micro}), and the interleaved schedule "
            "(virtual pipeline size {vpp}) takes them in groups of {group}: the pass stops when it starts ({said})",
            role=name, part=part, count=count, batch_key=batch_key, micro_key=micro_key, batch=batch, n=n, dp=dp,
            micro=micro, vpp=role.vpp, group=group, said=said), "vpp-micro-batches",
            override=_fix(role, ctx, per_rank, micro, micro_key, group, engine, dp, n, part),
            hint=tr("a micro batch size that leaves whole groups, a larger batch, or no virtual pipeline ({line})",
                    line=role.mset_line("virtual_pipeline_model_parallel_size", None)))


def _fix(role: RoleView, ctx: Context, per_rank: int, micro: int, micro_key: str, group: int, engine: bool, dp: int,
         n: int, part: str) -> Optional[str]:
    """The largest micro batch size below ``micro`` whose count fills the groups (for the update, one verl's driver
    also accepts: the train batch x n a multiple of data-parallel size x micro); else no virtual pipeline."""
    train = _int(_select(ctx.config, "data.train_batch_size"))
    for size in range(micro - 1, 0, -1):
        if per_rank % size or not fills(per_rank // size, group, role.pp, engine):
            continue
        if part == "update" and train and (train * n) % (dp * size):
            continue
        return f"{micro_key}={size}"
    return role.mset_line("virtual_pipeline_model_parallel_size", None)


__all__ = ["PASSES", "fills", "vpp_micro_batches"]
