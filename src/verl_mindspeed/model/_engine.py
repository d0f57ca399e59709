"""The arithmetic behind :func:`.memory.estimate_memory`, split so the planner can try many recompute choices fast.

:func:`stage_terms` gathers each stage's long-lived terms (they depend on the sizes and the
split, not on CP or recompute); :class:`Profile` adds what depends on CP (per-layer bytes by
recompute module, logits, buffers) and the phases that do not depend on recompute;
:func:`peak` evaluates one recompute choice with plain arithmetic; :func:`components` gives
the full breakdown of one stage. The formulas are those of :mod:`.activations`.

What each phase holds follows verl 0.9.1 (``workers/engine/base.py`` ``BaseEngineCtx._context_switch``,
``workers/engine/megatron/transformer_impl.py`` ``MegatronEngine.to``): train mode (update, optimizer step)
loads weights, gradients and Adam states; eval mode (the old-log-prob pass) loads the weights only
(``load_megatron_model_to_gpu(load_grad=False)``, ``optimizer=False``), so what ``param_offload`` /
``optimizer_offload`` put on the host stays there; the ref (``forward_only``) loads its own weights.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Optional

from ._layout import Layout
from ._stages import StageShape, StageTerms, held_parts, stage_terms
from .activations import cp_transient_per_token, forward_logits_bytes, layer_parts, logits_bytes
from .overhead import DEVICES, GIB, communicators
from .recompute import Recompute
from .spec import ModelSpec

__all__ = ["PHASES", "Profile", "StageShape", "StageTerms", "build", "components", "entry", "peak", "stage_terms"]

PHASES = ("update", "log_prob", "ref_log_prob", "optimizer_step")
"""The phases, in the order a tie is decided."""


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


def phase_tokens(opts, cp: int) -> tuple[float, float, float]:
    """Tokens of one micro-batch on one CP rank in the update, the old-log-prob pass and the ref's pass."""
    update = opts.seq_len * opts.micro_batch_size
    log_prob = opts.log_prob_tokens or update
    ref = opts.ref_log_prob_tokens or log_prob
    ref_dynamic = opts.dynamic_batch if opts.ref_dynamic_batch is None else opts.ref_dynamic_batch
    return (update if opts.dynamic_batch else update / cp, log_prob if opts.dynamic_batch else log_prob / cp,
            ref if ref_dynamic else ref / cp)


