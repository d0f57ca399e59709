"""The model- and cluster-aware part: HF config -> megatron view, parameter and memory estimates, layouts.

Nothing here imports torch, megatron or verl, so ``verl-mindspeed plan`` starts fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._layout import Layout, stage_layer_counts
    from .hf import SUPPORTED_ARCHITECTURES, load_model_spec, spec_from_hf_config
    from .layouts import LayoutPlan, enumerate_layouts, layout_overrides, plan_layouts
    from .memory import MemoryEstimate, MemoryOptions, estimate_for_role, estimate_memory, layout_from_role
    from .params import StageParams, active_parameters, params_per_rank, stage_parameters, total_parameters
    from .recompute import Recompute
    from .spec import ModelSpec, mla_dims

#: Each public name and the module that defines it, imported on first use (PEP 562): a check that reads only
#: the layout predicates does not load the memory engine and the planner.
_HOME = {
    "Layout": "_layout", "stage_layer_counts": "_layout",
    "SUPPORTED_ARCHITECTURES": "hf", "load_model_spec": "hf", "spec_from_hf_config": "hf",
    "LayoutPlan": "layouts", "enumerate_layouts": "layouts", "layout_overrides": "layouts", "plan_layouts": "layouts",
    "MemoryEstimate": "memory", "MemoryOptions": "memory", "estimate_for_role": "memory",
    "estimate_memory": "memory", "layout_from_role": "memory",
    "StageParams": "params", "active_parameters": "params", "params_per_rank": "params",
    "stage_parameters": "params", "total_parameters": "params",
    "Recompute": "recompute",
    "ModelSpec": "spec", "mla_dims": "spec",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value
    return value


__all__ = [
    "SUPPORTED_ARCHITECTURES",
    "Layout",
    "LayoutPlan",
    "MemoryEstimate",
    "MemoryOptions",
    "ModelSpec",
    "Recompute",
    "StageParams",
    "active_parameters",
    "enumerate_layouts",
    "estimate_for_role",
    "estimate_memory",
    "layout_from_role",
    "layout_overrides",
    "load_model_spec",
    "mla_dims",
    "params_per_rank",
    "plan_layouts",
    "spec_from_hf_config",
    "stage_layer_counts",
    "stage_parameters",
    "total_parameters",
]
