"""Each Megatron pass's micro batches per data-parallel rank, fixed by the launch without dynamic batching: the
pass's batch x ``rollout.n`` over the data-parallel size, split by its micro batch size. Nothing checks them before
the pass runs.

- ``engine-micro-split``: verl's Megatron engine (the default from 0.8.0, or 0.7.x with
  ``use_legacy_worker_impl=disable``) splits a rank's samples into equal micro batches and asserts the micro batch
  size divides them (``data size must be divisible by force_group_size * micro_batch_size_per_gpu``,
  ``prepare_micro_batches``). The driver's ``validate_config`` checks only the train batch against the update's
  micro batch size.
- ``vpp-micro-batches``: interleaved pipelining (a virtual pipeline size above 1) takes micro batches in groups of
  ``microbatch_group_size_per_vp_stage`` (megatron-core's default: the pipeline size). megatron-core's
  ``forward_backward_pipelining_with_interleaving`` (every line, 0.12.1 to 0.18.2) raises when the group is larger
  than the count (``The number of contiguous micro-batches in a virtual pipeline stage should range in [PP=.., M=..]``)
  or leaves a remainder smaller than the pipeline size; verl's engine asserts before it that the count is a
  multiple of the group (``micro_batches ... must be divisible by num_batches_divided_by ...``).

The passes judged are the actor's (its log-prob pass over ``train_batch_size x n``, with
``rollout.log_prob_micro_batch_size_per_gpu``, and its update over ``ppo_mini_batch_size x n``, with
``ppo_micro_batch_size_per_gpu``) and the reference's log-prob pass. Dynamic batching packs by tokens (and rounds up
to whole groups); the critic's passes are not judged. The line is the largest smaller micro batch size that splits
the rank's samples (into whole groups, under a virtual pipeline; for the update, one the driver also accepts: the
train batch x n a multiple of data-parallel size x micro); else, for the groups, no virtual pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, Optional

from ..eras import ENGINE, ENGINE_07
from ..errors import Issue
from ..i18n import tr
from ..model.verl_options import select as _select
from ._base import SEARCH_CEILING, Context, RoleView, _int, error, rule
from .verl_engine import batch_faults

_A, _R = "actor_rollout_ref.actor", "actor_rollout_ref.rollout"
#: (role, pass, the batch key multiplied by rollout.n, the micro batch key, the dynamic batching key)
PASSES = (
    ("actor", "log-prob", "data.train_batch_size", f"{_R}.log_prob_micro_batch_size_per_gpu",
     f"{_R}.log_prob_use_dynamic_bsz"),
    ("actor", "update", f"{_A}.ppo_mini_batch_size", f"{_A}.ppo_micro_batch_size_per_gpu", f"{_A}.use_dynamic_bsz"),
    ("ref", "log-prob", "data.train_batch_size", "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
     "actor_rollout_ref.ref.log_prob_use_dynamic_bsz"),
)
_SPLIT_CITES = ("verl 0.9.1 verl/workers/engine/utils.py prepare_micro_batches (total_data_size % (force_group_size x "
                "micro_batch_size_per_gpu)); verl/workers/engine_workers.py infer_batch and train_batch (the micro "
                "batch sizes of each pass); verl/utils/config.py validate_config (what the driver checks)")
_VPP_CITES = ("megatron-core 0.12.1 megatron/core/pipeline_parallel/schedules.py forward_backward_pipelining_with_"
              "interleaving (microbatch_group_size_per_vp_stage against PP and M); verl 0.9.1 verl/workers/engine/"
              "megatron/transformer_impl.py forward_backward_batch (len(micro_batches) % num_batches_divided_by); "
              "megatron-core model_parallel_config.py (the group defaults to the pipeline size)")


@dataclass(frozen=True)
class Pass:
    """One judged pass of one role, as the launch fixes it."""

    role: RoleView
    name: str
    part: str
    batch_key: str
    micro_key: str
    batch: int
    micro: int
    n: int
    dp: int
    engine: bool

    @property
    def per_rank(self) -> int:
        return self.batch * self.n // self.dp

    @property
    def group(self) -> Optional[int]:
        """The interleaved schedule's group, or None without a virtual pipeline."""
        if (self.role.vpp or 1) <= 1 or self.role.pp <= 1:
            return None
        return _int(self.role.built.get("microbatch_group_size_per_vp_stage")) or self.role.pp

    def sizes(self) -> str:
        return f"{self.batch} x {self.n} / {self.dp}"


def fills(count: int, group: int, pp: int, engine: bool) -> bool:
    """Whether ``count`` micro batches run in groups of ``group`` on a pipeline of ``pp`` stages."""
    if group < pp or group > count:
        return False  # megatron-core's range check
    rest = count % group
    return rest == 0 if engine else not 0 < rest < pp


