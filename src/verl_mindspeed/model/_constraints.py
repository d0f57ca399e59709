"""The model/cluster facts a layout must satisfy, shared by the rules and the planner.

Each predicate is the single statement of one upstream check; ``rules/model_rules.py``
words the error, ``layouts.py`` filters candidates with the same function.
"""

from __future__ import annotations

from typing import Optional

from ._layout import stage_layer_counts
from .spec import ModelSpec

__all__ = [
    "balanced_pipeline_split",
    "experts_split",
    "ffn_split",
    "groups_split",
    "heads_split",
    "ulysses_heads_split",
    "vpp_splits",
]


def heads_split(spec: ModelSpec, tp: int) -> bool:
    """megatron-core TransformerConfig: ``num_attention_heads % tensor_model_parallel_size == 0``."""
    return spec.num_attention_heads % tp == 0


def groups_split(spec: ModelSpec, tp: int) -> bool:
    """megatron-core 0.12.1 TransformerConfig: ``num_query_groups % tensor_model_parallel_size == 0``."""
    return spec.num_query_groups % tp == 0


def experts_split(spec: ModelSpec, ep: int) -> bool:
    """megatron-core MoE layer: ``num_moe_experts % expert_model_parallel_size == 0``."""
    return (spec.num_experts or 1) % ep == 0


def ffn_split(spec: ModelSpec, tp: int, etp: int) -> list[tuple[int, str, str, int]]:
    """MLP widths megatron-core cannot split: ``(size, size key, width name, width)`` for each.

    Column-parallel layers ``divide()`` their output over TP (dense MLP, shared
    experts) or ETP (routed experts).
    """
    found = []
    widths = [(tp, "tensor_model_parallel_size", "ffn_hidden_size (intermediate_size)", spec.ffn_hidden_size)]
    if spec.is_moe:
        widths.append((etp, "expert_tensor_parallel_size", "moe_ffn_hidden_size (moe_intermediate_size)",
                       spec.moe_ffn_hidden_size or 0))
        if spec.shared_expert_intermediate_size:
            widths.append((tp, "tensor_model_parallel_size", "the shared-expert intermediate size",
                           spec.shared_expert_intermediate_size))
    for size, key, name, width in widths:
        if width % size:
            found.append((size, key, name, width))
    return found


def ulysses_heads_split(spec: ModelSpec, degree: int, tp: int) -> bool:
    """MindSpeed Ulysses CP: heads split over the Ulysses degree times TP."""
    return spec.num_attention_heads % (degree * tp) == 0


def vpp_splits(counts: list[int], vpp: Optional[int]) -> bool:
    """megatron-core: every stage's layers divisible by the virtual pipeline size."""
    return not vpp or vpp <= 1 or all(c % vpp == 0 for c in counts)


def balanced_pipeline_split(num_layers: int, pp: int) -> Optional[tuple[Optional[int], Optional[int]]]:
    """(first, last) stage sizes that split ``num_layers`` over ``pp`` stages, or ``None``.

    ``(None, None)`` when the layers split evenly. Otherwise the middle stages get
    ``ceil(L/PP)`` layers and the first and last share the rest, the first taking
    the larger half (the last stage also holds the output layer). Moonlight's 27
    layers over PP=4 give (7, 6), the split its reference script uses.
    """
    if pp < 1 or pp > num_layers:
        return None
    if num_layers % pp == 0:
        return None, None
    if pp == 2:
        return -(-num_layers // 2), None
    middle = -(-num_layers // pp)
    rest = num_layers - (pp - 2) * middle
    first, last = -(-rest // 2), rest // 2
    if last < 1 or first > middle + 1:
        return None
    if stage_layer_counts(num_layers, pp, first, last) is None:
        return None
    return first, last
