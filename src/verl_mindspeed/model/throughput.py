"""A throughput proxy for ranking layouts: estimated seconds of one training step per device.

It is a proxy, not a prediction: nominal device rates, no overlap of communication with
compute except half of the distributed optimizer's gradient reduce-scatter and parameter
all-gather, and a step of ``MICROBATCHES_PER_DEVICE x world`` sequences. It ranks
layouts of one model on one cluster; its absolute seconds mean little. Terms
(``docs/model-checks.md`` gives the formulas): compute with recompute, pipeline bubble,
and the bytes each parallelism moves, over intra-node or inter-node bandwidth.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Optional

from ._layout import Layout, stage_layer_counts
from .params import active_parameters, routed_active_parameters, stage_parameters
from .spec import ModelSpec

__all__ = ["Rates", "Reason", "StepTime", "TERMS", "layout_reasons", "step_time"]

MICROBATCHES_PER_DEVICE = 16
#: The terms of a step, in the order reports list them.
TERMS = ("compute", "recompute", "bubble", "tp", "cp", "ep", "etp", "pp", "dp")


@dataclass(frozen=True)
class Rates:
    """Nominal rates of one device (an Atlas 800T A2 class NPU by default)."""

    flops: float = 150e12
    """Achieved bf16 FLOP/s (about half of the peak)."""
    intra_node: float = 100e9
    """Bytes/s of a collective inside a node."""
    inter_node: float = 20e9
    """Bytes/s of a collective across nodes (200 Gb/s RoCE per device)."""
    gemm_tokens: float = 256.0
    """Tokens per rank at which matrix multiplies reach half their rate: efficiency ``n / (n + gemm_tokens)``."""
    layer_pass: float = 1e-4
    """Fixed seconds of one layer's forward or backward on one micro-batch: kernel launches, synchronisation."""


@dataclass(frozen=True)
class StepTime:
    """Seconds per step, by cause."""

    compute: float
    recompute: float
    bubble: float
    tp: float
    cp: float
    ep: float
    pp: float
    dp: float
    etp: float = 0.0
    """The routed tokens all-gathered over ETP after the all-to-all (and reduce-scattered back)."""

    @cached_property
    def total(self) -> float:
        return sum(getattr(self, k) for k in TERMS)

    def shares(self) -> dict[str, float]:
        total = self.total or 1.0
        return {k: getattr(self, k) / total for k in TERMS}


def _recompute_share(spec: ModelSpec, layout: Layout) -> float:
    """Extra forward work as a share of forward + backward (a forward is a third)."""
    rc = layout.recompute
    if rc.full:
        return 1 / 3 if rc.method == "uniform" else 1 / 3 * min(1.0, (rc.num_layers or 1) * layout.pp / spec.num_layers)
    if rc.selective:
        share = 0.0
        mlp = 0.6 if spec.is_moe else 0.65  # the MLP's share of a layer's FLOPs
        if "moe" in rc.modules and spec.is_moe:
            share += mlp
        if "mlp" in rc.modules and not spec.is_moe:
            share += mlp
        share += 0.01 * sum(m in rc.modules for m in ("layernorm", "moe_act", "mla_up_proj"))
        share += 0.1 * ("core_attn" in rc.modules)
        return share / 3
    return 0.0


def _tokens_per_expert(spec: ModelSpec, layout: Layout, n: float) -> float:
    """Tokens one local expert receives from one micro-batch: each rank routes its ``n / TP`` tokens (sequence
    parallel) to ``top-k`` experts; an expert gets them from the ``EP`` ranks of its group, gathered over ``ETP``."""
    return n / layout.tp * (spec.moe_router_topk or 0) * layout.ep * layout.etp / (spec.num_experts or 1)


def _collectives_per_layer(spec: ModelSpec) -> float:
    """TP all-gathers and reduce-scatters of one layer's forward, averaged over the layers: two around attention, two
    around a dense MLP or the shared experts. A routed-expert MLP takes its tokens by all-to-all instead."""
    moe = spec.num_moe_layers
    shared = 2 if spec.shared_expert_intermediate_size else 0
    return (4 * (spec.num_layers - moe) + (2 + shared) * moe) / spec.num_layers


