"""What the checks need to know about a model, in megatron's terms.

A :class:`ModelSpec` is built from a Hugging Face ``config.json`` by
:func:`verl_mindspeed.model.hf.load_model_spec`. Field names follow
megatron-core's ``TransformerConfig`` where one exists.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property
from typing import Literal, Optional

__all__ = ["Family", "ModelSpec", "mla_dims"]

Family = Literal["dense", "moe", "mla_moe"]

MLA_KEYS = ("q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")

#: The MoE router each config path verl builds sets for an architecture: (score function, pre-softmax). verl's
#: converters (``verl/models/mcore/config_converter.py``, 0.5.0 to 0.9.1), mbridge 0.15.1's models and
#: Megatron-Bridge 0.5.1's bridges agree on each (Megatron-Bridge has no Qwen2-MoE or Mixtral bridge).
ROUTERS = {
    "Qwen2MoeForCausalLM": ("softmax", True),
    "MixtralForCausalLM": ("softmax", True),
    "Qwen3MoeForCausalLM": ("softmax", False),
    "DeepseekV3ForCausalLM": ("sigmoid", True),
    "Glm4MoeForCausalLM": ("sigmoid", True),
}


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """A decoder-only model as megatron-core sees it."""

    architecture: str
    """The HF ``architectures[0]``, e.g. ``Qwen3MoeForCausalLM``."""
    family: Family
    """``dense`` (every layer a dense MLP), ``moe`` (routed experts) or ``mla_moe`` (MLA attention and experts)."""
    num_layers: int
    """Transformer layers (HF ``num_hidden_layers``), without MTP layers."""
    hidden_size: int
    """Model width ``h``."""
    ffn_hidden_size: int
    """Intermediate size of a dense MLP (HF ``intermediate_size``)."""
    num_attention_heads: int
    """Attention heads ``a``."""
    num_query_groups: int
    """KV heads (HF ``num_key_value_heads``); equals the heads for MHA and MLA."""
    head_dim: int
    """megatron ``kv_channels``: per-head size of Q/K/V (for MLA, ``qk_nope_head_dim``)."""
    vocab_size: int
    """Rows of the embedding table, as in the checkpoint."""
    tied_embeddings: bool = False
    """HF ``tie_word_embeddings``: the output layer reuses the embedding table."""
    max_position_embeddings: Optional[int] = None
    """Longest sequence the position encoding was trained for."""
    qkv_bias: bool = False
    """Bias on the QKV projection (Qwen2 family)."""
    qk_layernorm: bool = False
    """RMSNorm on queries and keys per head (Qwen3 family)."""
    num_experts: Optional[int] = None
    """Routed experts per MoE layer; ``None`` for a dense model."""
    moe_router_topk: Optional[int] = None
    """Routed experts chosen per token."""
    moe_ffn_hidden_size: Optional[int] = None
    """Intermediate size of one routed expert."""
    shared_expert_intermediate_size: Optional[int] = None
    """Total intermediate size of the shared experts of one MoE layer (``None`` when there are none)."""
    shared_expert_gate: bool = False
    """A sigmoid gate on the shared expert output (Qwen2-MoE)."""
    first_k_dense_replace: int = 0
    """The first k layers keep a dense MLP (DeepSeek)."""
    moe_layer_freq: int = 1
    """After the dense layers, every n-th layer is an MoE layer."""
    mlp_only_layers: tuple[int, ...] = ()
    """Extra layer indices with a dense MLP (Qwen MoE ``mlp_only_layers``)."""
    q_lora_rank: Optional[int] = None
    """MLA: rank of the query compression; ``None`` projects queries directly."""
    kv_lora_rank: Optional[int] = None
    """MLA: rank of the joint key/value compression."""
    qk_rope_head_dim: Optional[int] = None
    """MLA: per-head size of the rotary part of queries and keys."""
    qk_nope_head_dim: Optional[int] = None
    """MLA: per-head size of the non-rotary part of queries and keys."""
    v_head_dim: Optional[int] = None
    """MLA: per-head size of the values."""
    model_type: Optional[str] = None
    """The HF ``model_type`` (``qwen3_moe``), which mbridge registers its model bridges by."""

    def __hash__(self) -> int:  # hashed often as a cache key: compute once
        found = self.__dict__.get("_hash")
        if found is None:
            found = hash(tuple(getattr(self, f.name) for f in fields(self)))
            object.__setattr__(self, "_hash", found)
        return found

    @property
    def is_moe(self) -> bool:
        return bool(self.num_experts)

    @property
    def router(self) -> Optional[tuple[str, bool]]:
        """(score function, pre-softmax) of the MoE router verl's config paths build (:data:`ROUTERS`); ``None``
        for a dense model or an architecture not listed."""
        return ROUTERS.get(self.architecture) if self.is_moe else None

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    def is_moe_layer(self, index: int) -> bool:
        """Whether layer ``index`` (0-based) has routed experts."""
        if not self.is_moe or index < self.first_k_dense_replace or index in self.mlp_only_layers:
            return False
        return (index - self.first_k_dense_replace) % max(self.moe_layer_freq, 1) == 0

    @cached_property
    def num_moe_layers(self) -> int:
        return sum(self.is_moe_layer(i) for i in range(self.num_layers))


def mla_dims(spec: ModelSpec) -> dict[str, Optional[int]]:
    """The MLA dimensions MindSpeed reads from ``override_transformer_config``.

    Empty for a model without MLA. ``q_lora_rank`` is ``None`` when the model
    projects queries without compression (Moonlight, DeepSeek-V2-Lite).
    """
    if not spec.is_mla:
        return {}
    return {name: getattr(spec, name) for name in MLA_KEYS}
