"""Sizes verl divides or multiplies by, set to zero or less: verl's driver and workers take them as they are, and
the run stops with a ZeroDivisionError, an assertion or an empty placement group once Ray has started, or the
checks that would have caught the layout see a world of no devices and pass."""

from __future__ import annotations

from math import lcm
from typing import Iterable

from ..errors import Issue
from ..i18n import tr
from ..model.verl_options import select as _select
from ._base import Context, RoleView, _int, error, rule

#: Each size, and the role that reads it (``None``: every launch does; ``"driver"``: an entry whose driver runs
#: verl's ``validate_config``: the fully-async entry asserts ``data.train_batch_size == 0``, it streams prompts).
SIZES = {
    "trainer.nnodes": None,
    "trainer.n_gpus_per_node": None,
    "data.train_batch_size": "driver",
    "actor_rollout_ref.rollout.n": None,
    "actor_rollout_ref.actor.ppo_mini_batch_size": "actor",
    "actor_rollout_ref.actor.ppo_micro_batch_size": "actor",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": "actor",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size": "actor",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": "actor",
    "actor_rollout_ref.rollout.tensor_model_parallel_size": "actor",
    "actor_rollout_ref.rollout.data_parallel_size": "actor",
    "actor_rollout_ref.rollout.pipeline_model_parallel_size": "actor",
    "actor_rollout_ref.ref.log_prob_micro_batch_size": "ref",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": "ref",
    "critic.ppo_mini_batch_size": "critic",
    "critic.ppo_micro_batch_size": "critic",
    "critic.ppo_micro_batch_size_per_gpu": "critic",
}

_CITES = ("verl 0.9.1 verl/utils/config.py validate_config (real_train_batch_size % minimal_bsz, minimal_bsz = dp x "
          "ppo_micro_batch_size_per_gpu); verl/workers/engine_workers.py update (data.shape[0] // "
          "mini_batch_size_per_gpu) and init_model (world_size % infer_world_size, rollout TP x PP); "
          "verl/single_controller/ray/base.py RayResourcePool (nnodes x n_gpus_per_node bundles)")


@rule("verl-positive-size", scope="run", cites=_CITES, holds_for="every verl release")
def positive_sizes(roles: dict[str, RoleView], ctx: Context) -> Iterable[Issue]:
    """A device count, batch size, sample count or rollout parallel size of zero or less: no verl release refuses it
    when the config is read, and each is divided or multiplied by before the first step."""
    cfg = ctx.config
    if cfg is None or "actor" not in roles:
        return
    for key, role in SIZES.items():
        value = _written(cfg, key)
        wanted = ctx.driver_validates if role == "driver" else role is None or role in roles
        if not wanted or isinstance(value, bool) or not isinstance(value, int) or value > 0:
            continue
        per_gpu = key + "_per_gpu" if key.endswith(_DEPRECATED) else None
        if per_gpu and _written(cfg, per_gpu) is not None:
            continue  # both set: verl-micro-batch drops the deprecated one
        line = f"{key}=null {per_gpu}=1" if per_gpu else f"{key}={_replacement(key, roles, cfg)}"
        yield error(key, tr("{key}={value}: verl divides or multiplies by it, so it must be 1 or more; verl does not "
                            "check it when it reads the config, and the run stops after Ray has started",
                            key=key, value=value), "verl-positive-size", override=line)


def _written(cfg, key: str):
    """``key``'s value as the launch or verl's file writes it; None where it is another key's, by interpolation
    (the critic's batch sizes default to the actor's): that key is the one judged."""
    from omegaconf import OmegaConf

    parent, _, leaf = key.rpartition(".")
    node = _select(cfg, parent)
    if node is None or not OmegaConf.is_config(node) or leaf not in node or OmegaConf.is_interpolation(node, leaf):
        return None
    return _select(cfg, key)


#: The deprecated global micro batch sizes: a line moves to the per-device key verl reads instead.
_DEPRECATED = ("ppo_micro_batch_size", "log_prob_micro_batch_size")
#: A batch set to zero or less takes the other's size: the train batch the mini batch's, and back.
_PAIRED = {"data.train_batch_size": "actor_rollout_ref.actor.ppo_mini_batch_size",
           "actor_rollout_ref.actor.ppo_mini_batch_size": "data.train_batch_size"}


def _replacement(key: str, roles: dict[str, RoleView], cfg) -> int:
    """1; a batch, the other batch's size (one update per step); a node's devices, as many as one actor replica and
    one rollout group both fit on."""
    if key in _PAIRED:
        other = _int(_select(cfg, _PAIRED[key]))
        return other if other and other > 0 else 1
    if key != "trainer.n_gpus_per_node":
        return 1
    actor = roles["actor"]
    rollout = 1
    for part in ("tensor_model_parallel_size", "data_parallel_size", "pipeline_model_parallel_size"):
        size = _int(_select(cfg, "actor_rollout_ref.rollout." + part))
        rollout *= size if size and size > 0 else 1
    return lcm(max(actor.tp * actor.pp * actor.cp, 1), rollout)
