"""verl's paths of a setting's name, in the order the doctor names them where nothing else says which role: the
trained actor's first; and the role whose code a raise sits in."""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

from ..catalog import verl_keys

#: The role whose code a raise sits in, by its file: a name it reads is that role's setting first.
_CODE_ROLES = (("verl/workers/rollout/", "actor_rollout_ref.rollout."), ("verl/workers/critic/", "critic."),
               ("verl/workers/reward", "reward"))


def code_role(file: str) -> Optional[str]:
    """The key prefix of the role whose code ``file`` is (``verl/workers/rollout/...``: the rollout's), or None."""
    return next((prefix for code, prefix in _CODE_ROLES if code in file), None)


#: The order in which a setting's paths are named where nothing says which role raised: the trained actor's first,
#: then its rollout and model, the reference, and the other roles last.
_ROLE_ORDER = ("actor_rollout_ref.actor.", "actor_rollout_ref.rollout.", "actor_rollout_ref.model.",
               "actor_rollout_ref.ref.", "actor_rollout_ref.")


def _role_rank(path: str) -> int:
    return next((n for n, prefix in enumerate(_ROLE_ORDER) if path.startswith(prefix)), len(_ROLE_ORDER))


@lru_cache(maxsize=1)
def verl_leaves() -> dict[str, tuple[str, ...]]:
    """Setting name -> verl's paths of that name, the actor's first (a critic's field is named after the actor's)."""
    out: dict[str, list[str]] = {}
    for path in verl_keys._data()["keys"]:
        out.setdefault(path.rsplit(".", 1)[-1], []).append(path)
    return {k: tuple(sorted(v, key=lambda p: (_role_rank(p), len(p)))) for k, v in out.items()}


@lru_cache(maxsize=1)
def verl_sections() -> frozenset[str]:
    """verl's config sections (``data``, ``actor_rollout_ref.actor.megatron.router_replay``): keys that hold others,
    no setting."""
    return frozenset(key.rsplit(".", 1)[0] for key in verl_keys._data()["keys"] if "." in key)


__all__ = ["code_role", "verl_leaves", "verl_sections"]
