"""Read a Hugging Face ``config.json`` into a :class:`~verl_mindspeed.model.spec.ModelSpec`.

The mapping mirrors what the model bridges (mbridge, Megatron-Bridge) hand to
megatron-core for the architectures Ascend users train with verl. An unknown
architecture or an unreadable file is a note, never an exception: the checks
that need no model still run.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Optional, Union

from ..i18n import tr
from .spec import ModelSpec

__all__ = ["ConfigValueError", "SUPPORTED_ARCHITECTURES", "hub_cache_config", "load_model_spec", "local_model_dir",
           "spec_from_hf_config"]

PathLike = Union[str, Path]


class ConfigValueError(ValueError):
    """A config.json value that is not what the architecture needs (its message is one line for the user)."""


def _shown(value: Any) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _int(cfg: dict[str, Any], key: str, default: Any = ..., minimum: int = 1) -> Any:
    """``cfg[key]`` as a whole number >= ``minimum``; ``default`` when missing (or null, if a default is given)."""
    if key not in cfg or (cfg[key] is None and default is not ...):
        if default is ...:
            raise ConfigValueError(tr("config.json has no {key}; a whole number is needed", key=key))
        return default
    value = cfg[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigValueError(tr("config.json: {key} is {value}; a whole number >= {minimum} is needed",
                                  key=key, value=_shown(value), minimum=minimum))
    if value < minimum:
        raise ConfigValueError(tr("config.json: {key} is {value}; a whole number >= {minimum} is needed",
                                  key=key, value=value, minimum=minimum))
    return value


def _dense(cfg: dict[str, Any], arch: str, *, qkv_bias: bool, qk_layernorm: bool) -> ModelSpec:
    heads, hidden = _int(cfg, "num_attention_heads"), _int(cfg, "hidden_size")
    return ModelSpec(
        architecture=arch,
        family="dense",
        num_layers=_int(cfg, "num_hidden_layers"),
        hidden_size=hidden,
        ffn_hidden_size=_int(cfg, "intermediate_size"),
        num_attention_heads=heads,
        num_query_groups=_int(cfg, "num_key_value_heads", heads),
        head_dim=_int(cfg, "head_dim", 0) or max(hidden // heads, 1),
        vocab_size=_int(cfg, "vocab_size"),
        tied_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        max_position_embeddings=_int(cfg, "max_position_embeddings", None),
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
    step = _int(cfg, "decoder_sparse_step", 1)
    shared = _int(cfg, "shared_expert_intermediate_size", 0, minimum=0) or None
    return replace(
        base,
        family="moe",
        num_experts=_int(cfg, "num_experts"),
        moe_router_topk=_int(cfg, "num_experts_per_tok"),
        moe_ffn_hidden_size=_int(cfg, "moe_intermediate_size"),
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
    moe_ffn = _int(cfg, "moe_intermediate_size")
    return replace(
        _dense(cfg, arch, qkv_bias=False, qk_layernorm=False),
        family="mla_moe",
        head_dim=_int(cfg, "qk_nope_head_dim"),
        num_experts=_int(cfg, "n_routed_experts"),
        moe_router_topk=_int(cfg, "num_experts_per_tok"),
        moe_ffn_hidden_size=moe_ffn,
        shared_expert_intermediate_size=_int(cfg, "n_shared_experts", 0, minimum=0) * moe_ffn or None,
        first_k_dense_replace=_int(cfg, "first_k_dense_replace", 0, minimum=0),
        moe_layer_freq=_int(cfg, "moe_layer_freq", 1),
        q_lora_rank=_int(cfg, "q_lora_rank", None),
        kv_lora_rank=_int(cfg, "kv_lora_rank"),
        qk_rope_head_dim=_int(cfg, "qk_rope_head_dim"),
        qk_nope_head_dim=_int(cfg, "qk_nope_head_dim"),
        v_head_dim=_int(cfg, "v_head_dim"),
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
    if isinstance(archs, str):
        return None, tr("config.json: architectures must be a list such as [\"{name}\"], not a string",
                        name=archs)
    if not isinstance(archs, list):
        return None, tr("config.json: architectures must be a list of names, not {value}", value=_shown(archs))
    arch = archs[0] if archs and isinstance(archs[0], str) else None
    mapper = _MAPPERS.get(arch or "")
    if mapper is None:
        return None, (
            f"model architecture {arch or cfg.get('model_type') or 'unknown'} is not one verl-mindspeed maps "
            f"(known: {', '.join(SUPPORTED_ARCHITECTURES)}); model-aware checks are skipped"
        )
    try:
        spec = mapper(cfg, arch)
        model_type = cfg.get("model_type")
        return (replace(spec, model_type=model_type) if isinstance(model_type, str) else spec), None
    except ConfigValueError as exc:
        return None, exc.args[0]
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


_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def hub_cache_config(name: str) -> Optional[Path]:
    """The ``config.json`` of a Hugging Face hub id (``Qwen/Qwen3-8B``) in the local hub cache, as verl would load
    it (``HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``); ``None`` when not cached."""
    if not _HUB_ID.match(name):
        return None
    home = Path(os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface")
    root = Path(os.environ.get("HF_HUB_CACHE") or home / "hub")
    if not (root / f"models--{name.replace('/', '--')}").is_dir():
        return None  # not cached: no need to import huggingface_hub (a fifth of a check's time) to learn that
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # the cache's documented layout: refs/main names the snapshot
        ref = root / f"models--{name.replace('/', '--')}" / "refs" / "main"
        if not ref.is_file():
            return None
        found = ref.parent.parent / "snapshots" / ref.read_text().strip() / "config.json"
        return found if found.is_file() else None
    found = try_to_load_from_cache(name, "config.json", cache_dir=str(root))
    return Path(found) if isinstance(found, str) and Path(found).is_file() else None


def local_model_dir(path: str) -> Optional[str]:
    """Where a launch's model path is on this machine, as verl would load it: the path itself (``~`` expanded) when
    it exists, else a hub id's snapshot in the local Hugging Face cache; ``None`` when neither."""
    expanded = str(Path(path).expanduser()) if path.startswith("~") else path
    try:
        if Path(expanded).exists():
            return expanded
    except OSError:  # a name the file system refuses (too long...): not a local path
        pass
    cached = hub_cache_config(path)
    return str(cached.parent) if cached is not None else None
