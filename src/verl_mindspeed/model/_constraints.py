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


def interleaved_split(num_layers: int, pp: int, vpp: Optional[int]
                      ) -> tuple[Optional[tuple[Optional[int], Optional[int]]], bool]:
    """(the split :func:`balanced_pipeline_split` gives, or with interleaving the first of :func:`pipeline_splits`
    whose every stage's layers divide by ``vpp``; whether the virtual pipeline size can stay). Moonlight's 27 layers
    over PP=2 with VPP=2 have no such split: the balanced one, and VPP goes (megatron-core: "number of layers on each
    middle pipeline rank ... must be divisible by virtual pipeline parallel degree")."""
    balanced = balanced_pipeline_split(num_layers, pp)
    if not vpp or vpp <= 1 or balanced is None:
        return balanced, True
    for split in [balanced, *pipeline_splits(num_layers, pp)]:
        counts = stage_layer_counts(num_layers, pp, *split)
        if counts is not None and vpp_splits(counts, vpp):
            return split, True
    return balanced, False


def pipeline_splits(num_layers: int, pp: int) -> list[tuple[Optional[int], Optional[int]]]:
    """Every (first, last) stage-size choice worth estimating for ``pp`` stages.

    The even split when there is one, then uneven splits around ``ceil(L/PP)`` layers per
    middle stage: first and/or last stage between ``m - 6`` and ``m + 1`` layers. megatron-core
    0.12.1 rejects both sizes with PP = 2 (division by zero), so PP = 2 sets only the first.
    """
    if pp < 1 or pp > num_layers:
        return []
    found: list[tuple[Optional[int], Optional[int]]] = []
    if num_layers % pp == 0:
        found.append((None, None))
    if pp == 1:
        return found
    if pp == 2:
        half = -(-num_layers // 2)
        return found + [(f, None) for f in range(max(1, half - 6), min(num_layers - 1, half + 1) + 1)
                        if (f, None) not in found and f * 2 != num_layers]
    ceil = -(-num_layers // pp)
    for middle in sorted({max(ceil - 1, 1), ceil}):
        low, high = max(1, middle - 6), middle + 1
        for first in range(low, high + 1):
            for last in range(low, high + 1):
                if first + last + (pp - 2) * middle == num_layers and (first, last) != (middle, middle):
                    found.append((first, last))
        for size in range(low, high + 1):  # only one of them set: the other is a middle stage
            if size != middle and size + (pp - 1) * middle == num_layers:
                found += [(size, None), (None, size)]
    return [s for s in dict.fromkeys(found) if stage_layer_counts(num_layers, pp, *s) is not None]
