"""Peak memory per device of one layout during the verl actor update: tensors and what is not tensors.

Per pipeline stage (the peak is the stage with the highest total):

- weights 2 bytes per parameter (bf16), gradients 4 (``grad_reduce_in_fp32``, verl's default) or 2,
  Adam 12 (fp32 master and two moments), sharded by the distributed optimizer over
  DP x CP (dense) or the expert data-parallel group (routed experts); with megatron's
  ``HybridDeviceOptimizer`` (:func:`._stages.adam_bytes`) what it keeps on the device of the
  ``1 - optimizer_offload_fraction`` it does not offload; the colocated ref model's bf16 weights;
- four phases, each with what verl 0.9.1 holds on the device then (``workers/engine/base.py``
  ``BaseEngineCtx._context_switch``): the update and the optimizer step (train mode: weights,
  gradients, Adam states; activations of the micro-batches in flight, :mod:`.activations`,
  plus the largest transient buffer or the logits; or the step's buffers), the
  old-log-prob pass (eval mode: ``param_offload`` reloads the weights only, so offloaded
  gradients and ``optimizer_offload``ed Adam states stay on the host; logits with entropy,
  one layer) and the ref's log-prob pass (the ref's weights, the actor's state only where
  it is not offloaded; logits without entropy, one layer);
- what is not tensors (:mod:`.overhead`): runtime, communication buffers, fragmentation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping, Optional

from . import _engine
from ._layout import Layout
from .recompute import FULL_UNIFORM_1, NO_RECOMPUTE, Recompute
from .spec import ModelSpec

__all__ = ["COMPONENTS", "GIB", "MemoryEstimate", "MemoryOptions", "estimate_for_role", "estimate_memory",
           "layout_from_role"]

GIB = 1024**3
HEADROOM = 0.9
"""The share of a device's memory an estimated peak may use: above it, check warns (model-memory) and plan says
the layout does not fit."""
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
    dynamic_batch: bool = False
    """``actor.use_dynamic_bsz``: ``seq_len`` is a token budget per device, and verl's Megatron engine packs
    ``seq_len x CP`` tokens into one micro-batch (``sp_size = context_parallel_size``,
    ``workers/engine/utils.py prepare_micro_batches``): each CP rank holds ``seq_len`` tokens, not ``seq_len / CP``."""
    log_prob_tokens: Optional[int] = None
    """Tokens of one old-log-prob micro-batch: ``rollout.log_prob_max_token_len_per_gpu`` with dynamic batch size,
    else the sequence times ``rollout.log_prob_micro_batch_size_per_gpu``; ``None``: the update's."""
    ref_log_prob_tokens: Optional[int] = None
    """The same for the ref's pass (``ref.log_prob_max_token_len_per_gpu`` ...); ``None``: the old-log-prob pass's."""
    ref_dynamic_batch: Optional[bool] = None
    """``ref.log_prob_use_dynamic_bsz``; ``None``: as ``dynamic_batch``."""
    ref_model: bool = True
    """verl builds a ref model (``actor.use_kl_loss`` or ``algorithm.use_kl_in_reward``)."""
    grad_reduce_in_fp32: bool = True
    """megatron DDP ``grad_reduce_in_fp32`` as verl 0.9.1 resolves it (``override_ddp_config`` first): fp32
    gradients, 4 bytes per parameter; ``False``: bf16, 2."""
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
    hybrid_optimizer: bool = False
    """megatron's ``HybridDeviceOptimizer`` (``optim.override_optimizer_config.optimizer_cpu_offload=True``)."""
    precision_aware_optimizer: bool = False
    """megatron ``use_precision_aware_optimizer`` (``optim.use_precision_aware_optimizer``, or the same key in
    ``optim.override_optimizer_config``, which wins): with the ``HybridDeviceOptimizer`` it decides who holds the
    fp32 master weights."""
    use_fused_kernels: bool = False
    """``actor_rollout_ref.model.use_fused_kernels``: log-probs and entropy without materialized logits."""
    entropy_in_update: bool = False
    """The update computes entropy (``entropy_coeff != 0`` or ``actor.calculate_entropy``)."""
    fused_swiglu: bool = True
    """SwiGLU keeps only its input (megatron-core and MindSpeed); legacy megatron also keeps the SiLU output."""
    hidden_dropout: bool = False
    """Hidden dropout on (megatron pre-training's default); HF models converted for RL have none."""
    cross_entropy_fusion: bool = False
    """megatron's own loss with ``cross_entropy_loss_fusion`` (pre-training / SFT, not verl's logits processor): the
    compiled fused cross entropy peaks at 10 bytes per logit entry instead of 6 (:func:`.activations.logits_bytes`)."""
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
    """``update``, ``log_prob``, ``ref_log_prob`` or ``optimizer_step``: the phase of the peak."""
    stages: tuple = field(default=(), compare=False)
    """Per stage: ``{"stage", "layers", "peak", "activations", "chunks"}`` in bytes."""

    @property
    def reserve(self) -> int:
        """Everything that is not tensors (runtime, communication buffers, fragmentation)."""
        return self.runtime + self.comm_buffers + self.fragmentation

    @cached_property
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


def estimate_memory(spec: ModelSpec, layout: Layout, world: int, opts: MemoryOptions = MemoryOptions()
                    ) -> Optional[MemoryEstimate]:
    """The estimate for the pipeline stage with the highest peak, or ``None`` when the layers do not split."""
    recompute = layout.recompute
    if recompute == NO_RECOMPUTE and opts.full_recompute:
        recompute = FULL_UNIFORM_1
    prof = _engine.build(spec, layout, world, opts)
    if prof is None:
        return None
    return estimate_from_profile(prof, recompute)


def estimate_from_profile(prof: "_engine.Profile", recompute: Recompute, *, all_stages: bool = True,
                          index: Optional[int] = None) -> MemoryEstimate:
    """The full estimate of a built profile under one recompute choice (``all_stages``: a summary of each stage;
    ``index``: the peak stage when already known)."""
    if index is None:
        index = _engine.peak(prof, recompute)[1]
    best = _engine.components(prof, index, recompute)
    stages: tuple = ()
    if all_stages:
        stages = tuple(stage_summaries(prof, recompute))
    return MemoryEstimate(**{name: int(best[name]) for name in COMPONENTS},
                          resident_outside_update=int(best["resident"]), stage=index, phase=best["phase"],
                          stages=stages)


def stage_summaries(prof: "_engine.Profile", recompute: Recompute) -> list[dict]:
    """Per stage: its layers, peak, stored activations and their split over model chunks (bytes)."""
    out = []
    for i in range(len(prof.stages)):
        c = _engine.components(prof, i, recompute)
        out.append({"stage": i, "layers": c["layers"], "peak": int(sum(c[name] for name in COMPONENTS)),
                    "activations": int(c["stored"]), "chunks": [int(x) for x in c["chunks"]]})
    return out


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
        recompute = Recompute("full", otc.get("recompute_method") or "uniform",
                              _size(otc.get("recompute_num_layers"), 1))
    elif granularity == "selective":
        modules = otc.get("recompute_modules")
        recompute = Recompute("selective",
                              modules=tuple(modules) if isinstance(modules, (list, tuple)) else ("core_attn",))
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
