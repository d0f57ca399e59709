"""Replaying a launch: ``check`` on it, the issues that speak of a failure's keys, and whether a fix clears them.

A fix is pasted as the report prints it: in place of the argument it ``replaces`` (one Hydra refuses as written),
else after the launch's arguments; the launch is then checked again.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Sequence

from ..errors import EvaluationError, Issue
from ..launch import LaunchFile, evaluate
from ..overrides import split_override
from ._blame import Cause


@dataclass
class Replay:
    """What ``check`` says of the launch."""

    argv: list[str]
    issues: list[Issue]
    entry: Optional[str] = None

    def keys(self) -> list[str]:
        """The keys the launch's overrides set (their ``+``/``++`` taken off), in order; no ``--config-name``."""
        return [split_override(a)[1] for a in self.argv if "=" in a and not a.startswith("-")]

    def value(self, key: str) -> Optional[str]:
        """The value the launch's last argument for ``key`` writes, unquoted; None when no argument sets it."""
        for arg in reversed(self.argv):
            _prefix, k, value = split_override(arg)
            if k == key:
                return value.strip("'\"")
        return None

    def about(self, keys: Iterable[str], leaves: Iterable[str] = (), cites: str = "",
              function: str = "") -> list[Issue]:
        """The errors of a rule citing the raise's file ``cites`` and its ``function`` (a rule citing the file for
        another function's check is not about it), those on one of ``keys`` (or on a key ending in one of
        ``leaves``) first; where no rule cites it, the errors on those keys. Another rule on the same keys (the dict's
        copy of a size differing from the engine's) is another failure, whose line does not clear this one."""
        from ..rules._base import RULES

        keys, leaves = set(keys), set(leaves)
        short = function.rsplit(".", 1)[-1]
        citing = {r.id for r in RULES if cites and cites in r.cites and (not short or short in r.cites)}
        errors = [i for i in self.issues if i.severity == "error"]
        cited = [i for i in errors if i.rule in citing]
        on_keys = [i for i in errors if i.key in keys or i.key.rsplit(".", 1)[-1] in leaves]
        return [i for i in cited if i in on_keys] or cited or on_keys


#: What every verl launch sets besides its own settings, on verl's Megatron config: each pass's micro batch size
#: (verl's driver requires one without dynamic batching; 1 leaves the memory model's default as it is) and the
#: rollout engine (verl 0.6+ leaves it '???').
_NEUTRAL = ("--config-name=ppo_megatron_trainer", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1",
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1",
            "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1", "critic.ppo_micro_batch_size_per_gpu=1",
            "actor_rollout_ref.rollout.name=vllm")


def neutral() -> list[str]:
    """A launch of verl's Megatron defaults that ``check`` passes: where no launch is given, a fix line is pasted
    into it to see whether ``check`` refuses the line itself."""
    return list(_NEUTRAL)


def launch_value(launch: Optional[Replay], key: str) -> Optional[str]:
    """What the launch, when there is one, writes for ``key`` (:meth:`Replay.value`)."""
    return launch.value(key) if launch is not None else None


def replay(argv: Sequence[str], source: Optional[LaunchFile] = None, after: Optional[Callable] = None,
           **options) -> Optional[Replay]:
    """``check`` on the launch (then ``after`` on its resolution: ``check --upstream``'s run); None when it cannot
    be evaluated."""
    try:
        res = evaluate(list(argv), source=source, **options)
        if after is not None:
            after(res)
    except EvaluationError:
        return None
    return Replay(list(argv), list(res.issues), source.entry if source else None)


def pasted(argv: Sequence[str], fix: str, replaces: Optional[str] = None) -> list[str]:
    """The launch with ``fix`` pasted: in place of ``replaces`` when it is one of the arguments, else appended; a
    key the fix sets replaces the argument that set it."""
    words = shlex.split(fix)
    out = list(argv)
    if replaces and replaces in out:
        at = out.index(replaces)
        return out[:at] + words + out[at + 1:]
    for word in words:
        key = split_override(word)[1]
        same = [k for k, a in enumerate(out) if "=" in a and split_override(a)[1] == key and not a.startswith("~")]
        if same and not word.startswith("~"):
            out[same[-1]] = word if not out[same[-1]].startswith("+") or word.startswith("+") else "++" + word
        else:
            out.append(word)
    return out


def without(argv: Sequence[str], key: str) -> list[str]:
    """The launch with every argument that sets ``key`` deleted."""
    return [a for a in argv if "=" not in a or split_override(a)[1] != key]


def clears(launch: Replay, issue: Issue, source: Optional[LaunchFile] = None, **options) -> bool:
    """Whether pasting ``issue``'s fix leaves the launch without that error (that rule on that key)."""
    if not issue.override:
        return False
    again = replay(pasted(launch.argv, issue.override, issue.replaces), None, entry=launch.entry, **options)
    if again is None:
        return False
    return not [i for i in again.issues if i.severity == "error" and i.rule == issue.rule and i.key == issue.key]


def issue_causes(launch: Replay, issues: Sequence[Issue], **options) -> list[Cause]:
    """Each of the replay's ``issues`` as a cause: its key and line, confirmed where pasting the line clears it."""
    return [Cause(i.key, i.override, clears(launch, i, **options)) for i in issues]


def checked_cause(key: str, probe: Optional[Replay], launch: Optional[Replay], options: dict,
                  line: Optional[str] = None, delete: bool = False) -> Cause:
    """``check``'s finding on ``key`` in ``probe``'s replay: its line, confirmed where ``probe`` is the launch and
    the line clears it. Where ``check`` gives neither a line nor a deletion, ``line`` (or the deletion)."""
    issue = next(iter(probe.about([key])), None) if probe is not None else None
    if issue is None or not (issue.override or issue.deletes or line):
        return Cause(key, line, delete=delete and not line)
    confirmed = probe is launch and bool(issue.override) and clears(launch, issue, **options)
    fix = issue.override or line
    return Cause(key, fix, confirmed, delete=not fix and (delete or bool(issue.deletes)))


__all__ = ["Replay", "checked_cause", "clears", "issue_causes", "launch_value", "pasted", "replay", "without"]
