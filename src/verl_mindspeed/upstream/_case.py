"""One launch as the steps an upstream worker executes, read from the simulation of verl's build.

For each role in the era's build order: ``repatch`` with the dict the build hands MindSpeed; Megatron's parallel
state with the sizes of the role that owns the process groups, before that role's model is built; then the
config class verl's model bridge builds, from the model's ``config.json`` (as verl's converter maps it,
``verl/models/mcore/config_converter.py``), the bridge's own values and the role's dict. Without a model
config only the first two steps run, and the findings say so.
"""

from __future__ import annotations

from typing import Any, Optional

from ..simulate import Simulation, as_int

_SILU = {"__func__": "silu"}
_BF16 = {"__dtype__": "bfloat16"}


def converter_fields() -> frozenset[str]:
    """TransformerConfig fields verl's converter sets itself from the model and the engine's dtype (any model), besides
    the model's own sizes: ``pipeline_dtype``, ``params_dtype``, ``bf16``, ``variable_seq_lengths``..."""
    from ..model.spec import ModelSpec

    tiny = ModelSpec(architecture="LlamaForCausalLM", family="dense", num_layers=2, hidden_size=8, ffn_hidden_size=16,
                     num_attention_heads=2, num_query_groups=2, head_dim=4, vocab_size=16)
    return frozenset(model_kwargs(tiny)[1])


def model_kwargs(model: Any) -> tuple[str, dict[str, Any]]:
    """(config class, kwargs) verl's converter makes of a model, before sizes, the bridge and the dict."""
    kwargs: dict[str, Any] = {
        "num_layers": model.num_layers, "hidden_size": model.hidden_size, "ffn_hidden_size": model.ffn_hidden_size,
        "num_attention_heads": model.num_attention_heads, "num_query_groups": model.num_query_groups,
        "kv_channels": model.head_dim, "activation_func": _SILU, "normalization": "RMSNorm",
        "gated_linear_unit": True, "add_bias_linear": False, "add_qkv_bias": model.qkv_bias,
        "qk_layernorm": model.qk_layernorm, "attention_dropout": 0.0, "hidden_dropout": 0.0, "bf16": True,
        "params_dtype": _BF16, "pipeline_dtype": _BF16, "variable_seq_lengths": True, "masked_softmax_fusion": True,
        "batch_p2p_comm": False, "overlap_p2p_comm": False, "use_cpu_initialization": False,
    }
    if model.is_moe:
        kwargs.update(num_moe_experts=model.num_experts, moe_router_topk=model.moe_router_topk,
                      moe_ffn_hidden_size=model.moe_ffn_hidden_size, moe_grouped_gemm=True,
                      moe_aux_loss_coeff=0.001, moe_router_bias_update_rate=0.001, persist_layer_norm=True,
                      bias_activation_fusion=True, bias_dropout_fusion=True)
        if model.shared_expert_intermediate_size:
            kwargs["moe_shared_expert_intermediate_size"] = model.shared_expert_intermediate_size
        freq = [1 if model.is_moe_layer(i) else 0 for i in range(model.num_layers)]
        if not all(freq):
            kwargs["moe_layer_freq"] = freq
        if model.is_mla:  # DeepSeek's converter: sigmoid router with expert bias
            kwargs.update(moe_router_load_balancing_type="seq_aux_loss", moe_router_score_function="sigmoid",
                          moe_router_pre_softmax=True, moe_router_enable_expert_bias=True, moe_router_dtype="fp64")
        else:  # Qwen-MoE's and Mixtral's converters: the router their architecture gets (model.spec.ROUTERS)
            score, pre = model.router or ("softmax", False)
            kwargs.update(moe_router_load_balancing_type="none", moe_router_score_function=score,
                          moe_router_pre_softmax=pre)
    if model.is_mla:
        kwargs.update(q_lora_rank=model.q_lora_rank, kv_lora_rank=model.kv_lora_rank,
                      qk_head_dim=model.qk_nope_head_dim, qk_pos_emb_head_dim=model.qk_rope_head_dim,
                      v_head_dim=model.v_head_dim, rope_type="rope", qk_layernorm=True)
        if model.max_position_embeddings:
            kwargs["max_position_embeddings"] = model.max_position_embeddings
        return "MLATransformerConfig", kwargs
    return "TransformerConfig", kwargs


def switches(sim: Simulation) -> list[str]:
    """Dict keys the launch sets (the user, or the injected companions) that are on in what MindSpeed receives:
    a feature they name that registers no patch is a warning."""
    out: set[str] = set()
    for build in sim.builds.values():
        if build.sent is None:
            continue
        chosen = set(build.explicit) | (set(build.given) - set(build.otc))
        out |= {k for k in chosen if build.sent.get(k) not in (None, False, 0, "")}
    return sorted(out)


def case_of(sim: Simulation, model: Any = None,
            provider: Optional[dict[str, dict[str, Any]]] = None) -> dict[str, Any]:
    """The worker's case for a simulated launch (see the module docstring). A release without ``repatch`` is already
    in the simulation: no build there hands MindSpeed a dict. ``provider`` holds, per role, the values the executed
    bridge gave (:mod:`._provider`); they replace the converter's before the bridge view and the dict."""
    steps: list[dict[str, Any]] = []
    parallel_done = False
    for name in sim.order:
        build = sim.builds[name]
        if build.sent is not None:
            steps.append({"op": "repatch", "role": name, "args": _json(build.sent)})
        if not parallel_done and (sim.owner is None or name == sim.owner):  # the owner's sizes make the groups
            steps.append({"op": "parallel", "role": name, "sizes": {
                "tp": build.tp, "pp": build.pp, "vpp": _positive(build.vpp), "cp": build.cp, "ep": build.ep,
                "etp": _positive(build.megatron.get("expert_tensor_parallel_size")), "world": sim.world}})
            parallel_done = True
        if model is not None:
            cls, kwargs = model_kwargs(model)
            kwargs.update((provider or {}).get(name, {}))
            kwargs.update(build.bridge)
            kwargs.update(build.given)
            steps.append({"op": "build", "role": name, "cls": cls, "kwargs": _json(kwargs)})
    return {"steps": steps, "switches": switches(sim)}


def _positive(value: Any) -> Optional[int]:
    """A size megatron takes as given, or ``None`` (megatron's own default) when unset or not a whole number >= 1."""
    size = as_int(value)
    return size if size is not None and size >= 1 else None


def _json(value: Any) -> Any:
    """A value as JSON for the worker (mappings and sequences as containers, anything else as its string)."""
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)
