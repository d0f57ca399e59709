"""Suggestions: "did you mean" for keys, and corrected values.

A key is matched to a candidate in four tiers, best first; the first tier with a match decides:

1. the same key up to case, or a synonym the catalogue lists for a flag (``flash_attn``, ``use_fa`` ->
   ``use_flash_attn``; ``Flag.synonyms``, next to the flag);
2. the same words once spelling variants are evened out (``use_``/``enable_`` prefixes, ``attention``/``attn``,
   ``optimiser``/``optimizer``, ``context_parallel``/``cp``...): ``use_dist_optimizer``, ``multi_latent_attn``;
3. a typo: :mod:`difflib`'s similarity ratio, bounded by an edit distance that counts a swap of two adjacent
   letters as one edit (``use_fused_rmsnrom``);
4. for the catalogue's own flags only, the words of the key in order with one word missing
   (``cp_window`` -> ``cp_window_size``).

Within a tier the closest wins, the catalogue's flags first; when the best candidates still tie and belong to
different features, there is no suggestion: pointing at another feature is worse than none.
"""

from __future__ import annotations

import difflib
import re
from functools import lru_cache
from typing import Iterable, Optional, Sequence

from .. import catalog
from ..catalog import universe
from ..overrides import split_override

_STOP = {"use", "enable", "enabled", "do", "and", "with", "the"}
_PHRASES = (("context_parallel", "cp"), ("no_op", "noop"), ("rms_norm", "rmsnorm"), ("flash_attention", "flash_attn"),
            ("all_to_all", "alltoall"), ("swi_glu", "swiglu"), ("mc_2", "mc2"))
_WORDS = {"attention": "attn", "optimiser": "optimizer", "optim": "optimizer", "parallelism": "parallel",
          "algorithm": "algo", "communication": "comm", "embedding": "emb", "embed": "emb", "embeddings": "emb",
          "dims": "dim", "dimension": "dim", "dist": "distributed", "layer": "layers", "module": "modules",
          "stages": "stage", "granular": "granularity", "normalisation": "normalization", "fusion": "fused",
          "fuse": "fused", "gemms": "gemm", "experts": "expert"}


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
    """How far a typo may be: one edit for short keys, two for longer ones, three for very long ones."""
    return 1 if len(key) <= 5 else 2 if len(key) < 24 else 3


@lru_cache(maxsize=8192)
def words(key: str) -> tuple[str, ...]:
    """The words of a key with spelling variants evened out (``use_dist_optimiser`` -> ``distributed optimizer``)."""
    text = key.lower().strip("_")
    for phrase, short in _PHRASES:
        text = text.replace(phrase, short)
    return tuple(_WORDS.get(w, w) for w in re.split(r"[_\-.]+", text) if w and w not in _STOP)


@lru_cache(maxsize=None)
def synonyms() -> dict[str, str]:
    """Synonym or alias (lower case) -> the catalogue flag it names."""
    out = {}
    for flag in catalog.flags():
        for other in (*flag.aliases, *getattr(flag, "synonyms", ())):
            out[other.lower()] = flag.name
    return out


def _feature(name: str) -> str:
    found = catalog.features_of_flag(name) or catalog.features_of_flag(name, "megatron")
    return found[0].id if found else name


def nearest(key: str, candidates: Iterable[str], preferred: Iterable[str] = ()) -> Optional[str]:
    """The candidate ``key`` most likely means, or None (see the module's tiers); case is ignored."""
    pool = [c for c in dict.fromkeys(candidates) if c != key]
    if not pool:
        return None
    prefer = set(preferred)
    low = key.lower()
    exact = [c for c in pool if c.lower() == low]
    if exact:
        return exact[0]
    named = synonyms().get(low)
    if named in pool:
        return named
    mine = words(key)
    same = [c for c in pool if words(c) == mine and mine]
    if same:
        return _pick([(0.0, c) for c in same], prefer)
    limit = max_edits(key)
    typos = []
    matcher = difflib.SequenceMatcher(None)
    matcher.set_seq2(low)  # difflib caches what it learns about seq2: the key stays, candidates vary
    for cand in pool:
        other = cand.lower()
        if abs(len(other) - len(low)) > limit:
            continue
        matcher.set_seq1(other)
        if matcher.real_quick_ratio() < 0.75 or matcher.quick_ratio() < 0.75:
            continue
        ratio = matcher.ratio()
        if ratio < 0.75:
            continue
        dist = edit_distance(low, other, limit)
        if dist <= limit:
            typos.append((dist - ratio, cand))
    if typos:
        return _pick(typos, prefer)
    if len(mine) >= 2:
        partial = [c for c in pool if _one_word_missing(mine, words(c))]
        preferred = [c for c in partial if c in prefer]
        if preferred:
            return _pick([(0.0, c) for c in preferred], prefer)
        same_start = [c for c in partial if words(c)[0] == mine[0]]
        if len(mine) >= 3 and (len(partial) == 1 or len(same_start) == 1):  # one word dropped, one key it can be
            return partial[0] if len(partial) == 1 else same_start[0]
    return None


