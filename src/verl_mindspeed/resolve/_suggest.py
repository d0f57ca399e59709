"""Nearest-key suggestions ("did you mean") by edit distance."""

from __future__ import annotations

from typing import Iterable, Optional


def edit_distance(a: str, b: str, limit: int = 3) -> int:
    """Optimal-string-alignment distance (an adjacent swap is one edit), capped at ``limit + 1``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[-1]


def max_edits(key: str) -> int:
    """How far a typo may be: one edit for short keys, two for longer ones."""
    return 1 if len(key) <= 5 else 2


def nearest(key: str, candidates: Iterable[str], preferred: Iterable[str] = ()) -> Optional[str]:
    """The closest candidate within :func:`max_edits`, preferring ``preferred`` on ties; case is ignored."""
    limit = max_edits(key)
    low = key.lower()
    prefer = set(preferred)
    best: Optional[tuple[int, int, str]] = None
    for cand in candidates:
        d = edit_distance(low, cand.lower(), limit)
        if d > limit:
            continue
        rank = (d, 0 if cand in prefer else 1, cand)
        if best is None or rank < best:
            best = rank
    return best[2] if best else None
