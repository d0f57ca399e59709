"""A parallel layout and how megatron-core assigns layers to pipeline stages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .recompute import NO_RECOMPUTE, Recompute

__all__ = ["Layout", "stage_layer_counts"]

#: MindSpeed's default context-parallel algorithm (ring attention).
RING = "megatron_cp_algo"


@dataclass(frozen=True, kw_only=True)
class Layout:
    """One (TP, PP, VPP, CP, EP, ETP) choice with megatron's uneven first/last stage sizes, the CP algorithm and recompute."""  # noqa: E501  (a docstring: re-wrapping would change its value)

    tp: int = 1
    """``tensor_model_parallel_size``."""
    pp: int = 1
    """``pipeline_model_parallel_size``."""
    vpp: Optional[int] = None
    """``virtual_pipeline_model_parallel_size`` (``None``: no interleaving)."""
    cp: int = 1
    """``context_parallel_size``."""
    ep: int = 1
    """``expert_model_parallel_size``."""
    etp: int = 1
    """``expert_tensor_parallel_size``."""
    first_stage_layers: Optional[int] = None
    """``num_layers_in_first_pipeline_stage``."""
    last_stage_layers: Optional[int] = None
    """``num_layers_in_last_pipeline_stage``."""
    cp_algo: str = RING
    """MindSpeed ``context_parallel_algo`` (only meaningful with CP > 1)."""
    ulysses_degree: Optional[int] = None
    """MindSpeed ``ulysses_degree_in_cp`` for the hybrid algorithms."""
    recompute: Recompute = NO_RECOMPUTE
    """The activation recompute choice."""

    def dp(self, world: int) -> int:
        """Data-parallel size of the dense part: world / (TP x PP x CP)."""
        return world // (self.tp * self.pp * self.cp)

    def expert_dp(self, world: int) -> int:
        """Data-parallel size of the experts: world / (ETP x EP x PP)."""
        return world // (self.etp * self.ep * self.pp)


def stage_layer_counts(
    num_layers: int, pp: int, first: Optional[int] = None, last: Optional[int] = None
) -> Optional[list[int]]:
    """Layers on each pipeline stage as megatron-core 0.12.1 builds them, or ``None`` when they do not split.

    Mirrors ``get_num_layers_to_build`` (``megatron/core/transformer/transformer_block.py``):
    without first/last sizes the layers split evenly; with them the rest splits
    evenly over the middle stages.
    """
    if pp < 1 or num_layers < 1:
        return None
    if pp == 1:
        return [num_layers] if first is None and last is None else None
    rest, stages = num_layers, pp
    if first is not None:
        rest, stages = rest - first, stages - 1
    if last is not None:
        rest, stages = rest - last, stages - 1
    if (first is not None and first < 1) or (last is not None and last < 1) or rest < 0:
        return None
    if stages == 0:
        if rest:
            return None
        middle: list[int] = []
    elif rest % stages or rest < stages:
        return None
    else:
        middle = [rest // stages] * stages
    counts = list(middle)
    if first is not None:
        counts.insert(0, first)
    if last is not None:
        counts.append(last)
    return counts
