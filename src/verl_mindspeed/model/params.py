"""Parameter counts: whole model, active per token, and per rank for a parallel layout.

The per-rank counts follow how megatron-core 0.12.1 shards a ``GPTModel``
(``megatron/core/models/gpt``, ``transformer/attention.py``,
``transformer/multi_latent_attention.py``, ``transformer/moe``): column- and
row-parallel weights are split over TP; norms, the router and the shared-expert
gate are replicated; routed experts are split over EP (whole experts) and ETP;
the embedding lives on the first pipeline stage, the final norm and the output
layer on the last (with tied embeddings and PP > 1 the last stage keeps its own
copy of the table). RMSNorm everywhere (one weight vector per norm), SwiGLU
MLPs, no linear biases except the Qwen2 QKV bias, rotary positions (no position
table). MTP layers (DeepSeek-V3's ``num_nextn_predict_layers``) are not counted:
verl does not build them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

from ._layout import Layout, stage_layer_counts
from .spec import ModelSpec

__all__ = [
    "StageParams",
    "active_parameters",
    "attention_params",
    "layer_params",
    "params_per_rank",
    "routed_active_parameters",
    "stage_parameters",
    "total_parameters",
]


def _split(n: int, parts: int) -> int:
    return -(-n // parts)


def attention_params(spec: ModelSpec, tp: int = 1) -> int:
    """Self-attention of one layer on one TP rank, including its input norm."""
    h, a = spec.hidden_size, spec.num_attention_heads
    if spec.is_mla:
        rope, nope, v = spec.qk_rope_head_dim or 0, spec.qk_nope_head_dim or 0, spec.v_head_dim or 0
        q_out = a * (nope + rope)
        if spec.q_lora_rank is None:
            q = h * _split(q_out, tp)
        else:
            q = h * _split(spec.q_lora_rank, tp) + spec.q_lora_rank + spec.q_lora_rank * _split(q_out, tp)
        kv = h * _split(spec.kv_lora_rank + rope, tp) + spec.kv_lora_rank
        kv += spec.kv_lora_rank * _split(a * (nope + v), tp)
        return h + q + kv + _split(a * v, tp) * h
    d, g = spec.head_dim, spec.num_query_groups
    qkv_out = _split((a + 2 * g) * d, tp)
    params = h + h * qkv_out + _split(a * d, tp) * h
    if spec.qkv_bias:
        params += qkv_out
    if spec.qk_layernorm:
        params += 2 * d
    return params


def _gated_mlp(h: int, ffn: int, parts: int) -> int:
    return 3 * h * _split(ffn, parts)


def _mlp_params(spec: ModelSpec, index: int, tp: int, ep: int, etp: int) -> tuple[int, int]:
    """(non-expert, routed-expert) parameters of one layer's MLP block and its input norm."""
    h = spec.hidden_size
    if not spec.is_moe_layer(index):
        return h + _gated_mlp(h, spec.ffn_hidden_size, tp), 0
    experts = spec.num_experts or 0
    dense = h + experts * h
    if spec.shared_expert_intermediate_size:
        dense += _gated_mlp(h, spec.shared_expert_intermediate_size, tp)
        if spec.shared_expert_gate:
            dense += h
    routed = _split(experts, ep) * _gated_mlp(h, spec.moe_ffn_hidden_size or 0, etp)
    return dense, routed


def layer_params(spec: ModelSpec, index: int, tp: int = 1, ep: int = 1, etp: int = 1) -> tuple[int, int]:
    """(non-expert, routed-expert) parameters of layer ``index`` on one rank."""
    dense, routed = _mlp_params(spec, index, tp, ep, etp)
    return attention_params(spec, tp) + dense, routed


def _embedding(spec: ModelSpec, tp: int = 1) -> int:
    return _split(spec.vocab_size, tp) * spec.hidden_size


@lru_cache(maxsize=256)
def total_parameters(spec: ModelSpec) -> int:
    """Every parameter of the model once (a tied output layer is not counted twice)."""
    layers = sum(sum(layer_params(spec, i)) for i in range(spec.num_layers))
    output = 0 if spec.tied_embeddings else _embedding(spec)
    return _embedding(spec) + layers + spec.hidden_size + output


@lru_cache(maxsize=256)
def active_parameters(spec: ModelSpec) -> int:
    """Parameters one token passes through: routed experts count ``top-k`` times, not ``num_experts``."""
    if not spec.is_moe:
        return total_parameters(spec)
    per_expert = _gated_mlp(spec.hidden_size, spec.moe_ffn_hidden_size or 0, 1)
    unused = (spec.num_experts or 0) - (spec.moe_router_topk or 0)
    return total_parameters(spec) - spec.num_moe_layers * unused * per_expert


def routed_active_parameters(spec: ModelSpec) -> int:
    """The routed-expert part of :func:`active_parameters`: ``top-k`` experts of every MoE layer."""
    if not spec.is_moe:
        return 0
    per_expert = _gated_mlp(spec.hidden_size, spec.moe_ffn_hidden_size or 0, 1)
    return spec.num_moe_layers * (spec.moe_router_topk or 0) * per_expert


@dataclass(frozen=True)
class StageParams:
    """Parameters held by one rank of one pipeline stage."""

    layers: int
    """Transformer layers on the stage."""
    dense: int
    """Parameters replicated over data parallel (and CP): attention, dense MLPs, norms, embeddings."""
    expert: int
    """Routed-expert parameters, replicated over the expert data-parallel group only."""

    @property
    def total(self) -> int:
        return self.dense + self.expert


def stage_parameters(spec: ModelSpec, layout: Layout, noop_layers: tuple[int, ...] = ()) -> Optional[list[StageParams]]:
    """Per-rank parameters of each pipeline stage, or ``None`` when the layers do not split.

    ``noop_layers`` are MindSpeed no-op layer indices: they take a place in the
    stage split (``num_layers`` counts them) but hold no parameters.
    """
    total_layers = spec.num_layers + len(noop_layers)
    counts = stage_layer_counts(total_layers, layout.pp, layout.first_stage_layers, layout.last_stage_layers)
    if counts is None:
        return None
    stages, start, real = [], 0, 0
    for stage, count in enumerate(counts):
        dense = expert = 0
        for index in range(start, start + count):
            if index in noop_layers:
                continue
            d, e = _cached_layer(spec, real, layout.tp, layout.ep, layout.etp)
            dense, expert, real = dense + d, expert + e, real + 1
        if stage == 0:
            dense += _embedding(spec, layout.tp)
        if stage == len(counts) - 1:
            dense += spec.hidden_size
            if not spec.tied_embeddings or layout.pp > 1:
                dense += _embedding(spec, layout.tp)
        stages.append(StageParams(count, dense, expert))
        start += count
    return stages


def _cached_layer(spec: ModelSpec, index: int, tp: int, ep: int, etp: int) -> tuple[int, int]:
    # Layers differ only by being dense or MoE: two computations per layout, not one per layer.
    key = (spec, spec.is_moe_layer(index), tp, ep, etp)
    found = _LAYER_CACHE.get(key)
    if found is None:
        found = _LAYER_CACHE[key] = layer_params(spec, index, tp, ep, etp)
        if len(_LAYER_CACHE) > 4096:
            _LAYER_CACHE.clear()
    return found


_LAYER_CACHE: dict[tuple, tuple[int, int]] = {}


def params_per_rank(spec: ModelSpec, layout: Layout) -> Optional[int]:
    """Parameters on the most loaded rank (the largest pipeline stage)."""
    stages = stage_parameters(spec, layout)
    return None if stages is None else max(s.total for s in stages)
