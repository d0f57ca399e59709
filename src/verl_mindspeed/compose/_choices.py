"""A named choice of verl the release does not have: ``adv_estimator=grpoo``, ``loss_agg_mode=token_mean``,
``rollout.name=vlm``, ``rollout.mode=sync`` on verl 0.7+.

verl reads these as text and looks them up only where it uses them: the estimator at the first step, the loss
mode and aggregation at the first update, the rollout's engine when the workers build it; any other value fails
there, after Ray and the rollout have started. The values each release accepts are read from its wheel
(:mod:`verl_mindspeed.catalog.verl_choices`); a release the index lacks is not judged. Only what the launch writes
is judged. Through an entry other than ``main_ppo`` (a recipe may register its own estimator or loss) a value
the release lacks is a warning.
"""

from __future__ import annotations

from typing import Optional, Sequence

from hydra.core.override_parser.types import Override
from omegaconf import DictConfig

from ..catalog import verl_choices
from ..errors import Issue
from ..i18n import tr
from ..model.verl_options import select
from ..resolver._suggest import nearest
from ..rules._base import issue
from ._entry import entry_severity


def choice_issues(version: Optional[str], entry: Optional[str], cfg: DictConfig,
                  parsed: Sequence[Override]) -> list[Issue]:
    known = verl_choices.of_release(version)
    if known is None:
        return []
    written = {o.key_or_group: o for o in parsed if not o.is_delete()}
    severity = entry_severity(entry)
    out = []
    for key, (kind, site, stage) in verl_choices.KEYS.items():
        value = select(cfg, key) if key in written else None
        if not isinstance(value, str) or kind not in known:
            continue
        base = value[:-1] if known.get("kl_penalty_plus") and kind == "kl_penalty" and value.endswith("+") else value
        choices = known[kind]
        if base in choices:
            continue
        near = nearest(base, choices)
        line = None if near is None else f"{_as_written(written[key])}={near}{value[len(base):]}"
        out.append(issue(severity, key, tr(
            "{key}={value}: verl {release} has no {what} {value!r} ({site}, {when}); it has {choices}", key=key,
            value=value, release=known["release"], what=_what(kind), site=site,
            when=_when(stage),
            choices=", ".join(choices)), "verl-choice", override=line))
    out += _rollout(known, written, cfg, severity)
    return out


def _rollout(known: dict, written: dict, cfg: DictConfig, severity: str) -> list[Issue]:
    pairs = [tuple(p) for p in known.get("rollout", ())]
    keys = (verl_choices.ROLLOUT_NAME, verl_choices.ROLLOUT_MODE)
    if not pairs or not any(k in written for k in keys):
        return []
    name, mode = (select(cfg, k) for k in keys)
    if not isinstance(name, str) or not isinstance(mode, str) or (name, mode) in pairs:
        return []
    names = sorted({n for n, _ in pairs})
    release, site = known["release"], verl_choices.ROLLOUT_SITE
    if name not in names:
        near = nearest(name, names)
        key = verl_choices.ROLLOUT_NAME
        text = tr("{key}={value}: verl {release} has no rollout engine {value!r} ({site}, when the workers build the "
                  "rollout); it has {choices}",
                  key=key, value=name, release=release, site=site, choices=", ".join(names))
        line = None if near is None or (near, mode) not in pairs or key not in written else \
            f"{_as_written(written[key])}={near}"
        return [issue(severity, key, text, "verl-choice", override=line)]
    modes = sorted(m for n, m in pairs if n == name)
    key = verl_choices.ROLLOUT_MODE
    text = tr("{key}={value}: verl {release} builds the {name} rollout in mode {modes} only ({site}, when the "
              "workers build the rollout)", key=key,
              value=mode, release=release, name=name, modes=", ".join(modes), site=site)
    line = f"{_as_written(written[key]) if key in written else key}={modes[0]}" if len(modes) == 1 else None
    return [issue(severity, key, text, "verl-choice", override=line)]


def _what(kind: str) -> str:
    """What verl calls a value of the list ``kind``, in the reader's language."""
    return {"adv_estimator": tr("advantage estimator"), "policy_loss": tr("policy loss"),
            "loss_agg_mode": tr("loss aggregation mode"), "kl_penalty": tr("KL estimator"),
            "resume_mode": tr("resume mode"), "truncation": tr("truncation")}[kind]


def _when(stage: str) -> str:
    return {"step": tr("at the first step"), "update": tr("at the first update"),
            "start": tr("when training starts: another value resumes from the latest checkpoint, as auto does, and "
                        "fails where there is none"),
            "data": tr("when the dataset is read")}[stage]


def _as_written(override: Override) -> str:
    return (override.input_line or override.key_or_group).partition("=")[0]
