"""The model- and cluster-aware part: HF config -> megatron view, parameter and memory estimates, layouts.

Nothing here imports torch, megatron or verl, so ``verl-mindspeed plan`` starts fast.
"""

from __future__ import annotations

from ._layout import Layout, stage_layer_counts
from .hf import SUPPORTED_ARCHITECTURES, load_model_spec, spec_from_hf_config
from .layouts import LayoutPlan, enumerate_layouts, layout_overrides, plan_layouts
from .memory import MemoryEstimate, MemoryOptions, estimate_for_role, estimate_memory, layout_from_role
from .params import StageParams, active_parameters, params_per_rank, stage_parameters, total_parameters
from .recompute import Recompute
from .spec import ModelSpec, mla_dims

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
