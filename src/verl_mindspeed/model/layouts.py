"""Every parallel layout that works for a model on a cluster, with its memory, step-time proxy and overrides.

Candidates (``docs/model-checks.md`` has the full list of constraints):

- TP a divisor of the devices per node dividing the heads, query groups and MLP widths;
- PP up to the layer count, with every (first, last) stage split of
  :func:`._constraints.pipeline_splits`; for each CP size and algorithm the planner keeps the
  split with the lowest peak under the recompute it chooses (:mod:`._search`);
- VPP >= 2 dividing every stage's layers (even splits; ``use_mbridge=False``, so verl 0.6/0.7 only: MindSpeed's
  verl guide says mbridge does not support VPP on NPU yet, and ``check`` warns on the pair);
- CP with every algorithm of the MindSpeed release that accepts it (:mod:`.cp`);
- for MoE models EP dividing the experts and ETP dividing TP, ``world % (ETP x EP x PP) == 0``;
- recompute: the cheapest choice that fits, tried in this order: none, cheap selective
  modules, selective MLP/MoE, full/block with the fewest layers that fit, full/uniform/1.

Ranking: layouts that fit first, by the step-time proxy (:mod:`.throughput`), then by
peak memory; or by peak memory alone. Layouts that do not fit follow, lowest memory first.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Mapping, Optional

from ..catalog.universe import DEFAULT_RELEASE
from . import _engine
from ._constraints import (
    balanced_pipeline_split,
    experts_split,
    ffn_split,
    groups_split,
    heads_split,
    pipeline_splits,
    vpp_splits,
)
from ._layout import Layout
from ._search import choose, floors, recompute_fits_stages, split_groups
from .cp import algorithms_of, cp_variants
from .memory import COMPONENTS, GIB, MemoryEstimate, MemoryOptions, estimate_from_profile, stage_summaries
from .overrides import layout_overrides
from .recompute import FULL_UNIFORM_1, NO_RECOMPUTE, Recompute
from .spec import ModelSpec
from .throughput import StepTime, step_time

__all__ = ["LayoutPlan", "MAX_LAYERS", "MAX_WORLD", "enumerate_layouts", "evaluate_layout", "layout_overrides",
           "plan_layouts", "rank_plans", "recompute_ladder"]

MAX_LAYERS = 1024
"""Configs with more layers are refused: no trained model has them, and the work grows with them."""
MAX_WORLD = 65536
MIN_TOKENS_PER_CP_RANK = 256
"""CP is enumerated while each rank keeps at least this many tokens of a micro-batch."""
_DEFAULT_OPTIONS = MemoryOptions()  # frozen: one shared default instance is safe


@dataclass(frozen=True)
class LayoutPlan:
    """One valid layout with its estimate, proxy step time and the overrides that select it."""

    layout: Layout
    memory: MemoryEstimate
    fits: bool
    spec: Optional[ModelSpec] = field(default=None, compare=False, repr=False)
    options: MemoryOptions = field(default=MemoryOptions(), compare=False, repr=False)
    time: Optional[StepTime] = None
    relative_time: float = 1.0
    """The proxy step time over the best fitting layout's (1.0 is the fastest)."""
    tried: tuple[tuple[str, float], ...] = ()
    """(recompute choice, peak GiB) of every recompute choice estimated for this layout."""
    profile: object = field(default=None, compare=False, repr=False)
    """The built memory profile, for per-stage detail on demand."""
    release: Optional[str] = field(default=None, compare=False)
    """The MindSpeed release planned for: its megatron-core line decides which model bridge can build the model."""
    launch: Optional[Mapping[str, Any]] = field(default=None, compare=False, repr=False)
    """The actor's dict of the launch the overrides are for (``plan --args-file``): its companions follow."""
    launch_ref: Optional[Mapping[str, Any]] = field(default=None, compare=False, repr=False)
    """The ref's own dict when that launch writes one (the ref then inherits nothing from the actor's)."""
    companions: tuple[str, ...] = field(default=(), compare=False)
    """Further overrides the block needs in that launch, from ``check`` (``cli._plan_launch.complete``)."""
    checked: bool = field(default=False, compare=False)
    """The block was pasted into that launch and checked (``companions`` holds what that added)."""

    @property
    def overrides(self) -> tuple[str, ...]:
        """The Hydra overrides that select this layout and the run options the estimate assumed."""
        own = layout_overrides(self.spec, self.layout, self.options, release=self.release, launch=self.launch,
                               launch_ref=self.launch_ref) if self.spec is not None else ()
        return own + self.companions

    def stages(self) -> list[dict]:
        """Per stage: layers, peak, stored activations and their split over model chunks (bytes)."""
        if self.memory.stages or self.profile is None:
            return list(self.memory.stages)
        return stage_summaries(self.profile, self.layout.recompute)

    def to_json(self) -> dict:
        lay, mem = self.layout, self.memory
        data = {
            "tensor_model_parallel_size": lay.tp,
            "pipeline_model_parallel_size": lay.pp,
            "virtual_pipeline_model_parallel_size": lay.vpp,
            "context_parallel_size": lay.cp,
            "context_parallel_algo": lay.cp_algo if lay.cp > 1 else None,
            "ulysses_degree_in_cp": lay.ulysses_degree,
            "expert_model_parallel_size": lay.ep,
            "expert_tensor_parallel_size": lay.etp,
            "num_layers_in_first_pipeline_stage": lay.first_stage_layers,
            "num_layers_in_last_pipeline_stage": lay.last_stage_layers,
            "recompute": lay.recompute.label(),
            "memory_gib_per_device": round(mem.peak_gib, 2),
            "memory_breakdown_gib": {name: round(getattr(mem, name) / GIB, 3) for name in COMPONENTS},
            "peak_stage": mem.stage,
            "peak_phase": mem.phase,
            "stages": [{"stage": s["stage"], "layers": s["layers"], "peak_gib": round(s["peak"] / GIB, 2),
                        "activations_gib": round(s["activations"] / GIB, 3),
                        "chunk_activations_gib": [round(c / GIB, 3) for c in s["chunks"]]} for s in self.stages()],
            "resident_outside_update_gib": round(mem.resident_outside_update / GIB, 2),
            "recompute_tried": [{"recompute": label, "memory_gib_per_device": round(gib, 2)}
                                for label, gib in self.tried],
            "fits": self.fits,
            "overrides": list(self.overrides),
        }
        if self.launch is not None:
            data["overrides_checked"] = self.checked
        if self.time is not None:
            data["step_time_proxy"] = {"relative": round(self.relative_time, 3), "seconds": round(self.time.total, 4),
                                       "shares": {k: round(v, 3) for k, v in self.time.shares().items()}}
        return data


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _expert_options(spec: ModelSpec, world: int, tp: int, pp: int) -> Iterator[tuple[int, int]]:
    if not spec.is_moe:
        yield 1, 1
        return
    for etp in _divisors(tp):
        for ep in _divisors(spec.num_experts or 1):
            if experts_split(spec, ep) and world % (etp * ep * pp) == 0 and not ffn_split(spec, tp, etp):
                yield ep, etp


