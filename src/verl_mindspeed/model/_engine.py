"""The arithmetic behind :func:`.memory.estimate_memory`, split so the planner can try many recompute choices fast.

:func:`build` gathers what does not depend on recompute (parameters per stage, layers per
chunk, micro-batches in flight, per-layer bytes by recompute module, logits, buffers);
:func:`peak` evaluates one recompute choice with plain arithmetic; :func:`components`
gives the full breakdown of one stage. The formulas are those of :mod:`.activations`.
"""

from __future__ import annotations

import copy
import math
from functools import lru_cache
from typing import Optional

from ._layout import Layout, stage_layer_counts
from ._stages import StageShape, StageTerms
from .activations import chunk_in_flight, cp_transient_per_token, layer_parts, logits_bytes
from .overhead import DEVICES, GIB, communicators, optimizer_step_bytes
from .params import StageParams, layer_params
from .recompute import Recompute
from .spec import ModelSpec

__all__ = ["Profile", "StageShape", "StageTerms", "build", "components", "peak"]


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


@lru_cache(maxsize=4096)
def _modules(spec: ModelSpec, moe: bool, tp: int, sp: bool, cp: int, algo: str, etp: int, flash: bool,
             seq_per_rank: float, imbalance: float, dropout: bool, swiglu: bool,
             probs_keep_act: bool = False) -> tuple[tuple[Optional[str], float], ...]:
    """Bytes of one micro-batch (``seq_per_rank`` tokens) on one TP rank, by the recompute module that discards them."""
    sums: dict[Optional[str], float] = {}
    for part in layer_parts(spec, moe, tp=tp, cp=cp, cp_algo=algo, etp=etp, flash=flash, seq_per_rank=seq_per_rank,
                            imbalance=imbalance, dropout=dropout, fused_swiglu=swiglu, probs_keep_act=probs_keep_act):
        sums[part.module] = sums.get(part.module, 0.0) + part.bytes / (tp if (part.sharded or sp) else 1)
    return tuple((module, seq_per_rank * size) for module, size in sums.items())


def _split(modules: tuple[tuple[Optional[str], float], ...], removed: tuple[str, ...]) -> tuple[float, float]:
    kept = dropped = 0.0
    for module, size in modules:
        if module is not None and (module in removed or (module == "moe_act" and "moe" in removed)):
            dropped += size
        else:
            kept += size
    return kept, dropped


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


