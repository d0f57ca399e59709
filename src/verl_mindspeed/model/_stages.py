"""The memory engine's per-stage records: what a pipeline stage holds, and its long-lived memory terms.

:func:`stage_terms` depends on the sizes and the stage split, not on CP, the CP algorithm or
recompute, so the planner computes it once per split and shares it (:mod:`._engine`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple, Optional

from ._layout import Layout, stage_layer_counts
from .activations import chunk_in_flight
from .overhead import optimizer_step_bytes
from .params import StageParams, layer_params
from .spec import ModelSpec

__all__ = ["StageShape", "StageTerms", "adam_bytes", "held_parts", "stage_terms"]


class StageShape(NamedTuple):
    """What one pipeline stage holds, before any option is applied."""

    dense: int
    """Parameters of its dense part (attention, dense MLPs, embeddings, head)."""
    expert: int
    """Parameters of its experts (sharded over expert data parallel by the distributed optimizer)."""
    chunks: tuple
    """(dense, MoE) layers of each model chunk (VPP)."""
    flight: tuple
    """Micro-batches in flight per chunk (1F1B / interleaved schedule)."""
    layers: int
    """Layers of the stage."""


class StageTerms(NamedTuple):
    """One stage's memory terms that no recompute choice changes (bytes), and what the activations are made of."""

    weights: float
    grads: float
    optimizer: float
    ref: float
    """The colocated ref model's weights (whether or not offloaded between its passes)."""
    optimizer_step: float
    """The optimizer step's temporary buffers."""
    chunks: tuple
    flight: tuple
    layers: int
    held: tuple = (0.0, 0.0, 0.0)
    """Long-lived bytes on the device in the update, the old-log-prob pass and the ref's pass (:func:`held_parts`);
    set on the stages that can hold the peak only."""
    in_flight: int = 0
    """Micro-batches in flight summed over the chunks that hold layers (each keeps at least one layer input); set on
    the stages that can hold the peak only."""
    optimizer_pinned: float = 0.0
    """The part of ``optimizer`` that verl's ``optimizer_offload`` leaves on the device (:func:`adam_bytes`)."""


