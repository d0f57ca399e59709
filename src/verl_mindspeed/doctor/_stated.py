"""verl's own message that states settings with their values (``router_replay.mode='R2' and
enable_rollout_routing_replay=True cannot be enabled simultaneously``, ``bypass_mode=True requires rollout_log_probs
in batch. Ensure rollout worker is configured to calculate_log_probs=true``), where the condition that raised reads
none of them (a tensor in the batch, a value verl derives): the settings the message states are the ones at fault.

- A value the message asks for (after "requires", "set", "use", "configured to", "must be", or before "only") is the
  line: ``actor_rollout_ref.rollout.calculate_log_probs=True``.
- A value it reports (the state that fails: before "requires", "is not supported", "cannot be enabled") is the
  switch turned the other way where it is one (``enable_rollout_routing_replay=False``); a choice it reports
  (``router_replay.mode='R2'``) is named with no line: which other value the user wants, only they know.
- Only verl's raises, and only names that are verl's settings: a dotted path (``rollout.disaggregation.enabled``),
  or a name with an underscore (not ``temperature=0``, not ``num_batch_dims=1``, which is no setting). The key is
  the one the launch writes, else the actor's (then its rollout's, model's, the reference's, the other roles').
  Only the template's own words count: ``f"{sequence_length=} is larger than {max_length=}"`` prints two local
  variables, not the settings of those names.
- Every line is ``check``'s to accept on that key (:func:`._switch.accepted`).
- verl 0.7.0's union of the rollout's batch with the actor's log-probs, both holding ``routed_experts`` (verl#4973):
  rollout routing replay with router replay R2, which verl 0.7.1 refuses in words; its line turns the former off.
"""

from __future__ import annotations

import re
from typing import Optional

from .._version import release_tuple
from ..i18n import Msg, tr
from ._blame import MODEL_FIELDS, Cause, Verdict, paths_for
from ._log import Raised
from ._paths import code_role, verl_leaves
from ._replay import Replay
from ._settings import line
from ._sites import Match
from ._solve import raises, value_of
from ._verl import releases_with

_STATED = re.compile(r"(?<![\w.'\"])(?P<name>[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*)\s*=\s*"
                     r"(?P<value>'[^'\s]{1,40}'|\"[^\"\s]{1,40}\"|[Tt]rue|[Ff]alse|-?\d+(?:\.\d+)?|[A-Za-z_][\w-]*)"
                     r"(?!\w|\.\w)")
#: Words before a value that ask for it.
_ASKING = re.compile(r"\b(?:requires?|[Nn]eeds?|[Ss]et(?:ting)?|[Uu]se|[Pp]ass|configured (?:to|with)|must be|"
                     r"should be|[Ee]nsure|[Pp]lease|[Ee]nable|[Dd]isable|[Ee]ither|only supported with|"
                     r"supports? only)\b[^.;:]*$")

_ONLY = re.compile(r"^\s*only\b")
_TRUE, _FALSE = ("True", "true"), ("False", "false")
#: verl's union of two batches that both hold a tensor (``routed_experts in tensor_dict1 and tensor_dict2 are not the
#: same object``), and the setting that makes the second one hold it, with its value that does not.
_BOTH = re.compile(r"\b(?P<tensor>\w+) in tensor_dict1 and tensor_dict2 are not the same object")
_PRODUCED = {"routed_experts": ("actor_rollout_ref.rollout.enable_rollout_routing_replay", "False")}


def _sentence_before(message: str, start: int) -> str:
    """The words before ``start`` in its sentence (a clause ends at '.', ';' or ':' followed by a space)."""
    head = message[:start]
    cut = max(head.rfind(". "), head.rfind("; "), head.rfind(": "), head.rfind("\n"))
    return head[cut + 1:]


