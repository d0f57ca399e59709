"""Read a Hugging Face ``config.json`` into a :class:`~verl_mindspeed.model.spec.ModelSpec`.

The mapping mirrors what the model bridges (mbridge, Megatron-Bridge) hand to
megatron-core for the architectures Ascend users train with verl. An unknown
architecture or an unreadable file is a note, never an exception: the checks
that need no model still run.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Optional, Union

from .spec import ModelSpec

__all__ = ["SUPPORTED_ARCHITECTURES", "load_model_spec", "spec_from_hf_config"]

PathLike = Union[str, Path]


def _dense(cfg: dict[str, Any], arch: str, *, qkv_bias: bool, qk_layernorm: bool) -> ModelSpec:
    heads = cfg["num_attention_heads"]
    return ModelSpec(
        architecture=arch,
        family="dense",
        num_layers=cfg["num_hidden_layers"],
        hidden_size=cfg["hidden_size"],
        ffn_hidden_size=cfg["intermediate_size"],
        num_attention_heads=heads,
        num_query_groups=cfg.get("num_key_value_heads") or heads,
        head_dim=cfg.get("head_dim") or cfg["hidden_size"] // heads,
        vocab_size=cfg["vocab_size"],
        tied_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        max_position_embeddings=cfg.get("max_position_embeddings"),
        qkv_bias=qkv_bias,
        qk_layernorm=qk_layernorm,
    )


def _llama(cfg: dict[str, Any], arch: str) -> ModelSpec:
    return _dense(cfg, arch, qkv_bias=bool(cfg.get("attention_bias", False)), qk_layernorm=False)


def _qwen2(cfg: dict[str, Any], arch: str) -> ModelSpec:
    return _dense(cfg, arch, qkv_bias=True, qk_layernorm=False)


def _qwen3(cfg: dict[str, Any], arch: str) -> ModelSpec:
    return _dense(cfg, arch, qkv_bias=bool(cfg.get("attention_bias", False)), qk_layernorm=True)


def _qwen_moe(cfg: dict[str, Any], arch: str, base: ModelSpec) -> ModelSpec:
    step = cfg.get("decoder_sparse_step") or 1
    shared = cfg.get("shared_expert_intermediate_size") or None
    return replace(
        base,
        family="moe",
        num_experts=cfg["num_experts"],
        moe_router_topk=cfg["num_experts_per_tok"],
        moe_ffn_hidden_size=cfg["moe_intermediate_size"],
        shared_expert_intermediate_size=shared,
        shared_expert_gate=shared is not None,
        first_k_dense_replace=step - 1,
        moe_layer_freq=step,
        mlp_only_layers=tuple(cfg.get("mlp_only_layers") or ()),
    )


def _qwen2_moe(cfg: dict[str, Any], arch: str) -> ModelSpec:
    return _qwen_moe(cfg, arch, _qwen2(cfg, arch))


def _qwen3_moe(cfg: dict[str, Any], arch: str) -> ModelSpec:
    return _qwen_moe(cfg, arch, _qwen3(cfg, arch))


def _deepseek(cfg: dict[str, Any], arch: str) -> ModelSpec:
    moe_ffn = cfg["moe_intermediate_size"]
    return replace(
        _dense(cfg, arch, qkv_bias=False, qk_layernorm=False),
        family="mla_moe",
        head_dim=cfg["qk_nope_head_dim"],
        num_experts=cfg["n_routed_experts"],
        moe_router_topk=cfg["num_experts_per_tok"],
        moe_ffn_hidden_size=moe_ffn,
        shared_expert_intermediate_size=(cfg.get("n_shared_experts") or 0) * moe_ffn or None,
        first_k_dense_replace=cfg.get("first_k_dense_replace") or 0,
        moe_layer_freq=cfg.get("moe_layer_freq") or 1,
        q_lora_rank=cfg.get("q_lora_rank"),
        kv_lora_rank=cfg["kv_lora_rank"],
        qk_rope_head_dim=cfg["qk_rope_head_dim"],
        qk_nope_head_dim=cfg["qk_nope_head_dim"],
        v_head_dim=cfg["v_head_dim"],
    )


_MAPPERS: dict[str, Callable[[dict[str, Any], str], ModelSpec]] = {
    "LlamaForCausalLM": _llama,
    "MistralForCausalLM": _llama,
    "Qwen2ForCausalLM": _qwen2,
    "Qwen3ForCausalLM": _qwen3,
    "Qwen2MoeForCausalLM": _qwen2_moe,
    "Qwen3MoeForCausalLM": _qwen3_moe,
    "DeepseekV2ForCausalLM": _deepseek,
    "DeepseekV3ForCausalLM": _deepseek,
}
SUPPORTED_ARCHITECTURES = tuple(_MAPPERS)


def spec_from_hf_config(cfg: dict[str, Any]) -> tuple[Optional[ModelSpec], Optional[str]]:
    """Map an already-parsed ``config.json`` dict; ``(None, note)`` when it cannot be mapped."""
    archs = cfg.get("architectures") or []
    arch = archs[0] if archs and isinstance(archs[0], str) else None
    mapper = _MAPPERS.get(arch or "")
    if mapper is None:
        return None, (
            f"model architecture {arch or cfg.get('model_type') or 'unknown'} is not one verl-mindspeed maps "
            f"(known: {', '.join(SUPPORTED_ARCHITECTURES)}); model-aware checks are skipped"
        )
    try:
        return mapper(cfg, arch), None
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        return None, f"model config of {arch} lacks or garbles {exc}; model-aware checks are skipped"


def load_model_spec(path: PathLike) -> tuple[Optional[ModelSpec], Optional[str]]:
    """Read ``path`` (a ``config.json`` or a directory holding one).

    Returns ``(spec, None)``, or ``(None, note)`` when the file is missing,
    unreadable, or of an architecture this library does not map. Never raises.
    """
    try:
        file = Path(path)
        if file.is_dir():
            file = file / "config.json"
        if not file.is_file():
            return None, f"no model config at {file}; model-aware checks are skipped"
        cfg = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError) as exc:
        return None, f"cannot read model config {path}: {exc}; model-aware checks are skipped"
    if not isinstance(cfg, dict):
        return None, f"model config {file} is not a JSON object; model-aware checks are skipped"
    return spec_from_hf_config(cfg)