class Profile:
    """One layout's stages, everything but the recompute choice."""

    def _layer_terms(self, spec: ModelSpec, layout: Layout, opts) -> None:
        """The per-layer bytes, which depend on the CP algorithm (the rest does not)."""
        tp, cp = layout.tp, layout.cp
        sp = opts.sequence_parallel and tp > 1
        self.tokens = tokens = opts.seq_len * opts.micro_batch_size / cp
        algo = layout.cp_algo if cp > 1 else "megatron_cp_algo"
        key = (tp, sp, cp, algo, layout.etp, opts.flash_attention, tokens, opts.moe_imbalance, opts.hidden_dropout,
               opts.fused_swiglu, opts.device == "npu")  # MindSpeed's experts keep the unweighted activation
        self.dense = _modules(spec, False, *key)
        self.moe = _modules(spec, True, *key) if spec.is_moe else ()
        divisor = tp if sp else 1
        self.checkpoint = tokens * 2 * spec.hidden_size / divisor
        extra = tokens * cp_transient_per_token(spec, cp, algo, layout.ulysses_degree) / tp
        if spec.is_moe:  # the permuted tokens and their all-to-all output while a MoE layer dispatches
            extra += tokens * (spec.moe_router_topk or 1) * opts.moe_imbalance * 4 * spec.hidden_size / divisor
        if cp > 1 and algo in ("adaptive_cp_algo", "hybrid_adaptive_cp_algo"):
            extra += opts.seq_len * opts.seq_len * opts.micro_batch_size  # the full bool attention mask
        self.extra = extra

    def variant(self, spec: ModelSpec, layout: Layout, opts) -> "Profile":
        """The same layout with another CP algorithm or Ulysses degree (same sizes, same split)."""
        other = copy.copy(self)
        other._layer_terms(spec, layout, opts)
        return other

    def __init__(self, spec: ModelSpec, layout: Layout, world: int, opts, shapes: tuple) -> None:
        tp, cp, pp = layout.tp, layout.cp, layout.pp
        sp = opts.sequence_parallel and tp > 1
        tokens = opts.seq_len * opts.micro_batch_size / cp
        self._layer_terms(spec, layout, opts)
        self.workload = opts.workload
        dp, edp = max(layout.dp(world) * cp, 1), max(layout.expert_dp(world), 1)
        keep = 1 - min(max(opts.optimizer_offload_fraction, 0.0), 1.0)
        device = DEVICES.get(opts.device, DEVICES["npu"])
        if opts.reserve_gib is not None:
            self.fixed, self.slack_s, self.slack_d = opts.reserve_gib * GIB, 0.0, 0.0
            self.runtime, self.comm = opts.reserve_gib * GIB, 0.0
        else:
            groups = communicators(tp=tp, pp=pp, cp=cp, dp=layout.dp(world), ep=layout.ep, etp=layout.etp,
                                   expert_dp=layout.expert_dp(world), moe=spec.is_moe)
            per_group = device.buffer_mib_per_communicator if opts.hccl_buffsize_mib is None \
                else 2 * opts.hccl_buffsize_mib
            self.runtime, self.comm = device.runtime_gib * GIB, groups * per_group * 1024**2
            self.fixed, self.slack_s, self.slack_d = self.runtime + self.comm, device.slack_static, device.slack_dynamic
        lg = logits_bytes(spec, tokens, tp, sp, fused=opts.use_fused_kernels, entropy=opts.entropy_in_update,
                          workload=opts.workload, ce_fusion=opts.cross_entropy_fusion)
        self.stages = []
        for stage, shape in enumerate(shapes[0]):
            total = shape.dense + shape.expert
            shard = shape.dense / dp + shape.expert / edp if opts.distributed_optimizer else total
            ref = 0 if (opts.ref_param_offload or opts.workload != "rl") else 2 * total
            last = stage == pp - 1
            self.stages.append(StageTerms(2 * total, 4 * total, 12 * shard * keep, ref, optimizer_step_bytes(shard),
                                          shape.chunks, shape.flight, lg[0] if last else 0.0, lg[1] if last else 0.0,
                                          shape.layers))
        self.resident_flags = (opts.param_offload, opts.optimizer_offload)
        self.candidates = shapes[1]
        """Stages that can hold the peak: a stage equal to an earlier one in parameters and layers holds fewer
        micro-batches in flight, so it never does."""


@lru_cache(maxsize=8192)
def _shapes(spec: ModelSpec, tp: int, pp: int, vpp: Optional[int], ep: int, etp: int, first: Optional[int],
            last: Optional[int]) -> Optional[tuple]:
    """Each stage's :class:`StageShape`, and the stages that can hold the peak."""
    counts = stage_layer_counts(spec.num_layers, pp, first, last)
    params = _params(spec, tp, pp, ep, etp, first, last)
    if counts is None or params is None:
        return None
    stages = tuple(StageShape(p.dense, p.expert, tuple(_chunks(spec, counts, i, vpp)), chunk_in_flight(pp, vpp, i),
                              counts[i]) for i, p in enumerate(params))
    seen, candidates = set(), []
    for i, s in enumerate(stages):
        shape = (s.dense, s.expert, s.chunks, i == pp - 1)
        if shape not in seen:
            seen.add(shape)
            candidates.append(i)
    return stages, tuple(candidates)


def build(spec: ModelSpec, layout: Layout, world: int, opts) -> Optional[Profile]:
    shapes = _shapes(spec, layout.tp, layout.pp, layout.vpp, layout.ep, layout.etp, layout.first_stage_layers,
                     layout.last_stage_layers)
    if shapes is None:
        return None
    return Profile(spec, layout, world, opts, shapes)


def _layer_bytes(prof: Profile, rc: Recompute) -> tuple[float, float, float, float]:
    """(dense kept, dense discarded, MoE kept, MoE discarded) bytes of one layer under ``rc``."""
    removed = rc.modules if rc.selective else ()
    dk, dd = _split(prof.dense, removed)
    mk, md = _split(prof.moe, removed) if prof.moe else (0.0, 0.0)
    return dk, dd, mk, md