def specialized(key: str, candidates: Iterable[str]) -> tuple[str, ...]:
    """The candidates that are ``key`` with one more word, when there are several and each adds another
    (``max_ckpt_to_keep`` -> ``max_actor_ckpt_to_keep``, ``max_critic_ckpt_to_keep``): the key written without the
    qualifier the section splits it by, which no one candidate is. Empty otherwise."""
    mine = words(key)
    found = [c for c in dict.fromkeys(candidates) if c != key and _one_word_missing(mine, words(c))]
    added = {next(w for i, w in enumerate(words(c)) if words(c)[:i] + words(c)[i + 1:] == mine) for c in found}
    return tuple(found) if len(mine) >= 2 and len(found) >= 2 and len(added) == len(found) else ()


def _one_word_missing(mine: tuple[str, ...], theirs: tuple[str, ...]) -> bool:
    if len(theirs) != len(mine) + 1:
        return False
    return any(theirs[:i] + theirs[i + 1:] == mine for i in range(len(theirs)))


def _pick(scored: list[tuple[float, str]], prefer: set[str]) -> Optional[str]:
    ranked = sorted(scored, key=lambda s: (s[0], s[1] not in prefer, s[1]))
    best_score, best = ranked[0]
    rivals = [c for s, c in ranked[1:] if abs(s - best_score) < 1e-9 and (c in prefer) == (best in prefer)]
    if any(_feature(c) != _feature(best) for c in rivals):
        return None
    return best


# --- values -----------------------------------------------------------------------------------------
_TRUE = {"yes", "y", "true", "on", "1", "t", "enable", "enabled"}
_FALSE = {"no", "n", "false", "off", "0", "f", "disable", "disabled", "none"}


def fix_value(raw: str, kind: str, choices: Sequence[str] = ()) -> Optional[str]:
    """The value ``raw`` most likely meant for a key of type ``kind`` (``bool``, ``int``, ``str``), or None."""
    text = raw.strip().strip("'\"")
    if kind == "bool":
        low = text.lower()
        if low in _TRUE:
            return "True"
        if low in _FALSE:
            return "False"
        near = nearest(low, sorted(w for w in _TRUE | _FALSE if len(w) > 2))
        return None if near is None else "True" if near in _TRUE else "False"
    if kind == "int" and re.fullmatch(r"\d+\.0*", text):
        return text.split(".")[0]
    if choices:
        if text in choices:
            return None
        near = nearest(text, list(choices))
        return near
    return None


def list_fix(raw: str, choices: Sequence[str]) -> Optional[str]:
    """A list for a list key written as MindSpeed's command line spells it (``core_attn mlp``, ``core_attn,mlp``) or
    with a near-miss entry: each entry as a choice, or None where one is no choice's near miss."""
    items = [w.strip().strip("'\"") for w in re.split(r"[,\s]+", raw.strip().strip("'\"").strip("[]")) if w.strip()]
    if not items or not choices:
        return None
    fixed = [i if i in choices else nearest(i, list(choices)) for i in items]
    if any(f is None for f in fixed):
        return None
    return "[" + ",".join(dict.fromkeys(fixed)) + "]"


def value_fix(key: str, argv: Sequence[str]) -> Optional[str]:
    """A corrected override for a value error on ``key``, from the user's own argument."""
    arg = next((a for a in reversed(list(argv)) if split_override(a)[1] == key and "=" in a), None)
    if arg is None:
        return None
    prefix, _, raw = split_override(arg)
    leaf = key.rpartition(".")[2]
    where = "otc" if f".{catalog.OTC}." in key else "megatron"
    flag = catalog.flag(leaf, where)
    if flag is not None:
        kind, choices = flag.type, flag.choices
    else:
        spec = universe.mindspeed_args().get(leaf) or universe.megatron_training_args().get(leaf) or {}
        kind = "bool" if spec.get("action") in ("store_true", "store_false") else spec.get("type") or "str"
        choices = tuple(str(c) for c in spec.get("choices") or ())
    fixed = list_fix(raw, choices) if kind == "str_list" else fix_value(raw, kind, choices)
    return f"{prefix}{key}={fixed}" if fixed is not None else None


__all__ = ["edit_distance", "fix_value", "list_fix", "max_edits", "nearest", "specialized", "synonyms", "value_fix",
           "words"]
