"""The last pass over a launch's issues: keys verl would reject, one issue per missing engine, pasteable fixes,
and the file:line of each argument.

``launch.resolve_launch`` calls :func:`review` once every issue is known (composition, model, resolver).
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from typing import Any, Iterable, Optional, Sequence

from ..errors import Issue, Location
from ..i18n import tr
from ..overrides import shell_word, split_override
from ._history import DROP_RULES, group, occupied
from ._keys import check_added_keys
from ._suggest import value_fix


def review(issues: Sequence[Issue], cfg: Any, argv: Sequence[str], tree: Any = None,
           locations: Optional[Sequence[Optional[Location]]] = None) -> list[Issue]:
    """``issues`` with the ``+``/``++`` keys verl's dataclasses would reject added (replacing the resolver's own
    ``unknown-megatron-key`` on the same key), engine/entry issues merged, fixes completed, locations set."""
    out = list(issues)
    if tree is not None and cfg is not None:
        added = check_added_keys(cfg, argv, tree)
        explained = {i.key for i in added}
        out = [i for i in out if not (i.rule == "unknown-megatron-key" and i.key in explained)]
        have = {(i.key, i.rule) for i in out}
        out = [*(i for i in added if (i.key, i.rule) not in have), *out]
    out = [_verl_default(i, argv) for i in out]
    by_key = _args_by_key(argv)
    out = group(out, by_key)
    out = _follow_actor(_fix(i, cfg, argv) for i in out)
    out = [_deletion(i, argv, by_key) for i in out]
    if locations:
        out = [_locate(i, argv, locations) for i in out]
    return out


#: Errors whose fix is to delete the argument: a key the release lacks (or has elsewhere), a key verl's dataclass
#: refuses, a word Hydra cannot read as an override. Not an engine another release has: without its arguments the
#: launch runs verl's default engine, another launch.
DELETE_RULES = (DROP_RULES | {"hydra-parse"}) - {"verl-engine-other-release"}


def _deletion(issue: Issue, argv: Sequence[str], by_key: dict[str, str]) -> Issue:
    """An error with no line to paste whose fix is to delete its argument(s): those arguments, as the fix."""
    if issue.severity != "error" or issue.override or issue.deletes or issue.rule not in DELETE_RULES:
        return issue
    found = issue.replaces if issue.replaces in argv else by_key.get(issue.key)
    return replace(issue, deletes=(found,)) if found else issue


def _verl_default(issue: Issue, argv: Sequence[str]) -> Issue:
    """A bad value no argument writes is verl's own default (verl 0.5.0's ref YAML has the string ``None`` for a
    size it never reads): every launch of that release has it and ran, so it is a warning, not the launch's error."""
    if issue.rule != "value" or issue.severity != "error":
        return issue
    for arg in argv:
        key = split_override(arg)[1]
        if "=" in arg and (key == issue.key or issue.key.startswith(key + ".") or key == "mindspeed"):
            return issue
    return replace(issue, severity="warning", rule="value-verl-default", override=None, message=tr(
        "{message}: verl's own default, which the launch does not write", message=issue.message))


def _args_by_key(argv: Sequence[str]) -> dict[str, str]:
    return {split_override(a)[1]: a for a in argv if not a.startswith("-")}


def suggested_line(issue: Issue, argv: Iterable[str]) -> Optional[str]:
    """The user's argument for ``issue.key`` under the suggested key, or ``None`` without a suggestion.

    A ``+``/``++`` key renamed by a suggestion is deleted first (``~typo ++right=v``): pasted at the end of the
    launch as printed, Hydra applies the overrides in order, so the typo is gone and the right key set (``++``:
    it may exist already, where ``+`` fails). An argument without ``+`` is one Hydra itself refuses (its key
    does not exist), so no appended line helps: the fix is the argument to write in its place.
    """
    if not issue.suggestion:
        return None
    for arg in argv:
        prefix, key, value = split_override(arg)
        if key == issue.key and "=" in arg and not prefix.startswith("~"):
            if prefix and issue.suggestion != key:
                return f"~{key} ++{issue.suggestion}={value}"
            return f"{prefix}{issue.suggestion}={value}"
    return None


