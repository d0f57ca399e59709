"""MoE router replay as each verl release's PPO trainer runs it (``router_replay.mode`` R2 or R3, and the rollout's
``enable_rollout_routing_replay``). verl checks none of these before the first rollout has run:

- R3 replays the routes the rollout returns; with the rollout's switch off it returns none, and the actor's first
  log-prob pass fails (0.7.0 and 0.7.1: ``routed_experts must be in data.batch.keys()``; 0.8.0 and 0.9.0: an
  AttributeError on None; 0.9.1: ``router_replay REPLAY: micro_batch has no routed_experts``).
- R2 records the routes in that pass itself; with the rollout's switch on as well, both batches hold them and the
  trainer stops at the first step (0.7.0: ``routed_experts in tensor_dict1 and tensor_dict2 are not the same
  object``, verl#4973; 0.7.1 and 0.8.0: ``Detected conflicting router replay configuration``). verl 0.9's trainer
  (``trainer.use_v1``) raises neither, and what it then replays is not judged here.
- verl 0.9.1's driver refuses R2 with ``algorithm.rollout_correction.bypass_mode=True`` (``validate_config``, before
  Ray starts): the bypass skips the pass that records.
- Which key the actor reads: 0.7.x's legacy Megatron worker (the default, ``trainer.use_legacy_worker_impl=auto``)
  reads ``actor.router_replay.mode``; the engine worker (0.8.0 on, or 0.7.x with ``use_legacy_worker_impl=disable``)
  reads ``actor.megatron.router_replay.mode``. 0.7.1 to 0.9.0 have both keys, and a mode on the other one leaves
  router replay off: a warning, whose line sets the key the trainer reads.

Only what the launch writes is judged, on the releases named; through an entry other than ``main_ppo``, a warning.
"""

from __future__ import annotations

from typing import Optional, Sequence

from hydra.core.override_parser.types import Override
from omegaconf import DictConfig

from .._version import release_tuple
from ..eras import LEGACY, era_of, worker_mode
from ..errors import Issue
from ..i18n import tr
from ..model.verl_options import select
from ..rules._base import issue
from ._entry import entry_severity

ACTOR = "actor_rollout_ref.actor"
LEGACY_KEY, ENGINE_KEY = f"{ACTOR}.router_replay.mode", f"{ACTOR}.megatron.router_replay.mode"
ROUTES = "actor_rollout_ref.rollout.enable_rollout_routing_replay"
BYPASS = "algorithm.rollout_correction.bypass_mode"
RULE = "verl-router-replay"
#: Where each release fails, by case: R3 without the rollout's routes, R2 beside them.
_R3_SITE = {"legacy": "verl/workers/actor/megatron_actor.py, an assert",
            (0, 8): "verl/utils/megatron/router_replay_utils.py, an AttributeError",
            (0, 9): "verl/workers/engine/megatron/transformer_impl.py"}
_R2_SITE = {(0, 7, 0): "verl/protocol.py union_tensor_dict", (0, 7, 1): "verl/trainer/ppo/ray_trainer.py fit",
            (0, 8, 0): "verl/trainer/ppo/ray_trainer.py fit"}


def router_issues(version: Optional[str], entry: Optional[str], cfg: DictConfig,
                  parsed: Sequence[Override]) -> list[Issue]:
    release = release_tuple(version or "")
    written = {o.key_or_group for o in parsed if not o.is_delete()}
    if release is None or release < (0, 7, 0) or not written & {LEGACY_KEY, ENGINE_KEY, ROUTES, BYPASS}:
        return []
    severity = entry_severity(entry)
    legacy = worker_mode(cfg, era_of(version)) == LEGACY
    read, other = (LEGACY_KEY, ENGINE_KEY) if legacy else (ENGINE_KEY, LEGACY_KEY)
    mode, routes = select(cfg, read), select(cfg, ROUTES) is True
    out: list[Issue] = []
    unread = select(cfg, other) if other in written else None
    if unread not in (None, "disabled") and mode in (None, "disabled"):
        line = f"{read}={unread}"  # with what that mode then needs of the rollout (the cases below)
        if unread == "R3" and not routes:
            line += f" {ROUTES}=True"
        elif unread == "R2" and routes and release[:3] in _R2_SITE:
            line += f" {ROUTES}=False"
        out.append(issue("warning", other, tr(
            "{key}={value} has no effect on verl {release}: its Megatron actor reads {read}, which stays {mode}, so "
            "router replay stays off", key=other, value=unread, release=version, read=read, mode=mode or "disabled"),
            RULE, override=line))
    if mode == "R3" and not routes:
        out.append(issue(severity, read, tr(
            "{key}=R3 replays the routes the rollout returns, and {routes} is off, so it returns none: verl {release} "
            "fails in the actor's first log-prob pass, after the first rollout ({site})", key=read, routes=ROUTES,
            release=version, site=_R3_SITE["legacy" if legacy else release[:2] if release[:2] in _R3_SITE else (0, 9)]),
            RULE,
            override=f"{ROUTES}=True"))
    if mode == "R2" and routes and release[:3] in _R2_SITE:
        out.append(issue(severity, ROUTES, tr(
            "{routes}=True beside {key}=R2: R2 records the routes in the actor's log-prob pass and the rollout returns "
            "its own, so verl {release} stops at the first step, after the first rollout ({site}); the rollout's "
            "routes are R3's", routes=ROUTES, key=read, release=version, site=_R2_SITE[release[:3]]), RULE,
            override=f"{ROUTES}=False"))
    if mode == "R2" and release[:3] >= (0, 9, 1) and select(cfg, BYPASS) is True:
        out.append(issue(severity, BYPASS, tr(
            "{bypass}=True beside {key}=R2: R2 records the routes while the old log-probs are recomputed, which the "
            "bypass skips; verl {release}'s driver refuses it in validate_config (verl/utils/config.py)",
            bypass=BYPASS, key=read, release=version), RULE, override=f"{BYPASS}=False"))
    return out


__all__ = ["router_issues"]
