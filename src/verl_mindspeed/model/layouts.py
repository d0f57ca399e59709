"""Every parallel layout that works for a model on a cluster, with its memory and overrides.

Candidates are (TP, PP, VPP, CP, EP, ETP) with:

- TP a divisor of the devices per node (tensor parallelism stays inside a node),
  dividing the attention heads and the query groups;
- PP at most the layer count; layers split evenly, or else with megatron's
  ``num_layers_in_first/last_pipeline_stage`` (:func:`balanced_pipeline_split`);
- VPP ``None`` or a divisor (>= 2) of every stage's layers, only with PP > 1 and
  an even split (VPP needs ``use_mbridge=False`` on NPU, so the overrides say so);
- CP with ``world % (TP x PP x CP) == 0`` and ``seq_len % (2 x CP) == 0``
  (MindSpeed's default ring algorithm);
- for MoE models, EP a divisor of the experts and ETP a divisor of TP with
  ``world % (ETP x EP x PP) == 0``; dense models use EP = ETP = 1.

Ranking (documented in ``docs/model-checks.md``): layouts that fit first; among
them the least model parallelism (largest data-parallel size: smallest
TP x PP x CP), then fewer pipeline stages, less CP, smaller TP, smaller ETP,
smaller EP, no VPP, and finally the lower memory. Layouts that do not fit follow,
by memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

from ._constraints import balanced_pipeline_split, experts_split, ffn_split, groups_split, heads_split, vpp_splits
from ._layout import Layout
from .memory import GIB, MemoryEstimate, MemoryOptions, estimate_memory
from .spec import ModelSpec

__all__ = ["LayoutPlan", "enumerate_layouts", "layout_overrides", "plan_layouts"]

_ACTOR = "actor_rollout_ref.actor.megatron"
_REF = "actor_rollout_ref.ref.megatron"


@dataclass(frozen=True)
class LayoutPlan:
    """One valid layout with its estimate and the overrides that select it."""

    layout: Layout
    memory: MemoryEstimate
    fits: bool
    overrides: tuple[str, ...]

    def to_json(self) -> dict:
        lay = self.layout
        return {
            "tensor_model_parallel_size": lay.tp,
            "pipeline_model_parallel_size": lay.pp,
            "virtual_pipeline_model_parallel_size": lay.vpp,
            "context_parallel_size": lay.cp,
            "expert_model_parallel_size": lay.ep,
            "expert_tensor_parallel_size": lay.etp,
            "num_layers_in_first_pipeline_stage": lay.first_stage_layers,
            "num_layers_in_last_pipeline_stage": lay.last_stage_layers,
            "memory_gib_per_device": round(self.memory.peak_gib, 2),
            "memory_breakdown_gib": {
                name: round(getattr(self.memory, name) / GIB, 2)
                for name in ("weights", "gradients", "optimizer", "activations", "ref_weights", "reserve",
                             "resident_outside_update")
            },
            "fits": self.fits,
            "overrides": list(self.overrides),
        }


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _pipeline_options(spec: ModelSpec, pp: int) -> Iterator[tuple[Optional[int], Optional[int], Optional[int]]]:
    """(first, last, vpp) choices for ``pp`` stages."""
    split = balanced_pipeline_split(spec.num_layers, pp)
    if split is None:
        return
    first, last = split
    yield first, last, None
    if pp > 1 and first is None and last is None:
        per_stage = spec.num_layers // pp
        for vpp in _divisors(per_stage):
            if vpp >= 2 and vpp_splits([per_stage], vpp):
                yield None, None, vpp


def _expert_options(spec: ModelSpec, world: int, tp: int, pp: int) -> Iterator[tuple[int, int]]:
    if not spec.is_moe:
        yield 1, 1
        return
    for etp in _divisors(tp):
        for ep in _divisors(spec.num_experts or 1):
            if experts_split(spec, ep) and world % (etp * ep * pp) == 0 and not ffn_split(spec, tp, etp):
                yield ep, etp


def enumerate_layouts(spec: ModelSpec, nnodes: int, gpus_per_node: int, seq_len: int = 4096) -> Iterator[Layout]:
    """Every layout that passes the layout rules for ``spec`` on ``nnodes x gpus_per_node`` devices."""
    world = nnodes * gpus_per_node
    for tp in _divisors(gpus_per_node):
        if world % tp or not (heads_split(spec, tp) and groups_split(spec, tp)) or ffn_split(spec, tp, 1):
            continue
        for pp in _divisors(world // tp):
            for first, last, vpp in _pipeline_options(spec, pp):
                for cp in _divisors(world // (tp * pp)):
                    if cp > 1 and seq_len % (2 * cp):
                        continue
                    for ep, etp in _expert_options(spec, world, tp, pp):
                        yield Layout(tp=tp, pp=pp, vpp=vpp, cp=cp, ep=ep, etp=etp,
                                     first_stage_layers=first, last_stage_layers=last)


def layout_overrides(spec: ModelSpec, layout: Layout) -> tuple[str, ...]:
    """Hydra overrides selecting ``layout`` for actor and ref.

    The ref inherits the actor's ``override_transformer_config`` dict; writing
    under ``ref...override_transformer_config`` would replace that dict, so the
    dict keys are only set for the actor.
    """
    sizes = [
        ("tensor_model_parallel_size", layout.tp),
        ("pipeline_model_parallel_size", layout.pp),
        ("virtual_pipeline_model_parallel_size", layout.vpp if layout.vpp else "null"),
        ("context_parallel_size", layout.cp),
    ]
    if spec.is_moe:
        sizes += [("expert_model_parallel_size", layout.ep), ("expert_tensor_parallel_size", layout.etp)]
    lines = [f"{prefix}.{name}={value}" for prefix in (_ACTOR, _REF) for name, value in sizes]
    otc = f"++{_ACTOR}.override_transformer_config"  # ++ adds or replaces: safe on any launch line
    if layout.cp > 1:
        lines.append(f"{otc}.context_parallel_size={layout.cp}")
    if layout.first_stage_layers is not None:
        lines.append(f"{otc}.num_layers_in_first_pipeline_stage={layout.first_stage_layers}")
    if layout.last_stage_layers is not None:
        lines.append(f"{otc}.num_layers_in_last_pipeline_stage={layout.last_stage_layers}")
    if layout.vpp:
        lines.append(f"{_ACTOR}.use_mbridge=False")
    return tuple(lines)


def _rank_key(plan: LayoutPlan) -> tuple:
    lay = plan.layout
    if not plan.fits:
        return (1, plan.memory.peak)
    return (0, lay.tp * lay.pp * lay.cp, lay.pp, lay.cp, lay.tp, lay.etp, lay.ep, lay.vpp or 1, plan.memory.peak)


def plan_layouts(
    spec: ModelSpec,
    nnodes: int,
    gpus_per_node: int,
    *,
    device_memory_gib: float = 64.0,
    options: MemoryOptions = MemoryOptions(),
) -> list[LayoutPlan]:
    """Every valid layout with its memory estimate, ranked best first."""
    world = nnodes * gpus_per_node
    plans = []
    for layout in enumerate_layouts(spec, nnodes, gpus_per_node, options.seq_len):
        memory = estimate_memory(spec, layout, world, options)
        if memory is None:
            continue
        plans.append(LayoutPlan(layout, memory, memory.peak_gib <= device_memory_gib,
                                layout_overrides(spec, layout)))
    plans.sort(key=_rank_key)
    return plans

