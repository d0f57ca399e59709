"""The memory estimate's run options as a composed verl 0.9.1 config sets them.

``plan --args-file`` and ``check``'s model-memory rule read a launch the same way, here. Each
key is read where verl 0.9.1 reads it:

- tokens per micro-batch (``workers/engine_workers.py`` ``ActorRolloutRefWorker.init_model``):
  the update takes ``actor.ppo_max_token_len_per_gpu`` (dynamic batch size) or
  ``actor.ppo_micro_batch_size_per_gpu`` sequences; the old-log-prob pass
  ``rollout.log_prob_max_token_len_per_gpu`` or ``rollout.log_prob_micro_batch_size_per_gpu``
  (``infer_max_token_len_per_gpu`` / ``infer_micro_batch_size_per_gpu``); the ref's pass
  ``ref.log_prob_*``, dynamic when ``ref.log_prob_use_dynamic_bsz``;
- a ref model exists when ``actor.use_kl_loss`` or ``algorithm.use_kl_in_reward``
  (``trainer/ppo/utils.py`` ``need_reference_policy``);
- ``optim.override_optimizer_config`` goes key by key into megatron's ``OptimizerConfig``
  (``utils/megatron/optimizer.py`` ``init_megatron_optim_config``); megatron-core offloads
  ``optimizer_offload_fraction`` of the Adam states (``HybridDeviceOptimizer``) only with
  ``optimizer_cpu_offload`` (``optimizer/__init__.py``; the fraction defaults to 0), and what it keeps on the
  device depends on ``use_precision_aware_optimizer`` (the override's value winning over ``optim``'s);
- ``megatron.override_ddp_config.grad_reduce_in_fp32`` wins; without it verl sets
  ``not (optim.use_precision_aware_optimizer and optim.main_grads_dtype != fp32)``
  (``workers/engine/megatron/transformer_impl.py`` ``_resolve_override_ddp_config``).
"""

from __future__ import annotations

from typing import Any, Optional

__all__ = ["options_from_config"]

ACTOR, ROLLOUT, REF = "actor_rollout_ref.actor", "actor_rollout_ref.rollout", "actor_rollout_ref.ref"
_FP32 = (32, "32", "fp32", "float32")
"""verl ``utils/torch_dtypes.py`` ``FLOAT_LIST`` (without the torch dtype)."""


def select(cfg: Any, dotted: str) -> Any:
    """The value at ``dotted`` in a DictConfig or nested dicts, or ``None`` (missing, unresolvable)."""
    node = cfg
    for part in dotted.split("."):
        try:
            node = node[part] if part in node else None
        except Exception:  # noqa: BLE001 - an interpolation that does not resolve, a node that is no mapping
            return None
        if node is None:
            return None
    return node


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _number(value: Any) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def options_from_config(cfg: Any) -> dict[str, Any]:
    """The :class:`.memory.MemoryOptions` fields ``cfg`` says something about (the others are left out)."""
    out: dict[str, Any] = {}
    prompt, response = _int(select(cfg, "data.max_prompt_length")), _int(select(cfg, "data.max_response_length"))
    seq = prompt + response if prompt and response else None
    dynamic = select(cfg, f"{ACTOR}.use_dynamic_bsz") is True
    out["dynamic_batch"] = dynamic

    def tokens(budget: str, micro: str, is_dynamic: bool) -> Optional[int]:
        if is_dynamic:
            return _int(select(cfg, budget))
        count = _int(select(cfg, micro))
        return seq * count if seq and count else None

    if dynamic:
        budget = _int(select(cfg, f"{ACTOR}.ppo_max_token_len_per_gpu"))
        if budget:
            out.update(seq_len=budget, micro_batch_size=1)
    else:
        micro = _int(select(cfg, f"{ACTOR}.ppo_micro_batch_size_per_gpu"))
        out.update({k: v for k, v in (("seq_len", seq), ("micro_batch_size", micro)) if v})
    log_prob = tokens(f"{ROLLOUT}.log_prob_max_token_len_per_gpu", f"{ROLLOUT}.log_prob_micro_batch_size_per_gpu",
                      dynamic)
    ref_dynamic = select(cfg, f"{REF}.log_prob_use_dynamic_bsz")
    ref_dynamic = ref_dynamic if isinstance(ref_dynamic, bool) else dynamic
    ref = tokens(f"{REF}.log_prob_max_token_len_per_gpu", f"{REF}.log_prob_micro_batch_size_per_gpu", ref_dynamic)
    out.update({k: v for k, v in (("log_prob_tokens", log_prob), ("ref_log_prob_tokens", ref)) if v})
    out["ref_dynamic_batch"] = ref_dynamic
    out["ref_model"] = select(cfg, "algorithm.use_kl_in_reward") is True or select(cfg, f"{ACTOR}.use_kl_loss") is True
    out["ref_param_offload"] = select(cfg, f"{REF}.megatron.param_offload") is True
    for key, name in (("param_offload", "param_offload"), ("optimizer_offload", "optimizer_offload"),
                      ("use_distributed_optimizer", "distributed_optimizer")):
        if isinstance(select(cfg, f"{ACTOR}.megatron.{key}"), bool):
            out[name] = select(cfg, f"{ACTOR}.megatron.{key}")
    out["use_fused_kernels"] = select(cfg, "actor_rollout_ref.model.use_fused_kernels") is True
    out["entropy_in_update"] = select(cfg, f"{ACTOR}.entropy_coeff") not in (None, 0, 0.0) \
        or select(cfg, f"{ACTOR}.calculate_entropy") is True
    override = f"{ACTOR}.optim.override_optimizer_config"
    fraction = _number(select(cfg, f"{override}.optimizer_offload_fraction"))
    if select(cfg, f"{override}.optimizer_cpu_offload") is True:
        out["optimizer_offload_fraction"] = min(max(fraction or 0.0, 0.0), 1.0)
        out["hybrid_optimizer"] = True
    aware = select(cfg, f"{override}.use_precision_aware_optimizer")
    out["precision_aware_optimizer"] = aware if isinstance(aware, bool) \
        else select(cfg, f"{ACTOR}.optim.use_precision_aware_optimizer") is True
    reduce = select(cfg, f"{ACTOR}.megatron.override_ddp_config.grad_reduce_in_fp32")
    if isinstance(reduce, bool):
        out["grad_reduce_in_fp32"] = reduce
    else:
        low = select(cfg, f"{ACTOR}.optim.use_precision_aware_optimizer") is True \
            and select(cfg, f"{ACTOR}.optim.main_grads_dtype") not in (None, *_FP32)
        out["grad_reduce_in_fp32"] = not low
    return out