def _pipelines(spec: ModelSpec, pp: int, interleave: bool) -> list[tuple[Optional[int], Optional[int], Optional[int]]]:
    """(first, last, vpp) candidates: every split, and interleaving on even splits where the verl era allows VPP."""
    splits = pipeline_splits(spec.num_layers, pp)
    found = [(first, last, None) for first, last in splits]
    if interleave and pp > 1 and (None, None) in splits:
        per_stage = spec.num_layers // pp
        found += [(None, None, v) for v in _divisors(per_stage) if v >= 2 and vpp_splits([per_stage], v)]
    return found


def enumerate_layouts(spec: ModelSpec, nnodes: int, gpus_per_node: int, seq_len: int = 4096, *,
                      release: Optional[str] = DEFAULT_RELEASE, all_splits: bool = False,
                      interleave: bool = False) -> Iterator[Layout]:
    """Every layout that passes the layout rules (without recompute; one balanced split unless ``all_splits``).

    ``interleave`` adds VPP layouts: only for verl 0.6/0.7, with ``use_mbridge=False``; verl 0.8+ asserts
    ``use_mbridge``, which MindSpeed's verl guide says does not support VPP on NPU yet (``check`` warns, plan
    proposes nothing it warns on)."""
    world = nnodes * gpus_per_node
    algorithms = algorithms_of(release)
    for tp in _divisors(gpus_per_node):
        if world % tp or not (heads_split(spec, tp) and groups_split(spec, tp)) or ffn_split(spec, tp, 1):
            continue
        for pp in _divisors(world // tp):
            if pp > spec.num_layers:
                break
            if all_splits:
                pipes = _pipelines(spec, pp, interleave)
            else:
                split = balanced_pipeline_split(spec.num_layers, pp)
                pipes = ([] if split is None
                         else [(*split, None)] + [p for p in _pipelines(spec, pp, interleave) if p[2]])
            for first, last, vpp in pipes:
                for cp in _divisors(world // (tp * pp)):
                    for algo, degree in cp_variants(spec, tp, cp, seq_len, algorithms):
                        for ep, etp in _expert_options(spec, world, tp, pp):
                            yield Layout(tp=tp, pp=pp, vpp=vpp, cp=cp, ep=ep, etp=etp, first_stage_layers=first,
                                         last_stage_layers=last, cp_algo=algo, ulysses_degree=degree)


def recompute_ladder(spec: ModelSpec) -> list[Recompute]:
    """Recompute choices from the cheapest to the most thorough, before full/block and full/uniform/1."""
    cheap = ["layernorm"] + (["mla_up_proj"] if spec.is_mla else []) + (["moe_act"] if spec.is_moe else [])
    heavy = list(cheap)
    if spec.is_moe:
        heavy += ["moe"] + (["mlp"] if spec.num_moe_layers < spec.num_layers else [])
        heavy.remove("moe_act")
    else:
        heavy.append("mlp")
    return [NO_RECOMPUTE, Recompute("selective", modules=tuple(cheap)), Recompute("selective", modules=tuple(heavy))]


def plan_layouts(spec: ModelSpec, nnodes: int, gpus_per_node: int, *, device_memory_gib: float = 64.0,
                 options: MemoryOptions = _DEFAULT_OPTIONS, release: Optional[str] = DEFAULT_RELEASE,
                 sort: str = "throughput", interleave: bool = False,
                 keep_recompute: Optional[Recompute] = None) -> list[LayoutPlan]:
    """Every valid layout with its lowest-peak split and cheapest fitting recompute, ranked best first.

    ``interleave``: also VPP layouts, which only verl 0.6/0.7 runs on NPU (see :func:`enumerate_layouts`).
    ``keep_recompute``: a launch's own recompute, tried first on every layout and kept where it fits (in memory, and a
    full recompute's layer count in every stage's); where it does not, plan's own ladder decides."""
    if spec.num_layers > MAX_LAYERS:
        raise ValueError(f"{spec.num_layers} layers is more than {MAX_LAYERS}")
    world = nnodes * gpus_per_node
    if world > MAX_WORLD:
        raise ValueError(f"{world} devices is more than {MAX_WORLD}")
    limit = device_memory_gib * GIB
    base = replace(options, full_recompute=False)
    plain = [FULL_UNIFORM_1] if options.full_recompute else recompute_ladder(spec)
    ladder = plain
    if keep_recompute is not None and keep_recompute.granularity and not options.full_recompute:
        ladder = [keep_recompute] + [rc for rc in plain if rc.selective and not keep_recompute.full and
                                     set(keep_recompute.modules) < set(rc.modules)]  # then full/block, full
    algorithms = algorithms_of(release)
    plans = []
    for tp in _divisors(gpus_per_node):
        if world % tp or not (heads_split(spec, tp) and groups_split(spec, tp)) or ffn_split(spec, tp, 1):
            continue
        for pp in _divisors(world // tp):
            if pp > spec.num_layers:
                break
            pipes = _pipelines(spec, pp, interleave)
            if not pipes:
                continue
            for ep, etp in _expert_options(spec, world, tp, pp):
                groups = split_groups(spec, Layout(tp=tp, pp=pp, ep=ep, etp=etp), world, base, pipes)
                chunks = {id(g): max(min(stage.layers for stage in entry[3][0]) for entry in g) for g in groups}
                for cp in _divisors(world // (tp * pp)):
                    if cp > 1 and _engine.phase_tokens(base, cp)[0] < MIN_TOKENS_PER_CP_RANK:
                        break
                    variants = list(cp_variants(spec, tp, cp, options.seq_len, algorithms))
                    for group in groups:
                        first, last, vpp, terms, _ = group[0]
                        splits = [entry[4] for entry in group]
                        rungs = ladder if ladder is plain or recompute_fits_stages(keep_recompute, group, vpp) \
                            else plain
                        shared, floor = None, None
                        for algo, degree in variants:
                            layout = Layout(tp=tp, pp=pp, vpp=vpp, cp=cp, ep=ep, etp=etp, first_stage_layers=first,
                                            last_stage_layers=last, cp_algo=algo, ulysses_degree=degree)
                            shared = shared.variant(spec, layout, base) if shared \
                                else _engine.Profile(spec, layout, world, base, terms)
                            if floor is None:  # the same for every CP algorithm of this CP size
                                floor = floors(shared, splits) if len(splits) > 1 else [0.0]
                            j, rc, tried, stage = choose(shared, splits, limit, rungs, chunks[id(group)] // (vpp or 1),
                                                         floor)
                            prof = shared.with_stages(group[j][3]) if j else shared
                            chosen = Layout(tp=tp, pp=pp, vpp=vpp, cp=cp, ep=ep, etp=etp,
                                            first_stage_layers=group[j][0], last_stage_layers=group[j][1],
                                            cp_algo=algo, ulysses_degree=degree, recompute=rc)
                            est = estimate_from_profile(prof, rc, all_stages=False, index=stage)
                            plans.append(LayoutPlan(chosen, est, est.peak <= limit, spec, options, tried=tuple(tried),
                                                    profile=prof, release=release, time=step_time(spec, chosen, world,
                                                                                        gpus_per_node,
                                                                                        options.seq_len,
                                                                                        options.micro_batch_size)))
    return rank_plans(spec, plans, sort)


def evaluate_layout(spec: ModelSpec, layout: Layout, nnodes: int, gpus_per_node: int, *,
                    device_memory_gib: float = 64.0, options: MemoryOptions = _DEFAULT_OPTIONS
                    ) -> Optional[LayoutPlan]:
    """One given layout (its own split and recompute) as a :class:`LayoutPlan`, or ``None`` when its layers do not
    split; rank it with the others by :func:`rank_plans`."""
    world = nnodes * gpus_per_node
    opts = replace(options, full_recompute=False)
    prof = _engine.build(spec, layout, world, opts)
    if prof is None:
        return None
    est = estimate_from_profile(prof, layout.recompute, all_stages=False)
    return LayoutPlan(layout, est, est.peak <= device_memory_gib * GIB, spec, options,
                      tried=((layout.recompute.label(), est.peak_gib),), profile=prof,
                      time=step_time(spec, layout, world, gpus_per_node, options.seq_len, options.micro_batch_size))


def rank_plans(spec: ModelSpec, plans: list[LayoutPlan], sort: str = "throughput") -> list[LayoutPlan]:
    """Sort (fitting first, by the step-time proxy or by peak memory), then fill in the step time relative to the
    fastest fitting layout."""
    fitting = [p.time.total for p in plans if p.fits]
    fastest = min(fitting or [p.time.total for p in plans] or [1.0])

    def key(p: LayoutPlan) -> tuple:
        if not p.fits:
            return (1, p.memory.peak, p.time.total)
        if sort == "memory":
            return (0, p.memory.peak, p.time.total)
        return (0, round(p.time.total, 9), p.memory.peak)

    plans.sort(key=key)
    for p in plans:  # LayoutPlan is frozen only by convention here: fill the derived fields in place
        object.__setattr__(p, "relative_time", p.time.total / fastest)
    return plans

