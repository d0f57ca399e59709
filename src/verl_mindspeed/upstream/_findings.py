"""An upstream verdict as issues of the report, set beside what the hand rules found.

- an exception in any step is an error with rule ``upstream``: the exception's type and first line, the
  upstream ``file:line`` (``Issue.source``) and the release;
- a switch the launch sets whose MindSpeed feature registers no patch is a warning;
- what MindSpeed logged is a note; a harness failure is a warning (``upstream-harness``): no verdict;
- sources no environment here can run (MindSpeed core_r0.17/0.18) are a warning (``upstream-unavailable``)
  saying why, and nothing runs;
- one ``upstream`` note always says what ran, on which release, and whether the hand rules agree, which side
  is stricter and why.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from ..errors import Issue
from ..i18n import joined, tr
from ..rules import beyond
from ..rules._base import error, note, warning
from ..simulate import Simulation
from ._sources import LINES

RULE, HARNESS, UNAVAILABLE = "upstream", "upstream-harness", "upstream-unavailable"

#: The step of the upstream run that raised, as the report names it.
STAGES = {"repatch": tr("MindSpeed's repatch"), "parallel": tr("megatron's parallel state"),
          "build": tr("the config build"), "layers": tr("megatron's layer assignment"),
          "recompute": tr("the recompute forward"), "import": tr("MindSpeed's import"),
          "forward": tr("the first forward's attention mask")}


def _role_key(sim: Simulation, role: Optional[str], stage: str, message: str) -> str:
    """The key an upstream error is filed under: a key the launch set that the message names, else the role's
    dict (or ``megatron`` section for the parallel state)."""
    build = sim.builds[role if role in sim.builds else sim.order[0]]
    for key in sorted(set(build.explicit) | set(build.given), key=len, reverse=True):
        if key in message:
            return build.key(key)
    for key in sorted(build.megatron, key=len, reverse=True):
        if key in message and len(key) > 3:
            return build.mkey(key)
    return build.prefix if stage == "parallel" else build.otc_path


def _switch_key(sim: Simulation, feature: str) -> str:
    for name in sim.order:
        build = sim.builds[name]
        for key in (feature, f"use_{feature}", *sorted(build.given)):
            if key in build.given and (key == feature or feature in key or key in feature):
                return build.key(key)
    return sim.builds[sim.order[0]].otc_path


def findings(verdict: dict[str, Any], sim: Simulation, *, release: str, line: str, hand: Sequence[Issue],
             model_known: bool, seconds: float, cached: bool) -> list[Issue]:
    """The issues of one upstream verdict (see the module docstring); ``sim`` builds at least one role."""
    out: list[Issue] = []
    kind = verdict.get("verdict")
    hand_errors = sorted({i.rule for i in hand if i.severity == "error" and i.rule})
    if kind == "error":
        stage = verdict.get("stage") or "?"
        where = verdict.get("where") or "?"
        stricter = tr("the hand rules report errors too ({rules})", rules=", ".join(hand_errors)) if hand_errors \
            else tr("upstream is stricter here: no hand rule of verl-mindspeed sees this")
        out.append(error(
            _role_key(sim, verdict.get("role"), stage, verdict.get("message") or ""),
            tr("MindSpeed {release} refuses this launch in {stage} ({role}): {exc_type}: {message}", release=release,
               stage=STAGES.get(stage, stage), role=verdict.get("role") or "-", exc_type=verdict.get("exc_type"),
               message=verdict.get("message") or ""),
            RULE, tr("raised at {where} (MindSpeed {release}, megatron-core {line}); {stricter}", where=where,
                     release=release, line=line, stricter=stricter), source=where))
    elif kind == "harness-error":
        out.append(warning(sim.builds[sim.order[0]].otc_path, tr(
            "the upstream run could not judge this launch: {exc_type}: {message}", exc_type=verdict.get("exc_type"),
            message=verdict.get("message") or ""), HARNESS,
            tr("a failure of verl-mindspeed's harness, not a verdict on the launch; rerun with "
               "VERL_MINDSPEED_ORACLE_DEBUG=1 to see the worker's output")))
    for feature, patches in sorted((verdict.get("unapplied") or {}).items()):
        out.append(warning(_switch_key(sim, feature), tr(
            "MindSpeed {release} registers no patch of its feature {feature} for this launch, although the launch "
            "switches it on: the feature is silently not applied", release=release, feature=feature), RULE,
            tr("patches it would register: {patches}", patches=", ".join(patches[:4]) + (" ..." if len(patches) > 4
                                                                                         else ""))))
    for logged in (verdict.get("mindspeed_warnings") or [])[:5]:
        out.append(note(sim.builds[sim.order[0]].otc_path,
                        tr("MindSpeed {release} logged: {text}", release=release, text=logged[:300]), RULE))
    out.append(_summary(kind, sim, release, line, hand_errors, model_known, seconds, cached))
    return out


def _summary(kind: Optional[str], sim: Simulation, release: str, line: str, hand_errors: list[str],
             model_known: bool, seconds: float, cached: bool) -> Issue:
    ran = tr("repatch, parallel state, config build, layer assignment and recompute") if model_known else \
        tr("repatch and parallel state only (no model config: the config build, layer assignment and recompute "
           "need the model's config.json, --model-config)")
    if kind == "error" or kind == "harness-error":
        agree = tr("see the finding above")
    elif hand_errors:
        reasons = [tr("{rule}: {reason}", rule=rule, reason=beyond.why(rule) or tr(
            "no recorded reason: the hand rule may be wrong here, please report it")) for rule in hand_errors]
        agree = tr("upstream accepts what the hand rules refuse; the hand rules are stricter: {reasons}",
                   reasons=joined(reasons))
    else:
        agree = tr("it agrees with the hand rules")
    return note(sim.builds[sim.order[0]].otc_path,
                tr("upstream: MindSpeed {release} with megatron-core {line} ran {ran} for {roles}: {verdict} "
                   "({seconds} s{cached}); {agree}", release=release, line=line, ran=ran,
                   roles=", ".join(sim.order) or "-", verdict=kind or "?", seconds=format(seconds, ".1f"),
                   cached=tr(", cached") if cached else "", agree=agree), RULE)


def unavailable(src: Any, sim: Optional[Simulation]) -> Issue:
    """The warning for sources that cannot run here: why, and that the verdict is the hand rules' alone."""
    key = sim.builds[sim.order[0]].otc_path if sim is not None and sim.order else \
        "actor_rollout_ref.actor.megatron.override_transformer_config"
    return warning(key, tr("upstream: MindSpeed {release} was not run on this launch: {reasons}; the verdict "
                           "is verl-mindspeed's rules for that release alone, none of it executed",
                           release=src.release, reasons=joined(list(src.unrunnable))), UNAVAILABLE,
                   tr("the releases run here are MindSpeed's branches on megatron-core {lines} (2.1.0 to 26.1.0, "
                      "core_r0.16.0, master)", lines=", ".join(LINES.values())))
