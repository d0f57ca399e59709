"""verl's look-up of a named choice, failing on a value the release lacks: the key is the launch's, not verl's code.

- ``Unknown advantage estimator simply: grpoo`` (``get_adv_estimator_fn``): ``algorithm.adv_estimator``;
- ``Unsupported loss mode: vanila`` (``get_policy_loss_fn``): ``actor_rollout_ref.actor.policy_loss.loss_mode``,
  where the modes it lists are policy losses (the distillation losses' look-up prints the same words);
- ``Invalid loss_agg_mode: token_mean`` (``agg_loss``): the critic's key where a critic frame calls it, else the
  actor's;
- a ``NotImplementedError`` raised in ``kl_penalty_forward``: ``algorithm.kl_penalty`` where the trainer's
  ``apply_kl_penalty`` calls it, else the actor's ``kl_loss_type`` (the message prints no value: the launch's, when
  given).

The line is the release's value nearest the one printed (:mod:`verl_mindspeed.catalog.verl_choices`; the release
given, else the newest the index holds). ``check`` judges the same keys before the launch (``verl-choice``). The
rollout's engine and mode are :mod:`._engines`'.
"""

from __future__ import annotations

import re
from typing import Optional

from ..catalog import verl_choices
from ..i18n import Msg, tr
from ..resolver._suggest import nearest
from ._blame import Cause, Verdict
from ._log import Raised
from ._replay import Replay, launch_value

_MESSAGES = (
    (re.compile(r"Unknown advantage estimator(?: simply)?: ([\w.+-]+)"), "algorithm.adv_estimator"),
    (re.compile(r"Unsupported loss mode: ([\w.+-]+?)\.?(?:\s|$)"), "actor_rollout_ref.actor.policy_loss.loss_mode"),
    (re.compile(r"Invalid loss_agg_mode: ([\w.+-]+)"), "actor_rollout_ref.actor.loss_agg_mode"),
)
_LISTED = re.compile(r"Supported modes are: \[([^\]]*)\]")


def verl_choice(raised: Raised, what: Msg, launch: Optional[Replay],
                verl_version: Optional[str] = None) -> Optional[Verdict]:
    known = verl_choices.of_release(verl_version) or verl_choices.of_release(verl_choices.newest())
    if known is None:
        return None
    found = _looked_up(raised, launch)
    if found is None:
        return None
    key, value = found
    kind = verl_choices.KEYS[key][0]
    choices = known.get(kind, [])
    near = nearest(value, choices) if value else None
    fix = f"{key}={near}" if near else None
    text = tr("{what}: verl {release} looks {key} up among {choices}", what=what, release=known["release"], key=key,
              choices=", ".join(choices))
    return Verdict("override", text, [Cause(key, fix)], (key,), certainty="likely")


def _looked_up(raised: Raised, launch: Optional[Replay]) -> Optional[tuple[str, Optional[str]]]:
    """The key whose look-up failed, with the value the message prints (or the launch writes)."""
    functions = [fn for _path, _line, fn in raised.frames]
    for pattern, key in _MESSAGES:
        hit = pattern.search(raised.message)
        if hit is not None:
            if key.endswith("loss_agg_mode") and any("critic" in path for path, _l, _f in raised.frames):
                key = "critic.loss_agg_mode"
            if key.endswith("loss_mode") and not _policy_losses(raised):
                return None
            return key, hit.group(1)
    if raised.type == "NotImplementedError" and functions and functions[-1] == "kl_penalty_forward":
        key = "algorithm.kl_penalty" if "apply_kl_penalty" in functions else "actor_rollout_ref.actor.kl_loss_type"
        return key, launch_value(launch, key)
    return None


def _policy_losses(raised: Raised) -> bool:
    """Whether the loss modes the look-up lists (or the frames) are the policy losses', not the distillation's."""
    if any("distillation" in path for path, _l, _f in raised.frames):
        return False
    listed = _LISTED.search(raised.message)
    if listed is None:
        return True
    names = set(re.findall(r"[\w-]+", listed.group(1)))
    policy = {name for release in verl_choices.releases() for name in verl_choices.of_release(release)["policy_loss"]}
    return bool(names & policy) and names <= policy
