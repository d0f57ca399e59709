"""The memory engine's per-stage records: what a pipeline stage holds, and its memory terms."""

from __future__ import annotations

from typing import NamedTuple


class StageShape(NamedTuple):
    """What one pipeline stage holds, before any option is applied."""

    dense: int
    """Parameters of its dense part (attention, dense MLPs, embeddings, head)."""
    expert: int
    """Parameters of its experts (sharded over expert data parallel by the distributed optimizer)."""
    chunks: tuple
    """(dense, MoE) layers of each model chunk (VPP)."""
    flight: tuple
    """Micro-batches in flight per chunk (1F1B / interleaved schedule)."""
    layers: int
    """Layers of the stage."""


class StageTerms(NamedTuple):
    """One stage's memory terms that no recompute choice changes (bytes), and what the activations are made of."""

    weights: float
    grads: float
    optimizer: float
    ref: float
    """The ref model's weights, when it is colocated and not offloaded."""
    optimizer_step: float
    """The optimizer step's temporary buffers."""
    chunks: tuple
    flight: tuple
    logits_update: float
    """Logits held in the update phase (the last stage only)."""
    logits_logprob: float
    """Logits held while computing log-probs (the last stage only)."""
    layers: int
