"""MindSpeed's context-parallel algorithms: which a release has, and what each requires.

Constraints mirror MindSpeed's ``features_manager/context_parallel/*.py`` (every release
from 2.1.0) and ``rules/attention.py`` / ``rules/model_rules.py`` of this project:

- ``megatron_cp_algo`` (ring): ``seq_length % (2 x CP) == 0``;
- ``ulysses_cp_algo``: ``seq_length % CP == 0`` and ``heads % (CP x TP) == 0``; MindSpeed reads
  ``seq_length`` unguarded, so it must be in the dict;
- ``hybrid_cp_algo``: ``ulysses_degree_in_cp`` = u with ``CP % u == 0``, ``CP / u > 1``,
  ``heads % (u x TP) == 0``, ``seq_length % (2 x CP) == 0``;
- ``kvallgather_cp_algo`` (MindSpeed 26.0.0 and later): causal masks, ``seq_length % (2 x CP) == 0``;
- ``adaptive_cp_algo``: ``seq_length % CP == 0`` (read unguarded);
- ``hybrid_adaptive_cp_algo``: u as for hybrid, ``heads % (u x TP) == 0``, ``seq_length % CP == 0``.

A release's choices are the ``context_parallel_algo`` choices registered in its arguments
(``catalog/data/known_keys.json``) plus ``ulysses_cp_algo`` and ``adaptive_cp_algo``, which
the Ulysses and adaptive CP features add to those choices in every release.
"""

from __future__ import annotations

from typing import Iterator, Optional

from ..catalog import universe
from .spec import ModelSpec

__all__ = ["ALGORITHMS", "READS_SEQ_LENGTH", "algorithms_of", "cp_variants"]

ALGORITHMS = ("megatron_cp_algo", "ulysses_cp_algo", "hybrid_cp_algo", "kvallgather_cp_algo", "adaptive_cp_algo",
              "hybrid_adaptive_cp_algo")
READS_SEQ_LENGTH = ("ulysses_cp_algo", "adaptive_cp_algo", "hybrid_adaptive_cp_algo")
"""Algorithms whose MindSpeed check reads ``seq_length`` without a guard."""
_ALWAYS = ("megatron_cp_algo", "ulysses_cp_algo", "adaptive_cp_algo")


def algorithms_of(release: Optional[str]) -> tuple[str, ...]:
    """The CP algorithms MindSpeed ``release`` accepts (every known one when the release is unknown)."""
    if release not in universe.releases():
        return ALGORITHMS
    choices = set((universe.mindspeed_args(release).get("context_parallel_algo") or {}).get("choices") or ())
    return tuple(a for a in ALGORITHMS if a in choices or a in _ALWAYS)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def cp_variants(spec: ModelSpec, tp: int, cp: int, seq_len: int, algorithms: tuple[str, ...]
                ) -> Iterator[tuple[str, Optional[int]]]:
    """(algorithm, ulysses degree) pairs that MindSpeed accepts for this TP, CP and sequence length."""
    if cp == 1:
        yield "megatron_cp_algo", None
        return
    heads = spec.num_attention_heads
    for algo in algorithms:
        if algo in ("megatron_cp_algo", "kvallgather_cp_algo"):
            if seq_len % (2 * cp) == 0:
                yield algo, None
        elif algo == "ulysses_cp_algo":
            if seq_len % cp == 0 and heads % (cp * tp) == 0:
                yield algo, None
        elif algo == "adaptive_cp_algo":
            if seq_len % cp == 0:
                yield algo, None
        else:  # hybrid_cp_algo, hybrid_adaptive_cp_algo
            factor = 2 * cp if algo == "hybrid_cp_algo" else cp
            if seq_len % factor:
                continue
            for u in _divisors(cp):
                if 1 < u < cp and heads % (u * tp) == 0:
                    yield algo, u
