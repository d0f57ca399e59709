"""Peak memory per device of one layout during the verl actor update: tensors and what is not tensors.

Per pipeline stage (the peak is the stage with the highest total):

- weights 2 bytes per parameter (bf16), gradients 4 (verl sets ``grad_reduce_in_fp32``),
  Adam 12 (fp32 master and two moments), sharded by the distributed optimizer over
  DP x CP (dense) or the expert data-parallel group (routed experts), times
  ``1 - optimizer_offload_fraction``; the colocated ref model's bf16 weights;
- the largest of three phases of short-lived memory: the update (activations of the
  micro-batches in flight, :mod:`.activations`, plus the largest transient buffer or the
  logits), the old-log-prob pass (logits with entropy, one layer) and the optimizer step;
- what is not tensors (:mod:`.overhead`): runtime, communication buffers, fragmentation.

``param_offload`` / ``optimizer_offload`` move state to the host between phases and
verl reloads it for the update: they lower ``resident_outside_update``, not the peak.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Mapping, Optional

from ._layout import Layout, stage_layer_counts
from .activations import chunk_in_flight, cp_transient_per_token, layer_parts, logits_bytes, per_token, \
    stage_activation_bytes
from .overhead import DEVICES, communicators, nontensor_bytes, optimizer_step_bytes
from .params import StageParams, stage_parameters
from .recompute import FULL_UNIFORM_1, NO_RECOMPUTE, Recompute
from .spec import ModelSpec

__all__ = ["COMPONENTS", "GIB", "MemoryEstimate", "MemoryOptions", "estimate_for_role", "estimate_memory",
           "layout_from_role"]

GIB = 1024**3
COMPONENTS = ("weights", "gradients", "optimizer", "ref_weights", "activations", "logits", "optimizer_step",
              "runtime", "comm_buffers", "fragmentation")
"""The parts of the peak, in the order they stack (they sum to the peak)."""


@dataclass(frozen=True, kw_only=True)
class MemoryOptions:
    """What the estimate assumes about the run."""

    seq_len: int = 4096
    """Tokens of one sequence (prompt + response); with dynamic batch size, ``ppo_max_token_len_per_gpu``."""
    micro_batch_size: int = 1
    """Sequences per micro-batch (``b``); tokens per micro-batch are ``seq_len x micro_batch_size``."""
    distributed_optimizer: bool = True
    """verl's default ``megatron.use_distributed_optimizer``."""
    sequence_parallel: bool = True
    """verl's default; only acts when TP > 1."""
    flash_attention: bool = True
    """MindSpeed requires FA on; without it the ``5*a*s`` score bytes per token return."""
    full_recompute: bool = False
    """Use full/uniform/1 recompute when the layout itself names none (the old ``--full-recompute``)."""
    ref_param_offload: bool = False
    """``actor_rollout_ref.ref.megatron.param_offload``."""
    param_offload: bool = False
    """``actor_rollout_ref.actor.megatron.param_offload``."""
    optimizer_offload: bool = False
    """``actor_rollout_ref.actor.megatron.optimizer_offload``."""
    optimizer_offload_fraction: float = 0.0
    """megatron ``optimizer_offload_fraction``: the share of Adam states kept on the host during the step."""
    use_fused_kernels: bool = False
    """``actor_rollout_ref.model.use_fused_kernels``: log-probs and entropy without materialized logits."""
    entropy_in_update: bool = False
    """The update computes entropy (``entropy_coeff != 0`` or ``actor.calculate_entropy``)."""
    fused_swiglu: bool = True
    """SwiGLU keeps only its input (megatron-core and MindSpeed); legacy megatron also keeps the SiLU output."""
    hidden_dropout: bool = False
    """Hidden dropout on (megatron pre-training's default); HF models converted for RL have none."""
    moe_imbalance: float = 1.0
    """Routed tokens on the busiest expert rank over the balanced share (1.0: perfectly balanced)."""
    workload: str = "rl"
    """``rl`` (verl actor update, colocated ref, log-prob pass) or ``pretrain`` (plain megatron, for calibration)."""
    device: str = "npu"
    """``npu`` or ``gpu``: the runtime and communication-buffer constants."""
    hccl_buffsize_mib: Optional[float] = None
    """``HCCL_BUFFSIZE`` when set (MB per direction); ``None`` uses the device default."""
    reserve_gib: Optional[float] = None
    """A flat reserve instead of the non-tensor model (runtime, buffers, fragmentation)."""


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes per device on the pipeline stage with the highest peak, by component."""

    weights: int
    gradients: int
    optimizer: int
    activations: int
    ref_weights: int
    resident_outside_update: int
    """What stays on the device between updates, given the offload flags."""
    logits: int = 0
    optimizer_step: int = 0
    runtime: int = 0
    comm_buffers: int = 0
    fragmentation: int = 0
    stage: int = 0
    """The pipeline stage of the peak."""
    phase: str = "update"
    """``update``, ``log_prob`` or ``optimizer_step``: the phase of the peak."""
    stages: tuple = field(default=(), compare=False)
    """Per stage: ``{"stage", "layers", "peak", "activations", "chunks"}`` in bytes."""

    @property
    def reserve(self) -> int:
        """Everything that is not tensors (runtime, communication buffers, fragmentation)."""
        return self.runtime + self.comm_buffers + self.fragmentation

    @property
    def peak(self) -> int:
        return sum(getattr(self, name) for name in COMPONENTS)

    @property
    def peak_gib(self) -> float:
        return self.peak / GIB

    @property
    def tensors(self) -> int:
        """The peak without the non-tensor terms: what ``max_memory_allocated`` measures."""
        return self.peak - self.reserve

    def breakdown(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in COMPONENTS}


@lru_cache(maxsize=4096)
def _layer(spec: ModelSpec, moe: bool, tp: int, sp: bool, cp: int, algo: str, etp: int, flash: bool,
           seq_per_rank: float, imbalance: float, dropout: bool, swiglu: bool, removed: tuple[str, ...]) -> tuple[float, float]:
    parts = layer_parts(spec, moe, tp=tp, cp=cp, cp_algo=algo, etp=etp, flash=flash, seq_per_rank=seq_per_rank,
                        imbalance=imbalance, dropout=dropout, fused_swiglu=swiglu)
    return per_token(parts, tp, sp, removed)


def _moe_prefix(spec: ModelSpec) -> list[int]:
    prefix = [0]
    for i in range(spec.num_layers):
        prefix.append(prefix[-1] + spec.is_moe_layer(i))
    return prefix


_PREFIX: dict[ModelSpec, list[int]] = {}


def _chunks(spec: ModelSpec, counts: list[int], stage: int, vpp: Optional[int]) -> list[tuple[int, int]]:
    """(dense, MoE) layers of each model chunk of ``stage``."""
    prefix = _PREFIX.get(spec)
    if prefix is None:
        prefix = _PREFIX[spec] = _moe_prefix(spec)
        if len(_PREFIX) > 64:
            _PREFIX.clear()
    ranges = []
    if vpp and vpp > 1:
        per_chunk, pp = counts[stage] // vpp, len(counts)
        ranges = [((j * pp + stage) * per_chunk, (j * pp + stage + 1) * per_chunk) for j in range(vpp)]
    else:
        start = sum(counts[:stage])
        ranges = [(start, start + counts[stage])]
    out = []
    for lo, hi in ranges:
        lo, hi = min(lo, spec.num_layers), min(hi, spec.num_layers)
        moe = prefix[hi] - prefix[lo]
        out.append((hi - lo - moe, moe))
    return out


def _stage(spec: ModelSpec, layout: Layout, world: int, stage: int, counts: list[int], params: StageParams,
           recompute: Recompute, opts: MemoryOptions) -> MemoryEstimate:
    tp, cp, pp = layout.tp, layout.cp, layout.pp
    sp = opts.sequence_parallel and tp > 1
    tokens = opts.seq_len * opts.micro_batch_size / cp
    removed = recompute.modules if recompute.selective else ()
    algo = layout.cp_algo if cp > 1 else "megatron_cp_algo"
    key = (tp, sp, cp, algo, layout.etp, opts.flash_attention, tokens, opts.moe_imbalance, opts.hidden_dropout,
           opts.fused_swiglu, removed)
    dense = tuple(tokens * x for x in _layer(spec, False, *key))
    moe = tuple(tokens * x for x in _layer(spec, True, *key)) if spec.is_moe else (0.0, 0.0)
    divisor = tp if sp else 1
    # the backward of a layer holds gradients of its intermediates: as many bytes as one layer stores
    transient = max(sum(dense), sum(moe)) + tokens * cp_transient_per_token(spec, cp, algo, layout.ulysses_degree) / tp
    if spec.is_moe:
        transient += tokens * (spec.moe_router_topk or 1) * opts.moe_imbalance * 4 * spec.hidden_size / divisor
        # the permuted tokens and their all-to-all output, while a MoE layer dispatches
    if cp > 1 and algo in ("adaptive_cp_algo", "hybrid_adaptive_cp_algo"):
        transient += opts.seq_len * opts.seq_len * opts.micro_batch_size  # the full bool attention mask
    last = stage == pp - 1
    lg_update, lg_logprob = logits_bytes(spec, tokens, tp, sp, fused=opts.use_fused_kernels,
                                         entropy=opts.entropy_in_update, workload=opts.workload) if last else (0, 0)
    acts = stage_activation_bytes(
        _chunks(spec, counts, stage, layout.vpp), chunk_in_flight(pp, layout.vpp, stage),
        dense_layer=dense, moe_layer=moe, checkpoint=tokens * 2 * spec.hidden_size / divisor, recompute=recompute,
        transient_layer=transient, logits=lg_update)
    update = acts.stored + max(acts.transient, lg_update)
    logprob = lg_logprob + max(sum(dense), sum(moe)) if opts.workload == "rl" else 0.0
    dp, edp = max(layout.dp(world) * cp, 1), max(layout.expert_dp(world), 1)
    weights, grads = 2 * params.total, 4 * params.total
    if opts.distributed_optimizer:
        shard = params.dense / dp + params.expert / edp
    else:
        shard = params.total
    optimizer = 12 * shard * (1 - min(max(opts.optimizer_offload_fraction, 0.0), 1.0))
    step = optimizer_step_bytes(shard)
    phase, dynamic = max((("update", update), ("log_prob", logprob), ("optimizer_step", step)), key=lambda x: x[1])
    if phase == "update":
        parts = {"activations": acts.stored + max(0.0, acts.transient - lg_update), "logits": lg_update}
    elif phase == "log_prob":
        parts = {"activations": logprob - lg_logprob, "logits": lg_logprob}
    else:
        parts = {"activations": 0.0, "logits": 0.0, "optimizer_step": step}
    ref = 0 if (opts.ref_param_offload or opts.workload != "rl") else weights
    if opts.reserve_gib is not None:
        extra = {"runtime": opts.reserve_gib * GIB}
    else:
        groups = communicators(tp=tp, pp=pp, cp=cp, dp=layout.dp(world), ep=layout.ep, etp=layout.etp,
                               expert_dp=layout.expert_dp(world), moe=spec.is_moe)
        extra = nontensor_bytes(DEVICES.get(opts.device, DEVICES["npu"]), groups=groups,
                                static=weights + grads + optimizer + ref, dynamic=dynamic,
                                hccl_buffsize_mib=opts.hccl_buffsize_mib)
    resident = (0 if opts.param_offload else weights + grads) + (0 if opts.optimizer_offload else optimizer) + ref \
        + extra.get("runtime", 0) + extra.get("comm_buffers", 0)
    values = {name: int(v) for name, v in {**parts, **extra}.items()}
    summary = {"stage": stage, "layers": counts[stage], "activations": int(acts.stored),
               "chunks": [int(c) for c in acts.chunks]}
    return MemoryEstimate(weights=weights, gradients=grads, optimizer=int(optimizer), ref_weights=ref,
                          resident_outside_update=int(resident), stage=stage, phase=phase,
                          stages=(summary,), **values)


@lru_cache(maxsize=8192)
def _params(spec: ModelSpec, tp: int, pp: int, ep: int, etp: int, first: Optional[int], last: Optional[int]):
    return stage_parameters(spec, Layout(tp=tp, pp=pp, ep=ep, etp=etp, first_stage_layers=first,
                                         last_stage_layers=last))


def estimate_memory(spec: ModelSpec, layout: Layout, world: int, opts: MemoryOptions = MemoryOptions()
                    ) -> Optional[MemoryEstimate]:
    """The estimate for the pipeline stage with the highest peak, or ``None`` when the layers do not split."""
    stages = _params(spec, layout.tp, layout.pp, layout.ep, layout.etp, layout.first_stage_layers,
                     layout.last_stage_layers)
    counts = stage_layer_counts(spec.num_layers, layout.pp, layout.first_stage_layers, layout.last_stage_layers)
    if stages is None or counts is None:
        return None
    recompute = layout.recompute
    if recompute == NO_RECOMPUTE and opts.full_recompute:
        recompute = FULL_UNIFORM_1
    found = [_stage(spec, layout, world, s, counts, p, recompute, opts) for s, p in enumerate(stages)]
    best = max(found, key=lambda e: e.peak)
    summaries = tuple({**e.stages[0], "peak": e.peak} for e in found)
    return _replace_stages(best, summaries)


def _replace_stages(estimate: MemoryEstimate, stages: tuple) -> MemoryEstimate:
    from dataclasses import replace

    return replace(estimate, stages=stages)


_SIZE_KEYS = {"tp": "tensor_model_parallel_size", "pp": "pipeline_model_parallel_size",
              "vpp": "virtual_pipeline_model_parallel_size", "cp": "context_parallel_size",
              "ep": "expert_model_parallel_size", "etp": "expert_tensor_parallel_size"}


def _size(value: Any, default: Optional[int]) -> Optional[int]:
    if isinstance(value, bool) or not isinstance(value, int):
        return default
    return value


def layout_from_role(sizes_and_dict: Mapping[str, Any]) -> Layout:
    """The :class:`Layout` a role's ``megatron`` section selects (sizes plus ``override_transformer_config``)."""
    otc = sizes_and_dict.get("override_transformer_config") or {}
    tp = _size(sizes_and_dict.get(_SIZE_KEYS["tp"]), 1) or 1
    vpp = _size(sizes_and_dict.get(_SIZE_KEYS["vpp"]), None)
    granularity = otc.get("recompute_granularity")
    if granularity == "full":
        recompute = Recompute("full", otc.get("recompute_method") or "uniform", _size(otc.get("recompute_num_layers"), 1))
    elif granularity == "selective":
        modules = otc.get("recompute_modules")
        recompute = Recompute("selective", modules=tuple(modules) if isinstance(modules, (list, tuple)) else ("core_attn",))
    else:
        recompute = NO_RECOMPUTE
    return Layout(
        tp=tp, pp=_size(sizes_and_dict.get(_SIZE_KEYS["pp"]), 1) or 1, vpp=vpp if vpp and vpp > 1 else None,
        cp=_size(sizes_and_dict.get(_SIZE_KEYS["cp"]), 1) or 1, ep=_size(sizes_and_dict.get(_SIZE_KEYS["ep"]), 1) or 1,
        etp=_size(sizes_and_dict.get(_SIZE_KEYS["etp"]), None) or tp,
        first_stage_layers=_size(otc.get("num_layers_in_first_pipeline_stage"), None),
        last_stage_layers=_size(otc.get("num_layers_in_last_pipeline_stage"), None),
        cp_algo=otc.get("context_parallel_algo") or "megatron_cp_algo",
        ulysses_degree=_size(otc.get("ulysses_degree_in_cp"), None), recompute=recompute,
    )