def _key(name: str, site: Match, launch: Optional[Replay], verl_version: Optional[str]) -> Optional[str]:
    """The verl key a printed name is, in the releases that raise there: the one the launch writes, else the first
    in role order."""
    leaf = name.rsplit(".", 1)[-1]
    role = code_role(site.site.file)
    paths = [k for k in verl_leaves().get(leaf, ()) if k == name or k.endswith("." + name)]
    if ("." not in name and "_" not in name) or (leaf in MODEL_FIELDS and not (role and f"{role}{leaf}" in paths)):
        return None  # a size of the world or the model, unless the rollout's code names the rollout's own
    # the releases that raise there (the one installed or named, where it is one of them): the newest first
    raising = sorted(site.releases, key=lambda r: release_tuple(r) or (), reverse=True)
    if verl_version in raising:
        raising = [verl_version]
    for release in raising:
        had = [k for k in paths if release in releases_with(k)]
        if had:
            paths = had
            break
    paths = sorted(paths, key=lambda k: not (role and k.startswith(role)))  # stable: role order otherwise
    written = [k for k in paths if launch is not None and k in launch.keys()]
    # no verl setting of that name: a TransformerConfig field verl's actor takes in override_transformer_config
    return (written or paths or (paths_for(leaf, "megatron-core") if "." not in name else []) or [None])[0]


def _as_condition(site: Match, key: str, fix: Optional[str]) -> Optional[str]:
    """A switch's line where the condition reads that switch: the state with which it cannot raise, when only one
    has that (``assert not (not config.enforce_eager and config.free_cache_engine), "disable CUDA graph
    (enforce_eager = False) if free cache engine"``: the message asks for False, the condition passes with True)."""
    if fix is None or fix.rsplit("=", 1)[1] not in ("True", "False") or not site.site.condition:
        return fix
    leaf = key.rsplit(".", 1)[-1]
    chains = [c for c in site.site.chains if c.rsplit(".", 1)[-1] in site.site.names(leaf)]
    if not chains:
        return fix
    values = {e: value_of(t) for e, t in site.bound.items()}
    passes = {state: raises(site.site.condition, site.site.raises_when_false,
                            {**values, **{c: state for c in chains}}) is False for state in (True, False)}
    wanted = fix.rsplit("=", 1)[1] == "True"
    if passes[wanted] or not passes[not wanted]:
        return fix
    return line(key, not wanted)


def _value(text: str) -> str:
    text = text.strip("'\"")
    return "True" if text in _TRUE else "False" if text in _FALSE else text


def stated(raised: Raised, site: Optional[Match], what: Msg, launch: Optional[Replay], options: dict) -> \
        Optional[Verdict]:
    """The settings a verl raise's message states with a value, each with its line where the message asks for a
    value or reports a switch; None where it states none of verl's."""
    from ._switch import accepted

    if site is None or site.site.package != "verl" or "/veomni/" in site.site.file:
        return None  # the VeOmni engine's settings are not the Megatron trainer's this project reads
    # the template's own words: a value formatted in (``{max_length=}`` prints a local variable) states no setting
    message = "\x00".join(site.site.parts)[:4000]
    causes: list[Cause] = []
    for hit in _STATED.finditer(message):
        key = _key(hit.group("name"), site, launch, options.get("verl_version"))
        if key is None or any(c.key == key for c in causes):
            continue
        value = _value(hit.group("value"))
        asked = bool(_ASKING.search(_sentence_before(message, hit.start()))) or \
            bool(_ONLY.match(message[hit.end():]))
        if asked:
            fix = line(key, value)
        else:  # the state that fails: a switch turned the other way; a choice is the user's to make
            fix = line(key, "False" if value == "True" else "True") if value in ("True", "False") else None
        fix = _as_condition(site, key, fix)
        causes.append(Cause(key, fix if fix and accepted(fix, key, launch, options) else None))
    clash = _BOTH.search(raised.message)
    if not causes and clash and clash.group("tensor") in _PRODUCED:  # verl#4973, said in words by verl 0.7.1
        key, value = _PRODUCED[clash.group("tensor")]
        what = tr("{what}: the rollout returns {tensor} and the actor's log-prob pass records it too; verl 0.7.1 "
                  "says it: {key} is for router_replay.mode=R3, not R2", what=what, tensor=clash.group("tensor"),
                  key=key)
        return Verdict("override", what, [Cause(key, f"{key}={value}")], (key.rsplit(".", 1)[-1],), "likely")
    if not causes:
        return None
    what = tr("{what} (the message states the settings: {keys})", what=what, keys=", ".join(c.key for c in causes))
    return Verdict("override", what, causes, tuple(c.key.rsplit(".", 1)[-1] for c in causes),
                   "likely" if any(c.fix for c in causes) else "possible")


__all__ = ["stated"]
