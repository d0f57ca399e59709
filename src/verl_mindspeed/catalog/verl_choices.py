"""The values verl's named choices accept, per release, from the generated ``data/verl_choices.json``
(``tools/build_verl_choices.py`` reads each release's wheel; a test fails when it drifts).

Each launch key names the list it is looked up in, and where verl looks it up (the site that fails on any other).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

from .._version import release_tuple
from ._data import read_json

#: Launch key -> (the list in the index, where verl looks the value up: the site that fails on any other, and
#: when it first runs: at the first ``step`` or ``update``, when training ``start``s, when the ``data`` is read).
KEYS = {
    "algorithm.adv_estimator": ("adv_estimator", "verl/trainer/ppo/core_algos.py get_adv_estimator_fn", "step"),
    "actor_rollout_ref.actor.policy_loss.loss_mode": ("policy_loss", "verl/trainer/ppo/core_algos.py "
                                                                     "get_policy_loss_fn", "update"),
    "actor_rollout_ref.actor.loss_agg_mode": ("loss_agg_mode", "verl/trainer/ppo/core_algos.py agg_loss", "update"),
    "critic.loss_agg_mode": ("loss_agg_mode", "verl/trainer/ppo/core_algos.py agg_loss", "update"),
    "actor_rollout_ref.actor.kl_loss_type": ("kl_penalty", "verl/trainer/ppo/core_algos.py kl_penalty", "update"),
    "algorithm.kl_penalty": ("kl_penalty", "verl/trainer/ppo/core_algos.py kl_penalty", "step"),
    "trainer.resume_mode": ("resume_mode", "verl/trainer/ppo/ray_trainer.py _load_checkpoint", "start"),
    "data.truncation": ("truncation", "verl/utils/torch_functional.py postprocess_data", "data"),
}
#: The rollout's engine and mode, looked up as a pair.
ROLLOUT_NAME, ROLLOUT_MODE = "actor_rollout_ref.rollout.name", "actor_rollout_ref.rollout.mode"
ROLLOUT_SITE = "verl/workers/rollout/base.py get_rollout_class"


@lru_cache(maxsize=None)
def _data() -> dict:
    return read_json("verl_choices.json", missing={"releases": [], "choices": {}})


def of_release(version: Optional[str]) -> Optional[dict]:
    """The choices of verl ``version`` (``0.9.1``, ``0.9.1.dev0``), or None for a release the index lacks."""
    wanted = release_tuple(version or "")
    for release, choices in _data()["choices"].items():
        if wanted is not None and release_tuple(release) == wanted[:3]:
            return {"release": release, **choices}
    return None


def newest() -> Optional[str]:
    """The newest release the index holds."""
    releases = list(_data()["choices"])
    return max(releases, key=release_tuple) if releases else None


def releases() -> tuple[str, ...]:
    return tuple(_data()["choices"])
