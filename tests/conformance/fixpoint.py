"""Fix lines pasted back, round after round, as a user does: the contract that every error's fix converges.

A round checks the launch, takes the fix line of every error, and pastes it: each word of a fix replaces the
argument that sets the same key (the user edits that line), or is appended when no argument does; a ``~key``
word deletes the argument that sets the key (what Hydra does with it appended); a fix for an argument Hydra
refuses as written replaces that argument (``Issue.replaces``); the arguments a fix deletes (``Issue.deletes``) are
deleted. An error without a fix stops the launch there (``stuck``). Two rounds that report the same errors are a loop.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Optional


def _key(arg: str) -> str:
    return arg.lstrip("+~").partition("=")[0]


def paste(argv: list[str], fixes: list[str], replaces: Optional[list[Optional[str]]] = None) -> list[str]:
    """``argv`` with every word of every fix line applied (a later word for the same key wins); a fix that
    ``replaces`` an argument (one Hydra refuses as written) goes in its place."""
    out = list(argv)
    for line, old in zip(fixes, replaces or [None] * len(fixes)):
        if old is not None and old in out:
            out.remove(old)
        for word in shlex.split(line):
            keys = [i for i, arg in enumerate(out) if "=" in arg and _key(arg) == _key(word)]
            if keys and word.startswith("~"):  # '~key': the user deletes the argument that sets the key
                out = [arg for i, arg in enumerate(out) if i not in keys]
            elif keys:
                out[keys[-1]] = word
            else:
                out.append(word)
    return out


@dataclass
class Outcome:
    argv: list[str]
    rounds: int
    """Rounds of pasting it took to reach no error (0: none was needed)."""
    status: str
    """``fixed``, ``stuck`` (an error without a fix line), ``loop`` (the same errors again), ``slow`` (errors
    left after the allowed rounds) or ``broken`` (a pasted fix made the command line unreadable)."""
    history: list[list[str]] = field(default_factory=list)
    """The errors of each round, as ``rule key`` strings."""
    last: Optional[object] = None


def converge(argv: list[str], evaluate, rounds: int = 2) -> Outcome:
    """Paste the fixes of ``evaluate(argv)`` up to ``rounds`` times; ``evaluate`` returns a Resolution."""
    from verl_mindspeed.errors import EvaluationError

    history: list[list[str]] = []
    for done in range(rounds + 1):
        try:
            res = evaluate(argv)
        except EvaluationError as exc:  # a pasted fix broke the command line itself
            return Outcome(argv, done, "broken", [*history, [str(exc)]])
        errors = sorted(f"{i.rule} {i.key}" for i in res.errors)
        if not errors:
            return Outcome(argv, done, "fixed", history, res)
        if errors in history:
            return Outcome(argv, done, "loop", [*history, errors], res)
        history.append(errors)
        fixed = [i for i in res.errors if i.override or i.deletes]
        if len(fixed) < len(res.errors):
            return Outcome(argv, done, "stuck", history, res)
        if done == rounds:
            break
        gone = {a for i in fixed for a in i.deletes}  # the user deletes these arguments
        argv = paste([a for a in argv if a not in gone], [i.override for i in fixed if i.override],
                     [i.replaces for i in fixed if i.override])
    return Outcome(argv, rounds, "slow", history, res)


def summary(outcomes: list[Outcome]) -> dict[str, int]:
    out = {"failing": len(outcomes), "fixed": 0, "fixed_in_1": 0, "stuck": 0, "loop": 0, "slow": 0, "broken": 0}
    for o in outcomes:
        out[o.status] += 1
        out["fixed_in_1"] += o.status == "fixed" and o.rounds == 1
    return out