def step_time(spec: ModelSpec, layout: Layout, world: int, gpus_per_node: int, seq_len: int, micro_batch: int = 1,
              rates: Rates = Rates(), global_batch: Optional[int] = None) -> StepTime:
    """The proxy for one layout; see the module docstring for what it assumes.

    ``global_batch``: sequences of one step (default ``MICROBATCHES_PER_DEVICE x world``), for comparing with a
    run whose global batch size is known (``benchmarks/compare_throughput.py``)."""
    tp, pp, cp, ep, etp = layout.tp, layout.pp, layout.cp, layout.ep, layout.etp
    vpp = layout.vpp or 1
    dp = max(layout.dp(world), 1)
    sequences = global_batch or MICROBATCHES_PER_DEVICE * world
    micro = sequences // (dp * micro_batch) or 1  # micro-batches of one model replica
    tokens_step = sequences * seq_len  # tokens of one step, over all devices
    passes = 3 if layout.recompute.full else 2  # forward, backward, and the replayed forward
    layers = spec.num_layers / pp
    # FLOPs of the step shared by every device, at the rate its matrix multiplies reach: dense ones on the
    # micro-batch's tokens, routed experts on the tokens each expert receives; and a fixed cost per layer pass
    n = seq_len * micro_batch / cp  # tokens of one micro-batch on one rank
    routed = routed_active_parameters(spec)
    per_device = 6 * tokens_step / world / rates.flops
    compute = per_device * (active_parameters(spec) - routed) / _efficiency(n, rates) \
        + micro * layers * passes * rates.layer_pass
    if routed:
        compute += per_device * routed / _efficiency(_tokens_per_expert(spec, layout, n), rates)
    recompute = compute * _recompute_share(spec, layout)
    h = spec.hidden_size

    def bw(group_span: int) -> float:
        return rates.intra_node if group_span <= gpus_per_node else rates.inter_node

    # bytes one rank moves per layer and micro-batch, for every pass
    tp_bytes = 0.0 if tp == 1 else _collectives_per_layer(spec) * passes * (tp - 1) / tp * 2 * h * n
    a, g, d = spec.num_attention_heads, spec.num_query_groups, spec.head_dim
    kv = 2 * 2 * g * d * n / tp
    qkvo = 2 * (2 * a * d + 2 * g * d) * n / tp
    if cp == 1:
        cp_bytes = 0.0
    elif layout.cp_algo == "ulysses_cp_algo":
        cp_bytes = passes * (cp - 1) / cp * qkvo
    elif layout.cp_algo == "kvallgather_cp_algo":
        cp_bytes = passes * (cp - 1) * kv + (cp - 1) * kv
    elif layout.cp_algo in ("hybrid_cp_algo", "hybrid_adaptive_cp_algo"):
        u = layout.ulysses_degree or 1
        cp_bytes = passes * ((u - 1) / u * qkvo + (cp // u - 1) * kv)
    else:
        cp_bytes = passes * (cp - 1) * kv * 1.5  # K/V around the ring; dK/dV return in the backward
    moe_layers = spec.num_moe_layers / pp
    kr = spec.moe_router_topk or 0
    # dispatch and combine: each rank's n / TP tokens, top-k copies, all-to-all over EP (its ranks ETP apart), then
    # all-gathered over ETP (and reduce-scattered back)
    routed_bytes = 2 * passes * kr * 2 * h * n / tp
    ep_seconds = 0.0 if ep == 1 else (ep - 1) / ep * routed_bytes / bw(etp * ep)
    etp_seconds = 0.0 if etp == 1 or not spec.is_moe else (etp - 1) * routed_bytes / bw(etp)
    tp_time = micro * layers * tp_bytes / bw(tp)
    cp_time = micro * layers * cp_bytes / bw(tp * cp)
    ep_time = micro * moe_layers * ep_seconds
    etp_time = micro * moe_layers * etp_seconds
    # a stage waits for the slowest micro-batch path through the others: the bubble holds its communication too
    bubble = (compute + recompute + tp_time + cp_time + ep_time + etp_time) * (pp - 1) / (vpp * micro)
    # each virtual stage sends its output forward and its input's gradient back; verl overlaps these sends with
    # compute when the schedule is interleaved (overlap_p2p_comm = VPP > 1), so only a plain schedule waits on them
    next_stage = 2 * max(world // pp, 1)  # ranks of two neighbouring stages: one node when they fit in one
    pp_time = 0.0 if pp == 1 or vpp > 1 else micro * 2 * 2 * h * n / tp / bw(next_stage)
    # the distributed optimizer's gradient reduce-scatter and parameter all-gather (6 bytes a parameter), half
    # overlapped: shared weights over DP x CP, routed experts over the expert data-parallel group
    held = _held(spec, tp, pp, ep, etp, layout.first_stage_layers, layout.last_stage_layers)
    dense_params, expert_params = held or (active_parameters(spec) / (tp * pp), 0)
    group, expert_group = dp * cp, max(world // (pp * ep * etp), 1)
    dp_time = 0.5 * 6 * (dense_params * (group - 1) / group + expert_params * (expert_group - 1) / expert_group) \
        / bw(world)
    return StepTime(compute=compute, recompute=recompute, bubble=bubble, tp=tp_time, cp=cp_time, ep=ep_time,
                    etp=etp_time, pp=pp_time, dp=dp_time)


@lru_cache(maxsize=4096)
def _held(spec: ModelSpec, tp: int, pp: int, ep: int, etp: int, first: Optional[int], last: Optional[int]
          ) -> Optional[tuple[int, int]]:
    """(shared, routed-expert) parameters of one rank of the largest stage; ``None`` when the layers do not split."""
    stages = stage_parameters(spec, Layout(tp=tp, pp=pp, ep=ep, etp=etp, first_stage_layers=first,
                                           last_stage_layers=last))
    if not stages:
        return None
    held = max(stages, key=lambda s: s.total)
    return held.dense, held.expert


def _efficiency(tokens: float, rates: Rates) -> float:
    """The share of its rate a matrix multiply over ``tokens`` rows reaches."""
    return tokens / (tokens + rates.gemm_tokens)


@dataclass(frozen=True)
class Reason:
    """What one parallel dimension of a layout saves and costs, in the proxy's own terms.

    ``share`` is the part of the proxy step time this dimension adds (its communication; for PP the bubble
    and the stage-to-stage sends); ``facts`` holds the numbers a one-line reason quotes."""

    dimension: str
    """``tp``, ``pp``, ``vpp``, ``cp``, ``ep``, ``etp`` or ``dp``."""
    size: int
    share: float = 0.0
    facts: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        facts = {k: round(v, 4) if isinstance(v, float) else v for k, v in self.facts.items()}
        return {"dimension": self.dimension, "size": self.size, "share": round(self.share, 4), **facts}


def layout_reasons(spec: ModelSpec, layout: Layout, world: int, gpus_per_node: int, seq_len: int,
                   micro_batch: int = 1, time: Optional[StepTime] = None) -> tuple[Reason, ...]:
    """Why a layout costs what it costs: one :class:`Reason` per parallel dimension above 1, in the order
    EP, ETP, TP, CP, PP, VPP, DP, each with what it divides and what it moves (``span``: ``intra`` when the
    group fits in a node, else ``inter``), read from the same terms as :func:`step_time`."""
    time = time or step_time(spec, layout, world, gpus_per_node, seq_len, micro_batch)
    total = time.total or 1.0
    tp, pp, cp, ep, etp = layout.tp, layout.pp, layout.cp, layout.ep, layout.etp
    dp = max(layout.dp(world), 1)
    passes = 3 if layout.recompute.full else 2

    def span(group: int) -> str:
        return "intra" if group <= gpus_per_node else "inter"

    found: list[Reason] = []
    if ep > 1:
        found.append(Reason("ep", ep, time.ep / total, {"experts_per_rank": (spec.num_experts or 0) // ep,
                                                        "span": span(etp * ep)}))
    if etp > 1:
        found.append(Reason("etp", etp, time.etp / total, {"gathers_tokens": spec.is_moe, "span": span(etp)}))
    if tp > 1:
        collectives = round(_collectives_per_layer(spec) * passes)
        found.append(Reason("tp", tp, time.tp / total, {"collectives_per_layer": collectives, "span": span(tp)}))
    if cp > 1:
        facts: dict = {"tokens_per_rank": seq_len * micro_batch // cp, "algorithm": layout.cp_algo,
                       "span": span(tp * cp)}
        if layout.cp_algo in ("hybrid_cp_algo", "hybrid_adaptive_cp_algo"):
            u = layout.ulysses_degree or 1
            facts.update(ulysses=u, ring=cp // u)
        found.append(Reason("cp", cp, time.cp / total, facts))
    if pp > 1:
        counts = stage_layer_counts(spec.num_layers, pp, layout.first_stage_layers, layout.last_stage_layers) \
            or [spec.num_layers // pp]
        found.append(Reason("pp", pp, (time.bubble + time.pp) / total,
                            {"layers_min": min(counts), "layers_max": max(counts), "bubble": time.bubble / total,
                             "sends": time.pp / total}))
    if layout.vpp and layout.vpp > 1:
        found.append(Reason("vpp", layout.vpp, 0.0, {"bubble_divisor": layout.vpp}))
    if dp > 1 or time.dp > 0:  # at DP 1 the routed experts may still be reduced over their own group
        group = dp * cp if dp * cp > 1 else max(world // (pp * ep * etp), 1)
        found.append(Reason("dp", dp, time.dp / total, {"group": group, "span": span(world)}))
    return tuple(found)
