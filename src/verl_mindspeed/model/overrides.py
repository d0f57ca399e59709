"""The Hydra overrides that select a planned layout for actor and ref."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from ..catalog import universe
from ._layout import Layout
from .cp import READS_SEQ_LENGTH
from .memory import MemoryOptions
from .spec import ModelSpec

__all__ = ["layout_overrides"]

_ACTOR = "actor_rollout_ref.actor.megatron"
_REF = "actor_rollout_ref.ref.megatron"
_OTC = f"++{_ACTOR}.override_transformer_config"  # ++ adds or replaces: safe on any launch line
_REF_OTC = f"++{_REF}.override_transformer_config"
_DEFAULT_OPTIONS = MemoryOptions()  # frozen: one shared default instance is safe
_FIRST_BRIDGE_LINE = (0, 15)  # the first megatron-core line a Megatron-Bridge release imports with (stack.py)


#: Sizes a launch may also write in the actor's dict: verl copies them over the engine's, so a block that moves
#: the engine's size moves the dict's too.
_DICT_SIZES = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "virtual_pipeline_model_parallel_size",
               "context_parallel_size", "expert_model_parallel_size", "expert_tensor_parallel_size")
_RECOMPUTE = ("recompute_granularity", "recompute_method", "recompute_num_layers", "recompute_modules")
#: Keys of a launch's dict that describe its own stage split: a layout that does not set them clears them. (Its CP
#: algorithm stays: inert at CP 1, and MindSpeed refuses a null one.)
_LAYOUT_KEYS = ("num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage", "num_layer_list")


def _companions(layout: Layout, engine: dict, otc: list, launch: Optional[Mapping[str, Any]]) -> list:
    """Keys a launch's dict writes that the layout changes: its sizes moved with the engine's, the recompute keys
    the layout's choice does not use, a stage split the layout does not have, and a Ulysses degree its CP algorithm
    does not take, set to null."""
    if not launch:
        return []
    written = {key for key, _ in otc}
    found: list = [(key, engine.get(key, 1)) for key in _DICT_SIZES
                   if launch.get(key) is not None and key not in written and engine.get(key, 1) != launch.get(key)]
    found += [(key, "null") for key in _RECOMPUTE if launch.get(key) is not None and key not in written
              and key not in dict(layout.recompute.otc_items())]
    found += [(key, "null") for key in _LAYOUT_KEYS if launch.get(key) is not None and key not in written]
    if layout.cp > 1 and launch.get("ulysses_degree_in_cp") is not None and "ulysses_degree_in_cp" not in written:
        found.append(("ulysses_degree_in_cp", "null"))  # the layout's CP algorithm takes no Ulysses degree
    return found


def layout_overrides(spec: ModelSpec, layout: Layout, options: MemoryOptions = _DEFAULT_OPTIONS, *,
                     release: Optional[str] = None, launch: Optional[Mapping[str, Any]] = None,
                     launch_ref: Optional[Mapping[str, Any]] = None) -> tuple[str, ...]:
    """Hydra overrides selecting ``layout`` (and the run options the estimate assumed) for actor and ref.

    The ref inherits the actor's ``override_transformer_config``; writing under the ref's dict
    would replace it, so the dict keys are only set for the actor, with ``++``. On a ``release`` of the megatron-core
    0.12 line, where no Megatron-Bridge imports, the model is built through mbridge (the ref follows the actor's
    ``vanilla_mbridge``). ``launch``: the actor's dict of the launch the block is pasted into; a size or a recompute
    key it writes that the layout changes is written too (a recompute key the layout's choice does not use, and a
    stage split or CP algorithm the layout does not have, null),
    so that the block pasted into that launch leaves nothing disagreeing. ``launch_ref``: the ref's own dict when the
    launch writes one (the ref then inherits nothing): the block writes the same dict keys for the ref.
    """
    sizes = [("tensor_model_parallel_size", layout.tp), ("pipeline_model_parallel_size", layout.pp),
             ("virtual_pipeline_model_parallel_size", layout.vpp if layout.vpp else "null"),
             ("context_parallel_size", layout.cp)]
    if spec.is_moe:
        sizes += [("expert_model_parallel_size", layout.ep), ("expert_tensor_parallel_size", layout.etp)]
    lines = [f"{prefix}.{name}={value}" for prefix in (_ACTOR, _REF) for name, value in sizes]
    otc: list[tuple[str, object]] = []
    if layout.cp > 1:
        otc += [("context_parallel_size", layout.cp), ("context_parallel_algo", layout.cp_algo)]
        if layout.ulysses_degree:
            otc.append(("ulysses_degree_in_cp", layout.ulysses_degree))
        if layout.cp_algo in READS_SEQ_LENGTH:
            otc.append(("seq_length", options.seq_len))
    if layout.first_stage_layers is not None:
        otc.append(("num_layers_in_first_pipeline_stage", layout.first_stage_layers))
    if layout.last_stage_layers is not None:
        otc.append(("num_layers_in_last_pipeline_stage", layout.last_stage_layers))
    otc += layout.recompute.otc_items()
    if "moe_act" in layout.recompute.modules:
        otc.append(("moe_grouped_gemm", True))
    if "mla_up_proj" in layout.recompute.modules:
        otc.append(("multi_latent_attention", True))
    for prefix, written_dict in ((_OTC, launch), (_REF_OTC, launch_ref)):
        if prefix == _REF_OTC and launch_ref is None:
            continue
        for key, value in otc + _companions(layout, dict(sizes), otc, written_dict):
            shown = "[" + ",".join(value) + "]" if isinstance(value, list) else value
            lines.append(f"{prefix}.{key}={shown}")
    if layout.vpp:
        lines.append(f"{_ACTOR}.use_mbridge=False")
    elif release is not None and universe.core_line(release) < _FIRST_BRIDGE_LINE:
        lines.append(f"{_ACTOR}.vanilla_mbridge=True")
        lines.append(f"{_REF}.vanilla_mbridge=True")  # the ref follows the actor's unless the launch sets its own
    if not options.distributed_optimizer:
        lines.append(f"{_ACTOR}.use_distributed_optimizer=False")
    if options.optimizer_offload_fraction > 0:
        optim = "++actor_rollout_ref.actor.optim.override_optimizer_config"
        lines += [f"{optim}.optimizer_cpu_offload=True",
                  f"{optim}.optimizer_offload_fraction={options.optimizer_offload_fraction:g}"]
    if not options.grad_reduce_in_fp32:
        lines.append(f"++{_ACTOR}.override_ddp_config.grad_reduce_in_fp32=False")
    if options.ref_param_offload:
        lines.append(f"{_REF}.param_offload=True")
    if options.use_fused_kernels:
        lines.append("actor_rollout_ref.model.use_fused_kernels=True")
    return tuple(lines)