class Profile:
    """One layout's stages (one split), everything but the recompute choice."""

    def _layer_terms(self, spec: ModelSpec, layout: Layout, opts) -> None:
        """The per-layer bytes, which depend on the CP algorithm (the rest does not)."""
        tp, cp = layout.tp, layout.cp
        sp = opts.sequence_parallel and tp > 1
        tokens, lp_tokens, ref_tokens = phase_tokens(opts, cp)
        self.tokens, self.lp_tokens, self.ref_tokens = tokens, lp_tokens, ref_tokens
        algo = layout.cp_algo if cp > 1 else "megatron_cp_algo"
        head = (tp, sp, cp, algo, layout.etp, opts.flash_attention)
        tail = (opts.moe_imbalance, opts.hidden_dropout, opts.fused_swiglu, opts.device == "npu")

        def one_layer(count: float) -> float:  # the larger of a dense and a MoE layer, all parts
            sizes = [sum(b for _, b in _modules(spec, False, *head, count, *tail))]
            if spec.is_moe:
                sizes.append(sum(b for _, b in _modules(spec, True, *head, count, *tail)))
            return max(sizes)

        self.dense = _modules(spec, False, *head, tokens, *tail)  # MindSpeed's experts keep the unweighted activation
        self.moe = _modules(spec, True, *head, tokens, *tail) if spec.is_moe else ()
        dense = sum(b for _, b in self.dense)
        moe = sum(b for _, b in self.moe)
        self.layer = moe if moe > dense else dense
        self.lp_layer = self.layer if lp_tokens == tokens else one_layer(lp_tokens)
        self.ref_layer = self.layer if ref_tokens == tokens else one_layer(ref_tokens)
        divisor = tp if sp else 1
        self.checkpoint = tokens * 2 * spec.hidden_size / divisor
        extra = tokens * cp_transient_per_token(spec, cp, algo, layout.ulysses_degree) / tp
        if spec.is_moe:  # the permuted tokens and their all-to-all output while a MoE layer dispatches
            extra += tokens * (spec.moe_router_topk or 1) * opts.moe_imbalance * 4 * spec.hidden_size / divisor
        if cp > 1 and algo in ("adaptive_cp_algo", "hybrid_adaptive_cp_algo"):
            seq = opts.seq_len * (cp if opts.dynamic_batch else 1)  # one packed sequence under dynamic batch size
            extra += seq * seq * (1 if opts.dynamic_batch else opts.micro_batch_size)  # the full bool attention mask
        self.extra = extra
        # Shared by the splits the planner compares on this CP algorithm (:func:`._search.choose`): a stage is known
        # by a key its index and its chunks' layers give (parameters, micro-batches in flight and logits follow
        # from them), and so are its totals.
        self.sizes: dict = {}  # recompute choice -> (_layer_bytes, {stage key: the stage's total})
        self.fixed_totals: dict = {}  # stage key -> the highest total recompute does not change

    def variant(self, spec: ModelSpec, layout: Layout, opts) -> "Profile":
        """The same layout with another CP algorithm or Ulysses degree (same sizes, same split)."""
        other = Profile.__new__(Profile)
        other.__dict__.update(self.__dict__)
        other._layer_terms(spec, layout, opts)
        return other

    def with_stages(self, terms: tuple) -> "Profile":
        """The same CP and algorithm on another split (``terms`` from :func:`stage_terms`)."""
        other = Profile.__new__(Profile)
        other.__dict__.update(self.__dict__)
        other.sizes, other.fixed_totals = {}, {}  # its stage keys are its own
        other._set_stages(terms)
        return other

    def __init__(self, spec: ModelSpec, layout: Layout, world: int, opts, terms: tuple) -> None:
        tp, cp, pp = layout.tp, layout.cp, layout.pp
        sp = opts.sequence_parallel and tp > 1
        self._layer_terms(spec, layout, opts)
        self.workload = opts.workload
        rl = opts.workload == "rl"
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
        lp_tokens, ref_tokens = self.lp_tokens, self.ref_tokens
        self.logits_update = logits_bytes(spec, self.tokens, tp, sp, fused=opts.use_fused_kernels,
                                          entropy=opts.entropy_in_update, workload=opts.workload,
                                          ce_fusion=opts.cross_entropy_fusion)[0]
        self.ref_pass = rl and opts.ref_model
        self.logits_lp = forward_logits_bytes(spec, lp_tokens, tp, fused=opts.use_fused_kernels, entropy=True) \
            if rl else 0.0
        self.logits_ref = forward_logits_bytes(spec, ref_tokens, tp, fused=opts.use_fused_kernels, entropy=False) \
            if self.ref_pass else 0.0
        self.resident_flags = (opts.param_offload, opts.optimizer_offload, opts.ref_param_offload)
        self._set_stages(terms)

    def _set_stages(self, terms: tuple) -> None:
        self.stages, self.candidates = terms
        self.cands = [(i, self.stages[i], key) for key, i in enumerate(self.candidates)]
        """(index, StageTerms, key) of each candidate stage; keys number the candidates (see
        :func:`._search.stage_keys`)."""

    def _fixed(self, i: int, stage: StageTerms, key: int) -> float:
        """The highest total of the phases recompute does not change (optimizer step, old-log-prob pass, the ref's
        pass) of stage ``i``."""
        found = self.fixed_totals.get(key)
        if found is None:
            last, ss, sd, fixed = i == len(self.stages) - 1, 1 + self.slack_s, 1 + self.slack_d, self.fixed
            update, lp, ref = stage.held
            found = update * ss + stage.optimizer_step * sd + fixed
            if self.workload == "rl":
                total = lp * ss + (self.lp_layer + (self.logits_lp if last else 0.0)) * sd + fixed
                found = total if total > found else found
            if self.ref_pass:
                total = ref * ss + (self.ref_layer + (self.logits_ref if last else 0.0)) * sd + fixed
                found = total if total > found else found
            self.fixed_totals[key] = found
        return found


def fixed_phase(prof: Profile, phase: str, stage: StageTerms, last: bool) -> tuple[float, float, float]:
    """(activations, logits, optimizer step buffers) of a phase recompute does not change; all 0 when the phase
    does not run (no log-prob passes outside RL, no ref pass without a ref model)."""
    if phase == "log_prob":
        return (prof.lp_layer, prof.logits_lp if last else 0.0, 0.0) if prof.workload == "rl" else (0.0, 0.0, 0.0)
    if phase == "ref_log_prob":
        return (prof.ref_layer, prof.logits_ref if last else 0.0, 0.0) if prof.ref_pass else (0.0, 0.0, 0.0)
    return 0.0, 0.0, stage.optimizer_step


def build(spec: ModelSpec, layout: Layout, world: int, opts) -> Optional[Profile]:
    terms = stage_terms(spec, layout, world, opts)
    return None if terms is None else Profile(spec, layout, world, opts, terms)