def _dynamic(prof: Profile, stage: StageTerms, rc: Recompute, sizes: tuple[float, float, float, float]
             ) -> tuple[float, float, list[float], float]:
    """(stored, transient, stored per chunk, one full layer) of a stage under ``rc``."""
    dk, dd, mk, md = sizes
    full_d, full_m = dk + dd, mk + md
    layer = full_m if full_m > full_d else full_d
    base = layer + prof.extra  # the backward holds gradients as large as one layer's activations
    transient = base
    chunks = []
    for (dense, moe), flight in zip(stage.chunks, stage.flight):
        layers = dense + moe
        if rc.full and layers:
            largest = full_m if moe else full_d
            n = min(rc.num_layers or 1, layers)
            if rc.method == "block":
                rest_moe = min(moe, layers - n)  # dense layers come first (DeepSeek's first_k_dense_replace)
                one = n * prof.checkpoint + (layers - n - rest_moe) * full_d + rest_moe * full_m
                replay = largest
            else:
                one, replay = math.ceil(layers / n) * prof.checkpoint, n * largest
            if replay + base > transient:
                transient = replay + base
        else:
            one = dense * dk + moe * mk
            if layers and (md if moe else dd) + base > transient:
                transient = (md if moe else dd) + base
        chunks.append(one * flight)
    return sum(chunks), transient, chunks, layer


def _phases(prof: Profile, stage: StageTerms, rc: Recompute, sizes: tuple) -> tuple:
    stored, transient, chunks, layer = _dynamic(prof, stage, rc, sizes)
    lg_up, lg_lp = stage.logits_update, stage.logits_logprob
    update = stored + (transient if transient > lg_up else lg_up)
    logprob = lg_lp + layer if prof.workload == "rl" else 0.0
    phase, dynamic = "update", update
    if logprob > dynamic:
        phase, dynamic = "log_prob", logprob
    if stage.optimizer_step > dynamic:
        phase, dynamic = "optimizer_step", stage.optimizer_step
    return phase, dynamic, stored, transient, chunks, layer


def peak(prof: Profile, rc: Recompute) -> tuple[float, int]:
    """(peak bytes, stage) of the highest stage under ``rc``."""
    best, where = -1.0, 0
    sizes = _layer_bytes(prof, rc)
    slack_s, slack_d = 1 + prof.slack_s, 1 + prof.slack_d
    for i in prof.candidates:
        stage = prof.stages[i]
        dynamic = _phases(prof, stage, rc, sizes)[1]
        total = (stage.weights + stage.grads + stage.optimizer + stage.ref) * slack_s + dynamic * slack_d + prof.fixed
        if total > best:
            best, where = total, i
    return best, where


def components(prof: Profile, index: int, rc: Recompute) -> dict:
    """Every component of stage ``index`` (bytes), its phase, stored activations per chunk and the resident bytes."""
    stage = prof.stages[index]
    phase, dynamic, stored, transient, chunks, layer = _phases(prof, stage, rc, _layer_bytes(prof, rc))
    weights, grads, optimizer, ref = stage.weights, stage.grads, stage.optimizer, stage.ref
    parts = {"activations": 0.0, "logits": 0.0, "optimizer_step": 0.0}
    if phase == "update":
        parts.update(activations=stored + max(0.0, transient - stage.logits_update), logits=stage.logits_update)
    elif phase == "log_prob":
        parts.update(activations=layer, logits=stage.logits_logprob)
    else:
        parts["optimizer_step"] = stage.optimizer_step
    slack = prof.slack_s * (weights + grads + optimizer + ref) + prof.slack_d * dynamic
    param_off, optim_off = prof.resident_flags
    resident = (0 if param_off else weights + grads) + (0 if optim_off else optimizer) + ref + prof.fixed
    return {"weights": weights, "gradients": grads, "optimizer": optimizer, "ref_weights": ref, **parts,
            "runtime": prof.runtime, "comm_buffers": prof.comm, "fragmentation": slack, "phase": phase,
            "stored": stored, "chunks": chunks, "layers": stage.layers, "resident": resident}