def passes(roles: dict[str, RoleView], ctx: Context) -> Iterator[Pass]:
    """The judged passes whose batch the data-parallel size divides (else ``batch-divisibility`` reports it)."""
    cfg, world = ctx.config, ctx.world_size
    if cfg is None or not world:
        return
    engine = ctx.era is not None and ctx.era.id in (ENGINE, ENGINE_07)
    n = _int(_select(cfg, f"{_R}.n")) or 1
    for name, part, batch_key, micro_key, dynamic_key in PASSES:
        role = roles.get(name)
        if role is None or _select(cfg, dynamic_key) is True:
            continue
        if part == "log-prob" and name == "actor" and _select(cfg, "algorithm.rollout_correction.bypass_mode") is True:
            continue  # the rollout's log-probs stand in for the old ones: no such pass
        batch, micro, model_parallel = _int(_select(cfg, batch_key)), _int(_select(cfg, micro_key)), \
            role.tp * role.pp * role.cp
        if not batch or not micro or batch < 1 or micro < 1 or world % model_parallel:
            continue
        dp = world // model_parallel
        if (batch * n) % dp == 0:
            yield Pass(role, name, part, batch_key, micro_key, batch, micro, n, dp, engine)


@rule("engine-micro-split", scope="run", cites=_SPLIT_CITES,
      holds_for="verl 0.8.0 and later, and 0.7.x with trainer.use_legacy_worker_impl=disable")
def engine_micro_split(roles: dict[str, RoleView], ctx: Context) -> Iterable[Issue]:
    """Each judged pass's micro batch size divides its samples per rank, as verl's engine asserts."""
    for p in passes(roles, ctx):
        if not p.engine or p.per_rank % p.micro == 0:
            continue
        yield error(p.micro_key, tr(
            "the {role}'s {part} pass has {per_rank} samples per rank ({batch_key} x rollout.n / data-parallel size = "
            "{sizes}), which micro batches of {micro} ({micro_key}) do not split: verl's engine asserts 'data size "
            "must be divisible by force_group_size * micro_batch_size_per_gpu' when the pass starts", role=p.name,
            part=p.part, per_rank=p.per_rank, batch_key=p.batch_key, sizes=p.sizes(), micro=p.micro,
            micro_key=p.micro_key), "engine-micro-split", override=_fix(p, ctx))


@rule("vpp-micro-batches", scope="run", cites=_VPP_CITES, holds_for="every verl release with a virtual pipeline size")
def vpp_micro_batches(roles: dict[str, RoleView], ctx: Context) -> Iterable[Issue]:
    """Each judged pass's micro batches per rank fill whole groups of the interleaved schedule."""
    for p in passes(roles, ctx):
        group = p.group
        if group is None or p.per_rank % p.micro:
            continue  # engine-micro-split reports an uneven split (the legacy worker's is not judged)
        count = p.per_rank // p.micro
        if fills(count, group, p.role.pp, p.engine):
            continue
        said = (tr("verl's engine asserts 'micro_batches ... must be divisible by num_batches_divided_by {group}'",
                   group=group) if p.engine else
                tr("megatron-core's schedule raises 'The number of contiguous micro-batches in a virtual pipeline "
                   "stage should range in [PP={pp} , M={count}]' or 'The remainder of M ...'", pp=p.role.pp,
                   count=count))
        yield error(p.micro_key, tr(
            "the {role}'s {part} pass has M = {count} micro batches per rank ({batch_key} x rollout.n / "
            "data-parallel size / {micro_key} = {batch} x {n} / {dp} / {micro}), and the interleaved schedule "
            "(virtual pipeline size {vpp}) takes them in groups of {group}: the pass stops when it starts ({said})",
            role=p.name, part=p.part, count=count, batch_key=p.batch_key, micro_key=p.micro_key, batch=p.batch,
            n=p.n, dp=p.dp, micro=p.micro, vpp=p.role.vpp, group=group, said=said), "vpp-micro-batches",
            override=_fix(p, ctx) or p.role.mset_line("virtual_pipeline_model_parallel_size", None),
            hint=tr("a micro batch size that leaves whole groups, a larger batch, or no virtual pipeline ({line})",
                    line=p.role.mset_line("virtual_pipeline_model_parallel_size", None)))


def _fix(p: Pass, ctx: Context) -> Optional[str]:
    """The largest micro batch size below the pass's that splits its samples per rank (into whole groups under a
    virtual pipeline; for the update, one verl's driver also accepts), or None. Searched from at most
    ``SEARCH_CEILING`` down: a rank's samples of twelve digits with no divisor near them would take the check hours."""
    train, group = _int(_select(ctx.config, "data.train_batch_size")), p.group
    for size in range(min(p.micro - 1, p.per_rank, SEARCH_CEILING), 0, -1):
        if p.per_rank % size or (group is not None and not fills(p.per_rank // size, group, p.role.pp, p.engine)):
            continue
        if p.part == "update" and batch_faults(p.dp, train, p.n, None, size, False)[0]:
            continue  # the driver's validate_config: the train batch x n a multiple of data-parallel size x micro
        return f"{p.micro_key}={size}"
    return None


__all__ = ["PASSES", "Pass", "engine_micro_split", "fills", "passes", "vpp_micro_batches"]