def _layer_bytes(prof: Profile, rc: Recompute) -> tuple[float, float, float, float]:
    """(dense kept, dense discarded, MoE kept, MoE discarded) bytes of one layer under ``rc``."""
    return entry(prof, rc)[0]


def entry(prof: Profile, rc: Recompute) -> tuple:
    """(``_layer_bytes``, {stage key: total}) of ``rc`` on ``prof``'s CP and algorithm."""
    found = prof.sizes.get(rc)
    if found is None:
        found = prof.sizes[rc] = (_sizes(prof.dense, prof.moe, rc.modules if rc.granularity == "selective" else ()),
                                  {})
    return found


@lru_cache(maxsize=8192)
def _sizes(dense: tuple, moe: tuple, removed: tuple) -> tuple[float, float, float, float]:
    return (*_split(dense, removed), *(_split(moe, removed) if moe else (0.0, 0.0)))


def _dynamic(prof: Profile, stage: StageTerms, rc: Recompute, sizes: tuple[float, float, float, float]
             ) -> tuple[float, float, list[float]]:
    """(stored, transient, stored per chunk) of a stage in the update under ``rc``."""
    dk, dd, mk, md = sizes
    base = prof.layer + prof.extra  # the backward holds gradients as large as one layer's activations
    transient = base
    full = rc.granularity == "full"
    if not full and len(stage.chunks) == 1:  # the common case: one chunk, nothing replayed
        (dense, moe), = stage.chunks
        one = (dense * dk + moe * mk) * stage.flight[0]
        dropped = md if moe else dd
        if dense + moe and dropped + base > transient:
            transient = dropped + base
        return one, transient, [one]
    full_d, full_m, chunks = dk + dd, mk + md, []
    for (dense, moe), flight in zip(stage.chunks, stage.flight):
        layers = dense + moe
        if full and layers:
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
    return sum(chunks), transient, chunks


def peak(prof: Profile, rc: Recompute, cands: Optional[list] = None, looked_up: Optional[tuple] = None
         ) -> tuple[float, int]:
    """(peak bytes, stage) of the highest stage under ``rc``; ``cands``: another split's candidate stages on the same
    CP and algorithm (:func:`._search.stage_keys`; default: ``prof``'s own); ``looked_up``: ``entry(prof, rc)``, when
    known."""
    best, where = -1.0, 0
    sizes, memo = looked_up or entry(prof, rc)
    for i, stage, key in cands or prof.cands:
        total = memo.get(key)
        if total is None:
            stored, transient, _ = _dynamic(prof, stage, rc, sizes)
            lg = prof.logits_update if i == len(prof.stages) - 1 else 0.0
            total = stage.held[0] * (1 + prof.slack_s) + (stored + (transient if transient > lg else lg)) \
                * (1 + prof.slack_d) + prof.fixed
            const = prof.fixed_totals.get(key) or prof._fixed(i, stage, key)
            memo[key] = total = const if const > total else total
        if total > best:
            best, where = total, i
    return best, where


def components(prof: Profile, index: int, rc: Recompute) -> dict:
    """Every component of stage ``index`` (bytes) in its highest phase, that phase, stored activations per chunk and
    the resident bytes."""
    stage, last = prof.stages[index], index == len(prof.stages) - 1
    stored, transient, chunks = _dynamic(prof, stage, rc, _layer_bytes(prof, rc))
    lg = prof.logits_update if last else 0.0
    best = None
    for phase in PHASES:
        held = held_parts(prof.resident_flags, phase, stage.weights, stage.grads, stage.optimizer, stage.ref,
                          stage.optimizer_pinned)
        if phase == "update":
            dynamic = (stored + max(0.0, transient - lg), lg, 0.0)
        else:
            dynamic = fixed_phase(prof, phase, stage, last)
            if not sum(dynamic):
                continue
        total = sum(held) * (1 + prof.slack_s) + sum(dynamic) * (1 + prof.slack_d)
        if best is None or total > best[0]:
            best = (total, phase, held, dynamic)
    _, phase, (weights, grads, optimizer, ref), (acts, logits, step) = best
    slack = prof.slack_s * (weights + grads + optimizer + ref) + prof.slack_d * (acts + logits + step)
    param_off, optim_off, ref_off = prof.resident_flags
    resident = (0 if param_off else stage.weights + stage.grads) \
        + (stage.optimizer_pinned if optim_off else stage.optimizer) \
        + (0 if ref_off else stage.ref) + prof.fixed
    return {"weights": weights, "gradients": grads, "optimizer": optimizer, "ref_weights": ref,
            "activations": acts, "logits": logits, "optimizer_step": step, "runtime": prof.runtime,
            "comm_buffers": prof.comm, "fragmentation": slack, "phase": phase, "stored": stored, "chunks": chunks,
            "layers": stage.layers, "resident": resident}
