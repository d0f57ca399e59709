"""Memory per device of one layout during the actor update: an estimate, with its formulas.

For the most loaded pipeline rank (see ``docs/model-checks.md`` for the derivation):

- weights: 2 bytes per parameter (bf16);
- gradients: 4 bytes per parameter (verl sets megatron's ``grad_reduce_in_fp32``);
- optimizer: Adam keeps an fp32 master copy and two fp32 moments, 12 bytes per
  parameter; the distributed optimizer shards them over the data-parallel group
  (DP x CP for dense weights, the expert data-parallel group for routed experts);
- activations, after Korthikanti et al. 2022, "Reducing Activation Recomputation
  in Large Transformer Models" (arXiv:2205.05198): one layer stores
  ``s*b*h*(34 + 5*a*s/h)`` bytes, divided by ``t`` with sequence parallelism.
  We break the ``34`` into its parts (norms 4, attention 11, MLP 19) and scale
  the attention and MLP parts to the model's real widths (GQA/MLA projections,
  SwiGLU, top-k routed experts). Flash attention (mandatory with MindSpeed)
  stores no ``a*s*s`` score matrix, so the ``5*a*s/h`` term is dropped. CP
  divides ``s``. Full recompute keeps only each layer's input, ``2*s*b*h/t``,
  plus one layer's full activations while it is recomputed. With 1F1B the first
  stage holds ``PP`` micro-batches in flight (interleaving adds a factor
  ``1 + (PP-1)/(PP*VPP)``); the last stage adds fp32 logits, ``4*s*b*v/t``;
- the reference model's bf16 weights when ``ref_param_offload`` is off (verl
  colocates actor and ref on the same devices);
- a fixed reserve for the runtime, HCCL buffers and fragmentation.

``param_offload`` / ``optimizer_offload`` only move state to host memory
between phases: verl reloads it for the update, so they lower
``resident_outside_update`` (what stays on the device while the rollout engine
runs), not the update peak.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._layout import Layout
from .params import StageParams, stage_parameters
from .spec import ModelSpec

__all__ = ["GIB", "MemoryEstimate", "MemoryOptions", "estimate_memory"]

GIB = 1024**3


@dataclass(frozen=True, kw_only=True)
class MemoryOptions:
    """What the estimate assumes about the run."""

    seq_len: int = 4096
    """Tokens of one micro-batch per device (prompt + response, or ``ppo_max_token_len_per_gpu``)."""
    micro_batch_size: int = 1
    """Sequences per micro-batch (``b``)."""
    distributed_optimizer: bool = True
    """verl's default ``megatron.use_distributed_optimizer``."""
    sequence_parallel: bool = True
    """verl's default; only acts when TP > 1."""
    flash_attention: bool = True
    """MindSpeed requires FA on; without it the ``5*a*s/h`` score term returns."""
    full_recompute: bool = False
    """``recompute_granularity=full`` with ``recompute_method=uniform`` and ``recompute_num_layers=1``."""
    ref_param_offload: bool = False
    """``actor_rollout_ref.ref.megatron.param_offload``."""
    param_offload: bool = False
    """``actor_rollout_ref.actor.megatron.param_offload``."""
    optimizer_offload: bool = False
    """``actor_rollout_ref.actor.megatron.optimizer_offload``."""
    reserve_gib: float = 2.0
    """Runtime, communication buffers and fragmentation, not modelled."""


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes per device on the most loaded pipeline rank, by kind."""

    weights: int
    gradients: int
    optimizer: int
    activations: int
    ref_weights: int
    reserve: int
    resident_outside_update: int
    """What stays on the device between updates, given the offload flags."""

    @property
    def peak(self) -> int:
        return self.weights + self.gradients + self.optimizer + self.activations + self.ref_weights + self.reserve

    @property
    def peak_gib(self) -> float:
        return self.peak / GIB


def _layer_activation_bytes(spec: ModelSpec, moe: bool, tokens: int, opts: MemoryOptions, tp: int) -> float:
    """Bytes one layer stores for the backward pass (Korthikanti et al. 2022, generalized widths)."""
    h, a = spec.hidden_size, spec.num_attention_heads
    if spec.is_mla:
        q = k = a * ((spec.qk_nope_head_dim or 0) + (spec.qk_rope_head_dim or 0))
        v = attn_out = a * (spec.v_head_dim or 0)
    else:
        q, k, attn_out = a * spec.head_dim, spec.num_query_groups * spec.head_dim, a * spec.head_dim
        v = k
    # per token: norms 2+2 bytes*h; attention: input 2h, Q and K 2(q+k), V 2v, proj input 2*attn_out, mask h
    attention = 4 * h + 2 * h + 2 * (q + k) + 2 * v + 2 * attn_out + h
    if not opts.flash_attention:
        attention += 5 * a * tokens  # softmax input/output and dropout mask of the a*s*s scores, per token
    if moe:
        k_route = spec.moe_router_topk or 1
        expert = 2 * h + 6 * (spec.moe_ffn_hidden_size or 0)  # fc1 input, SwiGLU input (2f) and output (f)
        mlp = 3 * h + k_route * (expert + 2 * h)  # + permuted copies of the routed tokens
        if spec.shared_expert_intermediate_size:
            mlp += 2 * h + 6 * spec.shared_expert_intermediate_size
    else:
        mlp = 3 * h + 6 * spec.ffn_hidden_size
    per_token = attention + mlp
    divisor = tp if (opts.sequence_parallel and tp > 1) else 1
    return tokens * opts.micro_batch_size * per_token / divisor


def _stage_activations(spec: ModelSpec, layout: Layout, stage: int, first_layer: int, layers: int,
                       opts: MemoryOptions) -> float:
    tokens = opts.seq_len / layout.cp
    sp = opts.sequence_parallel and layout.tp > 1
    moe_layers = sum(spec.is_moe_layer(i) for i in range(first_layer, min(first_layer + layers, spec.num_layers)))
    dense_bytes = _layer_activation_bytes(spec, False, tokens, opts, layout.tp)
    moe_bytes = _layer_activation_bytes(spec, True, tokens, opts, layout.tp) if spec.is_moe else 0.0
    full = (layers - moe_layers) * dense_bytes + moe_layers * moe_bytes
    if opts.full_recompute:
        inputs = layers * 2 * tokens * opts.micro_batch_size * spec.hidden_size / (layout.tp if sp else 1)
        one_layer = max(dense_bytes if layers > moe_layers else 0.0, moe_bytes if moe_layers else 0.0)
        full = inputs + one_layer
    in_flight = max(layout.pp - stage, 1)
    if layout.vpp and layout.vpp > 1:
        in_flight *= 1 + (layout.pp - 1) / (layout.pp * layout.vpp)
    total = full * in_flight
    if stage == layout.pp - 1:
        total += 4 * tokens * opts.micro_batch_size * spec.vocab_size / layout.tp
    return total


def _stage_estimate(spec: ModelSpec, layout: Layout, world: int, stage: int, first_layer: int,
                    params: StageParams, opts: MemoryOptions) -> MemoryEstimate:
    dp, edp = max(layout.dp(world) * layout.cp, 1), max(layout.expert_dp(world), 1)
    weights, grads = 2 * params.total, 4 * params.total
    if opts.distributed_optimizer:
        optimizer = 12 * params.dense / dp + 12 * params.expert / edp
    else:
        optimizer = 12 * params.total
    activations = _stage_activations(spec, layout, stage, first_layer, params.layers, opts)
    ref = 0 if opts.ref_param_offload else weights
    resident = (0 if opts.param_offload else weights + grads) + (0 if opts.optimizer_offload else optimizer) + ref
    return MemoryEstimate(
        weights=weights, gradients=grads, optimizer=int(optimizer), activations=int(activations),
        ref_weights=ref, reserve=int(opts.reserve_gib * GIB), resident_outside_update=int(resident),
    )


def estimate_memory(spec: ModelSpec, layout: Layout, world: int, opts: MemoryOptions = MemoryOptions()):
    """The estimate for the pipeline stage with the highest peak, or ``None`` when the layers do not split."""
    stages = stage_parameters(spec, layout)
    if stages is None:
        return None
    best, first_layer = None, 0
    for stage, params in enumerate(stages):
        found = _stage_estimate(spec, layout, world, stage, first_layer, params, opts)
        if best is None or found.peak > best.peak:
            best = found
        first_layer += params.layers
    return best
