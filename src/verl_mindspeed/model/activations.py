"""Activation bytes per device during the actor update: per layer, per model chunk, per pipeline stage.

Every term is documented with its formula in ``docs/model-checks.md``; :mod:`._engine`
assembles them per stage and chunk. Per token of one
micro-batch, a layer stores named *parts*; a part is either *sharded* (split over the
attention heads or MLP columns, so divided by TP) or *replicated* (the hidden stream,
divided by TP only with sequence parallelism). Selective recompute removes the parts of
its modules; full recompute keeps only each unit's input and replays one unit at a time
(megatron-core 0.12.1 ``TransformerBlock._checkpointed_forward``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from .spec import ModelSpec

__all__ = ["Part", "chunk_in_flight", "cp_transient_per_token", "forward_logits_bytes", "layer_parts", "logits_bytes"]

RING_LIKE = ("megatron_cp_algo", "hybrid_cp_algo", "adaptive_cp_algo", "hybrid_adaptive_cp_algo")
ULYSSES_LIKE = ("ulysses_cp_algo", "hybrid_cp_algo", "hybrid_adaptive_cp_algo")
NPU_FA_STATS = 2 * 8 * 4
"""torch_npu flash attention keeps softmax_max and softmax_sum as fp32 ``[b, n, s, 8]``: 64 bytes per head and token."""


@dataclass(frozen=True)
class Part:
    """One tensor a layer keeps for its backward pass, per token."""

    name: str
    bytes: float
    sharded: bool
    module: Optional[str] = None
    """The selective-recompute module that discards it."""


def _attention_widths(spec: ModelSpec) -> tuple[int, int, int, int]:
    """(q, k, v, attention output) widths of one token, all heads."""
    a = spec.num_attention_heads
    if spec.is_mla:
        qk = a * ((spec.qk_nope_head_dim or 0) + (spec.qk_rope_head_dim or 0))
        return qk, qk, a * (spec.v_head_dim or 0), a * (spec.v_head_dim or 0)
    return a * spec.head_dim, spec.num_query_groups * spec.head_dim, spec.num_query_groups * spec.head_dim, \
        a * spec.head_dim


def layer_parts(spec: ModelSpec, moe: bool, *, tp: int = 1, cp: int = 1, cp_algo: str = "megatron_cp_algo",
                etp: int = 1, flash: bool = True, seq_per_rank: float = 0.0, imbalance: float = 1.0,
                dropout: bool = False, fused_swiglu: bool = True, probs_keep_act: bool = False) -> tuple[Part, ...]:
    """The parts one layer stores per token (bytes before any TP division).

    ``dropout``: hidden dropout is on (megatron's pre-training default 0.1), so the two
    residual dropouts keep a 1-byte mask each; models converted from HF for RL have 0.
    ``fused_swiglu``: the SwiGLU keeps only its input (megatron-core ``bias_swiglu_impl``,
    MindSpeed's fused swiglu); unfused (legacy megatron) it also keeps the SiLU output (2f).
    ``probs_keep_act``: the routed experts weight their activation by the router probabilities
    with a plain multiply, which keeps the unweighted SwiGLU output for the probabilities'
    gradient (MindSpeed 2.2+ replaces megatron's ``weighted_bias_swiglu_impl`` by
    ``fused_swiglu(x) * probs``; its GMM experts do the same); megatron-core's fused weighted
    SwiGLU keeps only its input and the probabilities.

    MoE: megatron-core 0.12.1 applies the probabilities inside the experts and calls
    ``unpermute`` without them, so the combine keeps only its indices, not the expert outputs
    (``token_dispatcher.py`` ``MoEAlltoAllTokenDispatcher.token_unpermutation``; MindSpeed's
    fused unpermute saves the permuted tokens only when given probabilities).
    """
    h, a = spec.hidden_size, spec.num_attention_heads
    q, k, v, out = _attention_widths(spec)
    parts = [Part("norm_in", 2 * h, False), Part("attn_norm_out", 2 * h, False, "layernorm")]
    if spec.is_mla:
        latent = (spec.q_lora_rank or 0) + (spec.kv_lora_rank or 0)
        parts.append(Part("mla_latent", 2 * (latent + (spec.qk_rope_head_dim or 0)) + 2 * latent, False))
        parts.append(Part("mla_qkv", 2 * (q + k + v), True, "mla_up_proj"))
    else:
        parts.append(Part("qkv", 2 * (q + k + v), True))
        if spec.qk_layernorm:
            parts.append(Part("qk_norm_in", 2 * (q + k), True))
    parts.append(Part("core_out", 2 * out, True))
    if flash:
        parts.append(Part("fa_stats", NPU_FA_STATS * a, True, "core_attn"))
    else:  # Korthikanti et al.: softmax input and output (2+2 bytes) and dropout mask (1) of the scores
        parts.append(Part("scores", 5 * a * seq_per_rank, True, "core_attn"))
    if cp > 1:
        if cp_algo in RING_LIKE:
            parts.append(Part("cp_kv_copy", 2 * (k + v), True))  # MindSpeed ring keeps a clone of the local K/V
        if cp_algo == "kvallgather_cp_algo":
            parts.append(Part("cp_out_steps", 2 * out, True))  # the output of both causal halves
        if cp_algo in ULYSSES_LIKE and not spec.is_mla and spec.num_query_groups % (cp * tp):
            parts.append(Part("ulysses_kv_repeat", 2 * (a - spec.num_query_groups) * spec.head_dim * 2, True))
    if dropout:
        parts.append(Part("dropout_masks", 2 * h, False))
    parts.append(Part("mlp_norm_in", 2 * h, False))
    parts.append(Part("mlp_norm_out", 2 * h, False, "layernorm"))
    if moe:
        kr, f, e = spec.moe_router_topk or 1, spec.moe_ffn_hidden_size or 0, spec.num_experts or 0
        parts += [
            Part("router", 4 * e, False, "moe"),
            Part("expert_in", kr * imbalance * 2 * h * etp, False, "moe"),  # gathered over the ETP ranks
            Part("expert_fc1_out", kr * imbalance * 4 * f, False, "moe"),
            Part("expert_act_out", kr * imbalance * 2 * f, False, "moe_act"),
        ]
        if probs_keep_act:
            parts.append(Part("expert_act_unweighted", kr * imbalance * 2 * f, False, "moe_act"))
        if spec.shared_expert_intermediate_size:
            parts.append(Part("shared_expert", 6 * spec.shared_expert_intermediate_size, True, "moe"))
    else:
        parts.append(Part("mlp_inner", (6 if fused_swiglu else 8) * spec.ffn_hidden_size, True, "mlp"))
    return tuple(parts)


def cp_transient_per_token(spec: ModelSpec, cp: int, cp_algo: str, ulysses: Optional[int]) -> float:
    """Communication buffers one layer's attention holds at its peak (backward), per token and all heads."""
    if cp <= 1:
        return 0.0
    q, k, v, _ = _attention_widths(spec)
    ring = 4 * (k + v) + 8 * (k + v) + 4 * (q + k + v)  # K/V send+recv, fp32 dK/dV in flight, fp32 dQ/dK/dV
    a2a = 4 * (q + k + v)  # all-to-all input and output of Q, K, V (then of their gradients)
    if cp_algo == "kvallgather_cp_algo":
        return 2 * 2 * (k + v) * cp  # the gathered K/V and the full-size dK/dV of the backward
    if cp_algo == "ulysses_cp_algo":
        return a2a
    if cp_algo in ("hybrid_cp_algo", "hybrid_adaptive_cp_algo"):
        return a2a + ring
    return ring


def chunk_in_flight(pp: int, vpp: Optional[int], rank: int) -> list[int]:
    """Micro-batches whose activations each model chunk of pipeline ``rank`` holds at the peak.

    1F1B: ``PP - rank``. Interleaved: megatron's warm-up of ``2(PP-rank-1) + (VPP-1)PP``
    forwards plus the one in steady state; forward ``i`` runs chunk ``(i mod PP*VPP) // PP``.
    Assumes at least ``PP`` micro-batches per step.
    """
    if not vpp or vpp <= 1:
        return [pp - rank]
    counts = [0] * vpp
    for i in range(2 * (pp - rank - 1) + (vpp - 1) * pp + 1):
        counts[(i % (pp * vpp)) // pp] += 1
    return counts


def logits_bytes(spec: ModelSpec, tokens: float, tp: int, sp: bool, *, fused: bool, entropy: bool,
                 workload: str = "rl", ce_fusion: bool = False) -> tuple[float, float]:
    """(update, log-prob pass) bytes of the output layer on the last stage for ``tokens`` tokens.

    verl 0.9.1 ``MegatronEngine._lm_head_logits_processor`` (``workers/engine/megatron/transformer_impl.py``):
    bf16 logits ``[tokens, v/t]`` (2 bytes); with entropy a ``clone()`` (2) and the entropy's
    softmax (2, ``utils/megatron/tensor_parallel.py _VocabParallelEntropy``); megatron's
    ``vocab_parallel_cross_entropy`` makes an fp32 copy that it keeps as the softmax (4).
    Peak: 6 bytes per token and vocabulary entry without entropy, 10 with it. The update
    computes entropy only when ``entropy_coeff != 0`` or ``calculate_entropy``; the old-log-prob
    pass always does (``calculate_entropy=True``), but stores nothing for a backward.
    ``use_fused_kernels`` (``utils/kernel/kernels.py``) never builds the logits: three fp32
    values per token and 1024-entry vocabulary split forward, a ``[tokens, 9504]`` bf16
    gradient chunk and a bf16 weight gradient in the backward.

    ``ce_fusion``: megatron's own loss with ``cross_entropy_loss_fusion`` (plain megatron,
    ms-swift: ``workload="pretrain"``), megatron-core 0.12.1 ``fused_vocab_parallel_cross_entropy``.
    Its backward is ``torch.compile``d; the compiled graph writes the gradient into a new fp32
    ``[tokens, v/t]`` buffer while the saved fp32 softmax is alive, then casts it to bf16:
    4 + 4 + 2 = 10 bytes per entry at the peak (``benchmarks/ce_fusion_probe.py`` counts it on CPU).
    """
    vt, h = spec.vocab_size / tp, spec.hidden_size
    stream = tokens * 4 * h / (tp if sp else 1)  # final norm input and output-layer input
    if fused:
        forward = tokens * 12 * math.ceil(vt / 1024)
        update = stream + forward + tokens * 2 * min(9504, vt) + 2 * vt * h
        return update, forward
    per_entry = 10 if ((entropy and workload == "rl") or ce_fusion) else 6
    lp = forward_logits_bytes(spec, tokens, tp, fused=False, entropy=True) if workload == "rl" else 0.0
    return stream + tokens * vt * per_entry, lp


def forward_logits_bytes(spec: ModelSpec, tokens: float, tp: int, *, fused: bool, entropy: bool) -> float:
    """Output-layer bytes of a forward-only log-prob pass on the last stage for ``tokens`` tokens.

    The old-log-prob pass runs with ``calculate_entropy=True`` (verl 0.9.1 ``trainer/ppo/ray_trainer.py
    _compute_old_log_prob``): 10 bytes per token and vocabulary entry (see :func:`logits_bytes`); the ref's
    pass with ``calculate_entropy=False`` (``_compute_ref_log_prob``): 6. ``use_fused_kernels``: the forward
    of the fused kernel, three fp32 values per token and 1024-entry vocabulary split."""
    vt = spec.vocab_size / tp
    if fused:
        return tokens * 12 * math.ceil(vt / 1024)
    return tokens * vt * (10 if entropy else 6)
