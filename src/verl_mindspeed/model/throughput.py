"""A throughput proxy for ranking layouts: estimated seconds of one training step per device.

It is a proxy, not a prediction: nominal device rates, no overlap of communication with
compute except half of the distributed optimizer's gradient reduce-scatter and parameter
all-gather, and a step of ``MICROBATCHES_PER_DEVICE x world`` sequences. It ranks
layouts of one model on one cluster; its absolute seconds mean little. Terms
(``docs/model-checks.md`` gives the formulas): compute with recompute, pipeline bubble,
and the bytes each parallelism moves, over intra-node or inter-node bandwidth.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from ._layout import Layout
from .params import active_parameters
from .spec import ModelSpec

__all__ = ["Rates", "StepTime", "step_time"]

MICROBATCHES_PER_DEVICE = 16


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

    @cached_property
    def total(self) -> float:
        return self.compute + self.recompute + self.bubble + self.tp + self.cp + self.ep + self.pp + self.dp

    def shares(self) -> dict[str, float]:
        total = self.total or 1.0
        return {k: getattr(self, k) / total for k in ("compute", "recompute", "bubble", "tp", "cp", "ep", "pp", "dp")}


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


def step_time(spec: ModelSpec, layout: Layout, world: int, gpus_per_node: int, seq_len: int, micro_batch: int = 1,
              rates: Rates = Rates()) -> StepTime:
    """The proxy for one layout; see the module docstring for what it assumes."""
    tp, pp, cp, ep, etp = layout.tp, layout.pp, layout.cp, layout.ep, layout.etp
    dp = max(layout.dp(world), 1)
    micro = MICROBATCHES_PER_DEVICE * world // (dp * micro_batch) or 1  # micro-batches of one model replica
    tokens_step = MICROBATCHES_PER_DEVICE * world * seq_len  # tokens of one step, over all devices
    passes = 3 if layout.recompute.full else 2  # forward, backward, and the replayed forward
    layers = spec.num_layers / pp
    # FLOPs of the step shared by every device, and a fixed cost per layer pass of every micro-batch
    n = seq_len * micro_batch / cp  # tokens of one micro-batch on one rank
    efficiency = n / (n + rates.gemm_tokens)
    compute = 6 * active_parameters(spec) * tokens_step / world / (rates.flops * efficiency) \
        + micro * layers * passes * rates.layer_pass
    recompute = compute * _recompute_share(spec, layout)
    bubble = (compute + recompute) * (pp - 1) / ((layout.vpp or 1) * micro)
    h = spec.hidden_size

    def bw(group_span: int) -> float:
        return rates.intra_node if group_span <= gpus_per_node else rates.inter_node

    tp_bytes = 0.0 if tp == 1 else 4 * passes * (tp - 1) / tp * 2 * h * n  # AG + RS around attention and MLP
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
    ep_bytes = 0.0 if ep == 1 else 2 * passes * (ep - 1) / ep * kr * 2 * h * n / tp * etp
    pp_time = 0.0 if pp == 1 else micro * 2 * 2 * h * n / tp / bw(world)
    params = active_parameters(spec) / (tp * pp)  # dense share of one rank, roughly
    dp_time = 0.5 * (dp * cp - 1) / (dp * cp) * 6 * params / bw(world) if dp * cp > 1 else 0.0
    return StepTime(compute=compute, recompute=recompute, bubble=bubble, tp=micro * layers * tp_bytes / bw(tp),
                    cp=micro * layers * cp_bytes / bw(tp * cp), ep=micro * moe_layers * ep_bytes / bw(etp * ep),
                    pp=pp_time, dp=dp_time)
