"""What the model bridge puts into megatron's ``TransformerConfig`` besides the role's dict.

verl builds the config one of three ways, chosen per role by ``megatron.use_mbridge`` and
``megatron.vanilla_mbridge`` (defaults: 0.6.x converter; 0.7.x and 0.8.x vanilla mbridge; 0.9.x
Megatron-Bridge). Read from verl 0.9.1:

* ``converter`` (``use_mbridge=False``): ``verl/models/mcore/config_converter.py``
  ``_get_base_transformer_config``: sizes from Megatron's parallel state, ``sequence_parallel = TP > 1``,
  ``moe_token_dispatcher_type='alltoall'``, RMSNorm, gated linear unit; MoE converters add
  ``moe_grouped_gemm=True``; DeepSeek-style models get ``MLATransformerConfig``.
* ``mbridge`` (``vanilla_mbridge=True``): mbridge's ``_build_base_config``, the same values
  (``set_extra_args`` then adds the dict).
* ``megatron-bridge`` (``vanilla_mbridge=False``): ``verl/workers/engine/megatron/transformer_impl.py``
  ``_build_tf_config``: the provider from the HF config (``position_embedding_type='rope'``), overridden
  with the ROLE's engine sizes, ``sequence_parallel`` from ``megatron.sequence_parallel`` (verl turns it
  off at TP=1), ``moe_token_dispatcher_type='alltoall'``, then the dict. The provider is a ``TransformerConfig``
  with fields of its own: ``seq_length`` is always there: the model's ``max_position_embeddings``, except for the
  bridges that set a fixed one (:data:`FIXED_SEQ_LENGTH`).

Without a model config only the model-independent values are known; MoE and MLA values need the model.
"""

from __future__ import annotations

import re
from typing import Any, Optional

CONVERTER, MBRIDGE, MEGATRON_BRIDGE = "converter", "mbridge", "megatron-bridge"

PROVIDER_SEQ_LENGTH = 1024
"""Megatron-Bridge v0.5.1 ``models/gpt_provider.py`` ``GPTModelProvider.seq_length`` default; its model bridges
set it from the HF ``max_position_embeddings`` (``models/conversion/model_bridge.py``)."""

FIXED_SEQ_LENGTH = {"DeepseekV2ForCausalLM": 4096, "DeepseekV3ForCausalLM": 4096, "DeepseekV4ForCausalLM": 4096,
                    "KimiK2ForCausalLM": 4096, "KimiK25ForConditionalGeneration": 4096}
"""HF architectures whose Megatron-Bridge v0.5.1 model bridge sets ``provider.seq_length = 4096`` whatever the model's
``max_position_embeddings`` (``models/deepseek/deepseek_v3_bridge.py`` ``provider_bridge`` and its siblings: DeepSeek
V2/V3/V4, Kimi K2, Kimi K2.5-VL). Found by running the provider code on CPU against the fixture models."""

_SIZES = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
          "expert_model_parallel_size", "expert_tensor_parallel_size", "virtual_pipeline_model_parallel_size")


def bridge_kind(megatron: dict[str, Any]) -> str:
    """Which bridge builds a role's config, from its ``megatron`` section."""
    if megatron.get("use_mbridge") is False:
        return CONVERTER
    if megatron.get("vanilla_mbridge") is False:
        return MEGATRON_BRIDGE
    if megatron.get("use_mbridge") is None:
        return CONVERTER  # trees before use_mbridge existed
    return MBRIDGE


def bridge_view(megatron: dict[str, Any], groups: dict[str, Any], model: Any = None) -> dict[str, Any]:
    """Values the bridge sets in ``TransformerConfig`` for one role (before the role's dict is applied).

    ``groups`` are the process's parallel sizes (the converter and mbridge read them from Megatron's
    parallel state); Megatron-Bridge takes the role's own engine sizes instead.
    """
    kind = bridge_kind(megatron)
    sizes = megatron if kind == MEGATRON_BRIDGE else groups
    out: dict[str, Any] = {k: sizes.get(k) for k in _SIZES if sizes.get(k) is not None}
    tp = _size(sizes.get("tensor_model_parallel_size"))
    if kind == MEGATRON_BRIDGE:
        sp = megatron.get("sequence_parallel")
        out["sequence_parallel"] = bool(sp) and tp > 1 if sp is not None else tp > 1
        out["position_embedding_type"] = "rope"
        if model is not None:  # the bridge's fixed value, else max_position_embeddings, else the provider's 1024
            out["seq_length"] = FIXED_SEQ_LENGTH.get(model.architecture) or model.max_position_embeddings \
                or PROVIDER_SEQ_LENGTH
    else:
        out["sequence_parallel"] = tp > 1
    out["moe_token_dispatcher_type"] = "alltoall"
    out["normalization"] = "RMSNorm"
    out["gated_linear_unit"] = True
    if model is not None:
        out["num_layers"] = model.num_layers
        out["num_attention_heads"] = model.num_attention_heads
        out["num_query_groups"] = model.num_query_groups
        if model.is_moe:
            out["num_moe_experts"] = model.num_experts
            out["moe_grouped_gemm"] = True
            if model.shared_expert_intermediate_size and _OVERLAPS_SHARED_EXPERTS.search(model.architecture):
                # verl's converters for Qwen2-MoE and DeepSeek-V3 (config_converter.py), and the bridges after them
                out["moe_shared_expert_overlap"] = True
        if model.is_mla:
            out["multi_latent_attention"] = True
    return out


_OVERLAPS_SHARED_EXPERTS = re.compile(r"^(Qwen2Moe|DeepseekV3|DeepseekV2)")


def _size(value: Optional[int]) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else 1
