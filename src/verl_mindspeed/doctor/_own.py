"""This project's own refusals in a log: a launch through the preset's callback or the launcher that ``check`` stopped
before Ray started, the API's :class:`~verl_mindspeed.errors.ConfigError`, and the runtime guard's ``GuardError``.

- The callback prints ``check``'s report (``✗ key`` under "Errors (N)", the message, ``hint:``, ``fix:``; in English
  or Chinese) and "verl-mindspeed: N MindSpeed configuration errors; stopping before Ray starts". Each error is a
  failure: its key is at fault, its ``fix:`` line is the fix (a deletion where the report says to delete).
- ``ConfigError`` prints one ``  - key: message`` line per error; its lines carry no fix: with the launch, ``check``'s
  replay gives it.
- The runtime guard (``VERL_MINDSPEED_GUARD``) raises in a worker whose role runs with another layout than it asked
  for; where another role built the process groups first, its message says the line to set.

With the launch given, the replay confirms each: it reproduces the error on that key and the line clears it.
"""

from __future__ import annotations

import re
from typing import Optional

from ..catalog import ROLE_PREFIXES
from ..i18n import LANGS, render, tr, trn
from ..report import LABELS
from ._blame import Cause, Verdict
from ._log import Raised, clean
from ._replay import Replay, checked_cause

#: What the report's errors are read as (no exception class printed them), and the class the API raises with the
#: same errors (its message opens with "N MindSpeed configuration error(s):").
REPORT = "verl-mindspeed check"
OWN = (REPORT, "ConfigError")
_ERROR = re.compile(r"^\s*✗ (?P<key>[\w.@/+~-]+)(?:\s+\(.*\))?\s*$")
_LISTED = re.compile(r"^\s*- (?P<key>[\w.@/+~-]+): ", re.M)
#: The runtime guard's exception, and a line it says to set (a role's section, then the size).
GUARD = "GuardError"
_SET = re.compile(r"\b((?:%s)\.[\w.]+)=([^\s,;，；。]+)" % "|".join(re.escape(p) for p in ROLE_PREFIXES.values()))


def _labels() -> dict[str, tuple[str, ...]]:
    """The report's words (errors, hint, fix, delete the argument(s)) in every language it prints."""
    every = lambda label: tuple(render(LABELS[label], lang) for lang in LANGS)  # noqa: E731
    return {"errors": every("errors"), "hint": every("hint"),
            "fix": every("fix"), "delete": tuple(
                render(trn("delete the argument {args}", "delete the arguments {args}", n, args=""), lang).strip()
                for lang in LANGS for n in (1, 2))}


def own_report(text: str) -> list[Raised]:
    """Each error of ``check``'s report in the log (where the log shows this project's name): the key, then its
    message, ``hint:`` and ``fix:`` lines as the report prints them."""
    if "verl-mindspeed" not in text or "✗" not in text:
        return []
    words = _labels()
    out: list[Raised] = []
    inside, current = False, None
    for stream, line, number in clean(text):
        stripped = line.strip()
        if stripped.startswith(tuple(f"{head} (" for head in words["errors"])):
            inside, current = True, None
        elif not line.startswith(" ") and stripped:  # another section, the verdict line, anything not the report's
            inside, current = False, None
        elif inside and (hit := _ERROR.match(line)):
            current = Raised(REPORT, hit.group("key"), [], stream, number)
            out.append(current)
        elif current is not None and line.startswith("      ") and stripped:
            label = stripped.split(":", 1)[0]
            said = label in words["fix"] or label in words["hint"] or "\n" in current.message
            current.message += f"\n{stripped}" if said else f": {stripped}"
    return out


def own_verdict(raised: Raised, what, launch: Optional[Replay], options: dict) -> Optional[Verdict]:
    """The key each of this project's errors names, with the report's line (or the replay's); None for any other
    raise."""
    listed = [hit.group("key") for hit in _LISTED.finditer(raised.message)]
    if raised.type != REPORT and not (raised.type == "ConfigError" and listed and
                                      "MindSpeed configuration error" in raised.message.split("\n")[0]):
        return None  # another package's ConfigError is not this project's
    words = _labels()
    keys = listed or [raised.message.split(":", 1)[0].strip()]
    line, delete = None, False
    for row in raised.message.split("\n")[1:]:
        label, _, rest = row.partition(":")
        if label.strip() in words["fix"]:
            rest = rest.strip()
            delete = rest.startswith(words["delete"])
            line = rest.split("; ", 1)[1].strip() if delete and "; " in rest else (None if delete else rest)
    causes = [checked_cause(key, launch, launch, options, line if key == keys[0] else None, delete and key == keys[0])
              for key in keys]
    if raised.type == REPORT:  # check's report, as the preset's callback or the launcher prints it
        what = tr("verl-mindspeed's check stopped the launch before Ray started (the preset's callback or the "
                  "launcher): {error}", error=raised.message.split("\n")[0][:240])
    return Verdict("override", what, causes, tuple(k.rsplit(".", 1)[-1] for k in keys),
                   "confirmed" if all(c.confirmed for c in causes) else "likely")


def joined(causes: list[Cause]) -> list[Cause]:
    """One cause per key, its lines joined: two errors of the report on one key (the world size's and the roles'
    sizes on the actor's TP) each give a line, and check's lines are made to be pasted together."""
    out: dict[str, Cause] = {}
    for cause in causes:
        kept = out.get(cause.key)
        if kept is None or not kept.fix:
            out[cause.key] = cause if kept is None or cause.fix else kept
        elif cause.fix and cause.fix not in kept.fix:
            out[cause.key] = Cause(cause.key, f"{kept.fix} {cause.fix}", kept.confirmed and cause.confirmed)
    return list(out.values())


def guard_verdict(raised: Raised, what) -> Optional[Verdict]:
    """The runtime guard's refusal in a worker (``GuardError: verl-mindspeed guard: actor asked for TP=2 but the
    process groups were built with TP=1 by the critic ...: set critic.megatron.tensor_model_parallel_size=2``): each
    line it says to set, with its key; None where it says none (the namespace, a layout no other role built)."""
    if raised.type != GUARD or "verl-mindspeed guard:" not in raised.message:
        return None
    lines = dict(_SET.findall(raised.message))
    if not lines:
        return None
    return Verdict("override", what, [Cause(key, f"{key}={value}") for key, value in lines.items()],
                   tuple(key.rsplit(".", 1)[-1] for key in lines), "likely")


__all__ = ["GUARD", "OWN", "REPORT", "guard_verdict", "joined", "own_report", "own_verdict"]
