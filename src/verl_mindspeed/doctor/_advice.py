"""The way out an upstream message gives by command-line flag.

megatron-core and MindSpeed often end a raise with what to do: "Please use --moe-router-pre-softmax when topk is 1",
"Please set --moe-router-score-function sigmoid", "Do not set --moe-layer-recompute ...", "you must simultaneously
enable `--use-dsa-absorb`, `--use-fused-lightning-indexer`, and ...". :func:`advised_flags` reads those imperatives
into settings and values, using the arguments MindSpeed and Megatron-LM register (a switch, a number, a choice) to
tell a value from the sentence going on.
"""

from __future__ import annotations

import re
from typing import Optional

from ..catalog import universe

#: An imperative that opens a list of flags: at a sentence's start, after "please", "must" or "need(s) to" (an
#: adverb may follow), or forbidden ("do not set", "must not use"). "to use --x" (a purpose) and "when enable --x"
#: (a condition) are not advice.
_VERB = re.compile(r"(?:^|[.;:!?。；：！？]\s*|\b[Pp]lease\s+|\b(?:[Mm]ust|[Ss]hould|[Nn]eeds? to)\s+(?:\w+ly\s+)?)"
                   r"(?P<neg>(?:[Dd]o not|[Dd]on'?t|[Nn]ever|not)\s+)?"
                   r"(?:[Ss]et|[Uu]se|[Pp]ass|[Aa]dd|[Ee]nable|[Ss]pecify)\s+(?=['\"`]?--[a-z])")
_Q = "['\"`]?"
#: One flag and what may be its value: after "=", after "to", or the next word.
_ITEM = re.compile(rf"{_Q}--(?P<flag>[a-z][a-z0-9-]*){_Q}(?:={_Q}(?P<assigned>[\w.,+-]+){_Q}|"
                   rf"\s+to\s+{_Q}(?P<to>[\w.+-]+){_Q}(?=\s*(?:$|[.,;)]|or\b|and\b|for\b))|\s+{_Q}(?P<next>[\w.+-]+){_Q})?")
_AND = re.compile(r"\s*(?:,\s*(?:and\s+)?|\s+and\s+)(?=['\"`]?--[a-z])")
_END = re.compile(r"[.;!?。；！？](?=\s|$)|$")
#: Words after a flag that are the sentence going on, not its value ("use --x when topk is 1").
_NOT_VALUES = frozenset("when with for to instead and or if in as the a an is are only alongside together cannot must "
                        "should which while because so then but not use enable fix prevent flag option argument needs "
                        "need requires require first on off here there now also".split())
#: A flag followed by these is the sentence's subject ("use --x should open --y": MindSpeed's "using --x needs --y").
_SUBJECT = frozenset("should must needs need requires require is are cannot".split())


def advised_flags(text: str) -> dict[str, object]:
    """The settings a message tells the user to set by flag, with their values: ``Please set
    --moe-router-score-function sigmoid`` gives ``{"moe_router_score_function": "sigmoid"}``; a switch named alone is
    turned on (True), or off where forbidden (``Do not set --x``) or spelled ``--no-x`` / ``--disable-x``; a list
    joined by "and" or commas gives every flag of it, one of "or" the first. Nothing is read from a sentence relating
    flags ("use --x with --y"), a renamed flag ("use --y instead"), a flag whose value the message does not give, or
    a forbidden flag with a value (which value to drop is not said)."""
    out: dict[str, object] = {}
    for verb in _VERB.finditer(text[:20000]):
        end = _END.search(text, verb.end()).start()
        clause = text[verb.end():end]
        if re.search(rf"\bwith\s+{_Q}--", clause):
            continue  # "use --x with --y", "do not use --x or --y with --z": which to change is not said
        items, at = [], 0
        while True:
            item = _ITEM.match(clause, at)
            if item is None:
                break
            items.append(item)
            joined = _AND.match(clause, item.end())
            if joined is None:
                break
            at = joined.end()
        if not items:
            continue
        after = re.match(r"\s+(\w+)", clause[items[-1].end():])
        following = (items[-1].group("next") or (after.group(1) if after else "")).rstrip(".,").lower()
        if following in _SUBJECT:
            continue
        for item in items:
            setting = _setting(item, bool(verb.group("neg")), following)
            if setting is not None:
                out.setdefault(*setting)
    return out


def _setting(item: re.Match, negated: bool, following: str) -> Optional[tuple[str, object]]:
    """(destination, value) one flag of an imperative sets, or None when the message does not say."""
    flag = item.group("flag")
    dest = flag.replace("-", "_")
    switches = universe.switches()
    off = next((flag[len(p):] for p in ("no-", "disable-") if flag.startswith(p)), None)
    if off is not None and dest not in switches:  # --no-x / --disable-x: the switch x (or add_x) off
        if negated:
            return None
        name = off.replace("-", "_")
        return ("add_" + name if "add_" + name in switches or name not in switches else name), False
    if following == "instead":
        return None  # "x is deprecated; use --y instead": a flag renamed, its value unknown
    value = _value(item, dest)
    if value is None:
        return (dest, not negated) if dest in switches else None
    return None if negated else (dest, value)


def _value(item: re.Match, dest: str) -> Optional[str]:
    """The value written after the flag, where the argument's kind allows it: "=" or "to" is a value; a next word
    is one only for an argument that takes it (a number for a number, one of its choices) and never for a switch."""
    spec = universe.arguments().get(dest, {})
    for group in ("assigned", "to", "next"):
        text = (item.group(group) or "").rstrip(".,")
        if not text or text.lower() in _NOT_VALUES:
            continue
        if group == "assigned":
            return text
        if dest in universe.switches():
            return None
        if spec.get("type") in ("int", "float"):
            try:
                float(text)
            except ValueError:
                return None
            return text
        if isinstance(spec.get("choices"), list) and text not in [str(c) for c in spec["choices"]]:
            return None
        return text
    return None


__all__ = ["advised_flags"]