def _fix(issue: Issue, cfg: Any, argv: Sequence[str]) -> Issue:
    override = issue.override or suggested_line(issue, argv)
    if override is None and issue.rule == "value":
        override = value_fix(issue.key, argv)
    if override and override.startswith("+") and not override.startswith("++") and "." in override.partition("=")[0] \
            and _exists(cfg, override[1:]):
        override = "+" + override  # a preset (or the YAML) already set it: '+' would fail, '++' replaces
    if override and "='" in override:  # a value Hydra must see quoted ('0,7' is a sweep bare): keep the quotes
        override = " ".join(_hydra_quoted(word) for word in override.split(" "))
    elif override and not _one_shell_word(override):
        override = shlex.quote(override)  # a value such as [8, 16] stays one argument when pasted into a script
    return issue if override == issue.override else replace(issue, override=override)


def _hydra_quoted(word: str) -> str:
    """A word whose value Hydra must see quoted, quoted for the shell: in double quotes where the shell would change
    nothing inside them, else as ``shlex`` quotes it (a ``${...}`` the shell would expand)."""
    if "='" not in word or '"' in word:  # no quote for Hydra, or one already written for the shell
        return word
    return shell_word(word)


#: Rules whose fix aligns a size on the actor's engine (the other roles, or the actor's own dict), so that it
#: follows a fix of that engine size in the same report.
ALIGN_ON_ACTOR = frozenset({"role-sizes-agree", "legacy-critic-groups", "dict-sizes-agree"})
ACTOR = "actor_rollout_ref.actor.megatron."


def _follow_actor(issues: Iterable[Issue]) -> list[Issue]:
    """Fixes of one report that agree when pasted together: where another issue fixes an actor size, a fix that
    aligns on the actor (the other roles, or the actor's own dict) proposes that fixed size, not the one the actor
    has now. Only an error's fix counts: a warning's (mbridge with VPP) is advice the user may not take, and the
    sizes aligned on it would then disagree again."""
    out = list(issues)
    fixed: dict[str, str] = {}
    for issue in out:
        if issue.rule in ALIGN_ON_ACTOR or not issue.override or issue.severity != "error":
            continue
        for word in _words(issue.override):
            key, _, value = word.lstrip("+").partition("=")
            if key.startswith(ACTOR) and "." not in key[len(ACTOR):]:
                fixed[key[len(ACTOR):]] = value
    if not fixed:
        return out

    def follow(word: str) -> str:
        head, _, value = word.partition("=")
        name = head.rpartition(".")[2]
        return f"{head}={fixed[name]}" if name in fixed and ".megatron." in head else word

    for n, issue in enumerate(out):
        if issue.rule in ALIGN_ON_ACTOR and issue.override:
            words = _words(issue.override)
            followed = [follow(w) for w in words]
            if followed != words:
                out[n] = replace(issue, override=" ".join(followed))
    return out


def _words(override: str) -> list[str]:
    try:
        return shlex.split(override)
    except ValueError:
        return [override]


def _one_shell_word(text: str) -> bool:
    """Whether the shell splits ``text`` into whole overrides (one, or several a rule asks for together)."""
    try:
        words = shlex.split(text)
    except ValueError:
        return False
    return bool(words) and all(" " not in w.partition("=")[0] and ("=" in w or w.startswith("~")) for w in words)


def _exists(cfg: Any, override: str) -> bool:
    key = override.partition("=")[0]
    return cfg is not None and bool(key) and occupied(cfg, key)


def _locate(issue: Issue, argv: Sequence[str], locations: Sequence[Optional[Location]]) -> Issue:
    if issue.location is not None:
        return issue
    pairs = list(zip(argv, locations))
    if issue.replaces:  # the very argument (a key written twice has two issues, each at its own line)
        where = next((where for arg, where in pairs if arg == issue.replaces and where is not None), None)
        if where is not None:
            return replace(issue, location=where)
    for arg, where in reversed(pairs):
        if where is None:
            continue
        if arg.startswith("-"):
            if issue.key.startswith("-") and arg.partition("=")[0] == issue.key:
                return replace(issue, location=where)
            continue
        if split_override(arg)[1] == issue.key:
            return replace(issue, location=where)
    return issue


__all__ = ["review", "suggested_line"]