def estimate_for_role(spec: ModelSpec, sizes_and_dict: Mapping[str, Any], world: int,
                      options: MemoryOptions = MemoryOptions()) -> Optional[MemoryEstimate]:
    """The peak per device for one role's ``megatron`` section, for ``check --model-config``.

    ``sizes_and_dict`` is the role's ``megatron`` mapping: the parallel sizes
    (``tensor_model_parallel_size`` ...), ``use_distributed_optimizer``, ``param_offload``,
    ``optimizer_offload`` and the ``override_transformer_config`` dict (first/last stage
    sizes, CP algorithm, ``ulysses_degree_in_cp``, recompute keys). ``options`` gives what the
    section does not hold (sequence length, micro-batch size, fused kernels, device).
    Returns ``None`` when the layers do not split over the pipeline; never raises on odd values.
    """
    from dataclasses import replace

    flags = {}
    for key, name in (("use_distributed_optimizer", "distributed_optimizer"), ("param_offload", "param_offload"),
                      ("optimizer_offload", "optimizer_offload")):
        if isinstance(sizes_and_dict.get(key), bool):
            flags[name] = sizes_and_dict[key]
    layout = layout_from_role(sizes_and_dict)
    if world < 1 or world % (layout.tp * layout.pp * layout.cp) or world % (layout.etp * layout.ep * layout.pp):
        return None
    try:
        return estimate_memory(spec, layout, world, replace(options, **flags))
    except (ValueError, ZeroDivisionError, TypeError):
        return None
