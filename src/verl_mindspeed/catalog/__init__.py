"""The feature catalogue: one entry per row of the MindSpeed feature guide for verl.

This is the single source of truth. The typed schema, the CLI tables and the
generated pages under ``docs/`` all come from :data:`FEATURES`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

from . import fused_ops, memory, moe_attention, parallelism
from ._types import CONDITIONS, OTC, ROLE_PREFIXES, SOURCES, Feature, Flag, From, Injection

_ORDERED: tuple[Feature, ...] = (
    parallelism.TP,
    parallelism.PP,
    parallelism.EP,
    parallelism.ETP,
    parallelism.SP,
    memory.DIST_OPT,
    memory.SWAP_OPT,
    memory.NOOP,
    memory.RECOMPUTE,
    parallelism.CP,
    moe_attention.MOE_ALLTOALL,
    moe_attention.MLA,
    fused_ops.FLASH_ATTN,
    fused_ops.RMSNORM,
    fused_ops.SWIGLU,
    fused_ops.PERMUTE,
    fused_ops.GROUPED_GEMM,
    fused_ops.MC2,
    fused_ops.ROPE,
    moe_attention.MBRIDGE,
    parallelism.CP_ALGO,
)
_DEFINED = {f.id: f for topic in (parallelism, memory, moe_attention, fused_ops) for f in vars(topic).values()
            if isinstance(f, Feature)}  # by id: a row one topic module imports from another counts once
for _placed in _ORDERED:
    del _DEFINED[_placed.id]
FEATURES: tuple[Feature, ...] = _ORDERED + tuple(_DEFINED.values())
"""Seed rows first, in the guide's order, then the rows MindSpeed's own verl guide adds; a feature defined in a
topic module and not placed in that order comes last, in its module's order (a new row needs no edit here)."""

PERMUTE, PERMUTE_MEGATRON = (f.name for f in fused_ops.PERMUTE.flags)
"""The permute pair: MindSpeed's switch and megatron's twin, which MindSpeed keeps equal (it ORs them)."""


@lru_cache(maxsize=None)
def _flag_index() -> dict[tuple[str, str], Flag]:
    out: dict[tuple[str, str], Flag] = {}
    for feature in FEATURES:
        for flag in feature.flags:
            out.setdefault((flag.where, flag.name), flag)
    return out


def flags(where: Optional[str] = None) -> list[Flag]:
    """Every distinct flag of the catalogue, optionally only those under ``otc`` or ``megatron``."""
    return [f for (w, _), f in _flag_index().items() if where is None or w == where]


def flag(name: str, where: str = "otc") -> Optional[Flag]:
    """The flag called ``name`` at ``where``, or ``None``."""
    return _flag_index().get((where, name))


@lru_cache(maxsize=None)
def aliases() -> dict[str, str]:
    """Alias spelling -> canonical ``override_transformer_config`` key."""
    return {alias: f.name for f in flags("otc") for alias in f.aliases}


def feature(feature_id: str) -> Feature:
    for f in FEATURES:
        if f.id == feature_id:
            return f
    raise KeyError(feature_id)


def injections() -> list[Injection]:
    """What a launch through verl-mindspeed writes into the dicts, feature by feature (catalogue order)."""
    return [inj for f in FEATURES for inj in f.injects]


def features_of_flag(name: str, where: str = "otc") -> list[Feature]:
    return [f for f in FEATURES if any(fl.name == name and fl.where == where for fl in f.flags)]


__all__ = ["CONDITIONS", "FEATURES", "Feature", "Flag", "From", "Injection", "OTC", "PERMUTE", "PERMUTE_MEGATRON",
           "ROLE_PREFIXES", "SOURCES", "aliases", "feature", "features_of_flag", "flag", "flags", "injections"]