@lru_cache(maxsize=1024)
def _prefix(spec: ModelSpec, tp: int, ep: int, etp: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Prefix sums of the (dense, expert) parameters of the layers on one rank."""
    dense, expert = [0], [0]
    per_kind = {kind: layer_params(spec, i, tp, ep, etp) for kind, i in _first_of_each_kind(spec)}
    for i in range(spec.num_layers):
        d, e = per_kind[spec.is_moe_layer(i)]
        dense.append(dense[-1] + d)
        expert.append(expert[-1] + e)
    return tuple(dense), tuple(expert)


def _first_of_each_kind(spec: ModelSpec) -> list[tuple[bool, int]]:
    found: dict[bool, int] = {}
    for i in range(spec.num_layers):
        found.setdefault(spec.is_moe_layer(i), i)
        if len(found) == 2:
            break
    return list(found.items())


def _params(spec: ModelSpec, tp: int, pp: int, ep: int, etp: int, first: Optional[int], last: Optional[int]):
    """:func:`.params.stage_parameters` from prefix sums (layers differ only by being dense or MoE)."""
    counts = stage_layer_counts(spec.num_layers, pp, first, last)
    if counts is None:
        return None
    dense, expert = _prefix(spec, tp, ep, etp)
    embedding = -(-spec.vocab_size // tp) * spec.hidden_size
    out, start = [], 0
    for stage, count in enumerate(counts):
        d = dense[start + count] - dense[start]
        if stage == 0:
            d += embedding
        if stage == len(counts) - 1:
            d += spec.hidden_size + (embedding if (not spec.tied_embeddings or pp > 1) else 0)
        out.append(StageParams(count, d, expert[start + count] - expert[start]))
        start += count
    return out


@lru_cache(maxsize=64)
def _moe_prefix(spec: ModelSpec) -> tuple[int, ...]:
    prefix = [0]
    for i in range(spec.num_layers):
        prefix.append(prefix[-1] + spec.is_moe_layer(i))
    return tuple(prefix)


def _chunks(spec: ModelSpec, counts: list[int], stage: int, vpp: Optional[int]) -> list[tuple[int, int]]:
    prefix, pp = _moe_prefix(spec), len(counts)
    if vpp and vpp > 1:
        per = counts[stage] // vpp
        ranges = [((j * pp + stage) * per, (j * pp + stage + 1) * per) for j in range(vpp)]
    else:
        start = sum(counts[:stage])
        ranges = [(start, start + counts[stage])]
    out = []
    for lo, hi in ranges:
        lo, hi = min(lo, spec.num_layers), min(hi, spec.num_layers)
        out.append((hi - lo - (prefix[hi] - prefix[lo]), prefix[hi] - prefix[lo]))
    return out


@lru_cache(maxsize=8192)
def _shapes(spec: ModelSpec, tp: int, pp: int, vpp: Optional[int], ep: int, etp: int, first: Optional[int],
            last: Optional[int]) -> Optional[tuple]:
    """Each stage's :class:`StageShape`, and the stages that can hold the peak."""
    counts = stage_layer_counts(spec.num_layers, pp, first, last)
    params = _params(spec, tp, pp, ep, etp, first, last)
    if counts is None or params is None or (vpp and vpp > max(counts, default=0)):
        return None  # the layers do not split (a VPP past a stage's layers leaves its chunks empty)
    stages = tuple(StageShape(p.dense, p.expert, tuple(_chunks(spec, counts, i, vpp)), chunk_in_flight(pp, vpp, i),
                              counts[i]) for i, p in enumerate(params))
    seen, candidates = set(), []
    for i, s in enumerate(stages):
        shape = (s.dense, s.expert, s.chunks, i == pp - 1)
        if shape not in seen:  # an equal earlier stage holds more micro-batches in flight
            seen.add(shape)
            candidates.append(i)
    return stages, tuple(candidates)


def stage_terms(spec: ModelSpec, layout: Layout, world: int, opts) -> Optional[tuple]:
    """(each stage's :class:`StageTerms`, the stages that can hold the peak), or ``None`` when the layers do not
    split; the same for every CP size (the dense states shard over DP x CP = world / (TP x PP))."""
    shapes = _shapes(spec, layout.tp, layout.pp, layout.vpp, layout.ep, layout.etp, layout.first_stage_layers,
                     layout.last_stage_layers)
    if shapes is None:
        return None
    dp, edp = max(world // (layout.tp * layout.pp), 1), max(layout.expert_dp(world), 1)
    adam, pinned = adam_bytes(opts)
    grad = 4 if opts.grad_reduce_in_fp32 else 2
    ref = opts.workload == "rl" and opts.ref_model
    flags = (opts.param_offload, opts.optimizer_offload, opts.ref_param_offload)
    stages, candidates = [], set(shapes[1])
    for i, shape in enumerate(shapes[0]):
        total = shape.dense + shape.expert
        shard = shape.dense / dp + shape.expert / edp if opts.distributed_optimizer else total
        parts = (2 * total, grad * total, adam * shard, 2 * total if ref else 0)
        stage = StageTerms(*parts, optimizer_step_bytes(shard), shape.chunks, shape.flight, shape.layers,
                           optimizer_pinned=pinned * shard)
        if i in candidates:  # only these can hold the peak (:mod:`._engine` reads ``held`` of no other)
            held = tuple(sum(held_parts(flags, phase, *parts, pinned * shard))
                         for phase in ("update", "log_prob", "ref_log_prob"))
            stage = stage._replace(held=held, in_flight=sum(
                f for (dense, moe), f in zip(shape.chunks, shape.flight) if dense + moe))
        stages.append(stage)
    return tuple(stages), shapes[1]


def adam_bytes(opts) -> tuple[float, float]:
    """Device bytes of the optimizer per parameter of the distributed optimizer's shard, and the part of them that
    verl's ``optimizer_offload`` leaves on the device.

    Without the ``HybridDeviceOptimizer``: fp32 master and two fp32 moments, 12. With it (megatron-core 0.12.1
    and 0.16.1 ``optimizer/cpu_offloading/hybrid_optimizer.py``, built with ``param_update_in_fp32=True`` in
    ``optimizer/__init__.py``), a share ``1 - optimizer_offload_fraction`` of the shard by element count stays on
    the device:

    - with the precision-aware optimizer the distributed optimizer hands it the bf16 weights
      (``distrib_optimizer.py`` ``_build_model_and_main_param_groups``); it clones each kept one to fp32 (4), holds
      two fp32 moments (8) and, from the first step on, an fp32 copy of its gradient (``_set_sub_optimizer_grads``;
      its ``zero_grad`` clears only the bf16 parameters' ``decoupled_grad``): 16 per kept parameter;
    - without it the distributed optimizer keeps fp32 master shards of every parameter on the device (4, offloaded
      or not: the optimizer only clones the offloaded ones to the host) and the kept share has two moments (8).

    verl 0.9.1's ``offload_megatron_optimizer`` (``utils/megatron_utils.py``) moves the distributed optimizer's fp32
    master shards (``offload_megatron_copy_params``) and every tensor of the sub-optimizers' ``state`` (the moments)
    to the host; the HybridDeviceOptimizer's fp32 clones and their gradient copies are no state entry: 8 of the 16
    stay."""
    keep = 1 - min(max(opts.optimizer_offload_fraction, 0.0), 1.0)
    if not (opts.hybrid_optimizer or keep < 1):  # megatron reads the fraction only with the HybridDeviceOptimizer
        return 12.0, 0.0
    return (16 * keep, 8 * keep) if opts.precision_aware_optimizer else (4 + 8 * keep, 0.0)


def held_parts(flags: tuple[bool, bool, bool], phase: str, w: float, g: float, o: float, r: float,
               pinned: float = 0.0) -> tuple[float, float, float, float]:
    """(weights, gradients, Adam states, ref weights) on the device during ``phase``, of a stage's ``w``, ``g``,
    ``o``, ``r``, given ``flags`` (``param_offload``, ``optimizer_offload``, the ref's ``param_offload``);
    ``pinned``: the part of ``o`` that ``optimizer_offload`` does not move (:func:`adam_bytes`).

    verl 0.9.1 ``workers/engine/base.py`` ``BaseEngineCtx._context_switch``: train mode (the update and the
    optimizer step) loads the weights and gradients when ``param_offload``, the Adam states when
    ``optimizer_offload``; eval mode (the old-log-prob pass) loads only the weights (``grad=False``,
    ``optimizer=False``; ``utils/megatron_utils.py`` ``load_megatron_model_to_gpu(load_grad=False)``), so the
    gradients of an offloaded model and offloaded Adam states stay on the host. Between passes everything offloaded
    is on the host, so the ref's pass (a ``forward_only`` engine that loads its own weights) sees the actor's
    state only where it is not offloaded. A ref that is not offloaded stays on the device throughout."""
    param_off, optim_off, ref_off = flags
    if phase == "ref_log_prob":
        return (0.0 if param_off else w, 0.0 if param_off else g, pinned if optim_off else o, r)
    r = 0.0 if ref_off else r
    if phase == "log_prob":
        return (w, 0.0 if param_off else g, pinned if optim_off else o, r)
    return (w, g, o, r)
