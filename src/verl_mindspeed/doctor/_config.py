"""A config key refused or missing: Hydra refused the launch's override, or verl's code touched a key the config
lacks.

- Hydra refused an override (``Could not override 'k'``): ``check`` on that argument gives the fix (a near miss,
  the ``+`` form of a field verl's dataclass has). When the verl the checks read has the key and ``check`` finds
  nothing wrong with it, the release that ran predates (or follows) the releases that have it: the argument is
  deleted, and the message names those releases. When every release here has it, the config the run composed was
  not verl's own: Hydra's ``+`` line adds it (a deletion would lose the value).
- Hydra's messages name the key (``hydra_key``), the argument as written ("To append to your config use +k=v",
  in any exception of the log: ``appended``) and, for a ``+`` on a key the config has, its own advice
  (``hydra_advice``).
- Hydra's own advice for a ``+`` on a key the config has ("Either remove + prefix: 'k=v'") is the fix.
- verl's own code wrote a key into a struct-mode config: verl's bug, no launch key (a verl fix or release).
- verl's own code read a key the config lacks (or a bare ``Key 'k' is not in struct``, which no override caused):
  the launch adds it, with the value verl's own config gives it in the release the checks read.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from ..catalog import verl_keys
from ..i18n import Msg, tr
from ..overrides import hydra_value
from ._blame import Cause, Verdict
from ._log import Raised, clean
from ._replay import Replay, clears, replay
from ._sites import Match
from ._stack import unexpected_field
from ._verl import default, release, releases_with

_OVERRIDES = re.compile(r"Error executing job with overrides: (?P<list>\[.*\])\s*$")
_OPENED = re.compile(r"Error executing job with overrides: \[(?P<items>.*)")
#: One item of Python's repr of a list of strings: single-quoted, or double-quoted where it holds a single quote.
_ITEM = re.compile(r"'((?:[^'\\]|\\.)*)'" r'|"((?:[^"\\]|\\.)*)"')


def logged_launch(text: str) -> Optional[list[str]]:
    """The overrides Hydra printed when the job failed (``Error executing job with overrides: [...]``): the
    launch's own arguments, when the list is whole (a cut list would replay defaults in place of what it lost)."""
    if "Error executing job with overrides" not in text:
        return None  # most logs: no second pass over every line
    for _stream, line, _number in clean(text):
        hit = _OVERRIDES.search(line)
        if hit is None:
            continue
        if len(hit.group("list")) > 200_000:
            return None
        try:
            value = ast.literal_eval(hit.group("list"))
        except Exception:  # noqa: BLE001 - any list Python cannot read (nesting, size) is no launch
            return None
        return [str(v) for v in value] if isinstance(value, list) and all(isinstance(v, str) for v in value) else None
    return None


def logged_arguments(text: str) -> dict[str, str]:
    """key -> the argument as written, for each item Hydra's override list shows whole, even where the list itself
    is cut: too little to replay, enough to know what the user wrote for a key the failure names."""
    if "Error executing job with overrides" not in text:
        return {}
    out: dict[str, str] = {}
    for _stream, line, _number in clean(text):
        hit = _OPENED.search(line)
        if hit is None:
            continue
        for item in _ITEM.finditer(hit.group("items")[:200_000]):
            arg = item.group(1) if item.group(1) is not None else item.group(2)
            key = arg.split("=", 1)[0].lstrip("+~")
            if "=" in arg and re.fullmatch(r"[\w.@/-]+", key):
                out.setdefault(key, arg)
    return out


_HYDRA_KEY = re.compile(r"(?:Could not override|Key|An item is already at|Could not delete from config\.|"
                        r"Could not append to config\. An item is already at) '(?P<key>[\w.@/-]+)'"
                        r"|Missing mandatory value:? '?(?P<missing>[\w.@/-]+)")
_APPEND = re.compile(r"To append to your config use \+(?P<arg>\S+)")
#: Hydra's advice for a '+' on a key the config has: its line without the '+' is the fix.
_NO_PLUS = re.compile(r"Either remove \+ prefix: '(?P<line>[^\n…]+=[^\n…]*)'[ \t]*$|"
                      r"Or add a second \+ to add or override '(?P<key>[\w.@/-]+)': '\+\+(?P<forced>[^\n]+)'[ \t]*$",
                      re.M)

def hydra_advice(raised: Raised) -> Optional[tuple[str, str]]:
    """(key, line) where Hydra's own message gives the fix: a '+' on a key the config already has ("Either remove
    + prefix: 'k=v'"), the line without it."""
    for hit in _NO_PLUS.finditer(raised.message):
        line = hit.group("line") or hit.group("forced")
        return line.split("=", 1)[0], line
    return None


def appended(found: list[Raised]) -> dict[str, str]:
    """key -> the argument the user wrote, as Hydra's "To append to your config use +k=v" line shows it (without the
    '+' the advice adds), in any exception of the log (with HYDRA_FULL_ERROR the root is OmegaConf's and the argument
    is in the chained one)."""
    return {key: arg for r in found for hit in _APPEND.finditer(r.message) for arg in [hit.group("arg").lstrip("+")]
            for key in [arg.split("=", 1)[0]] if "=" in arg and re.fullmatch(r"[\w.@/-]+", key)}


def hydra_key(raised: Raised, found: Optional[Match]) -> Optional[tuple[str, Optional[str]]]:
    """(key, the argument as the user wrote it) of a Hydra composition failure."""
    bound = found.bound if found else {}
    key = bound.get("override.key_or_group") or bound.get("key")
    hit = _HYDRA_KEY.search(raised.message)
    key = key or (hit.group("key") or hit.group("missing") if hit else None)
    advice = hydra_advice(raised)
    key = key or (advice[0] if advice else None) or unexpected_field(raised)
    if not key or not re.fullmatch(r"[\w.@/+~-]+", key):
        return None
    append = _APPEND.search(raised.message)  # the advice adds a '+' to the argument the user wrote
    arg = append.group("arg").lstrip("+") if append else (bound.get("override.input_line") or "").split(" ")[0] or None
    return key.lstrip("+~"), arg


#: Hydra's words for an override it refused (as opposed to code reading or writing a key).
_REFUSED = ("Could not override", "Could not append", "Could not delete")


def refused_override(message: str) -> bool:
    return any(word in message for word in _REFUSED)


_STRUCT = re.compile(r"Key '(?P<key>[\w@/-]+)' is not in struct")


def parent_missing(raised: Raised, key: str) -> Optional[str]:
    """The section of ``key`` the composed config lacks (``Key 'megatron' is not in struct`` for
    ``actor_rollout_ref.actor.megatron.x``): the run composed another config than the one that has the key."""
    hit = _STRUCT.search(raised.message)
    parts = key.split(".")
    if hit and hit.group("key") in parts[:-1]:
        return ".".join(parts[:parts.index(hit.group("key")) + 1])
    return None


def refused(key: str, arg: Optional[str], what: Msg, launch: Optional[Replay], options: dict,
            by_override: bool = True, missing: bool = False, parent: Optional[str] = None,
            dataclass: bool = False) -> Verdict:
    """A key Hydra refused (``by_override``) or found missing (absent; ``missing``: present, with no value, which
    verl's config tree is probed with as it is; ``parent``: the section the composed config lacks; ``dataclass``:
    a config dataclass refused it): ``check`` gives the fix, else verl's config does."""
    if parent is not None and releases_with(key) and (launch is None or not launch.about([key])):
        return Verdict("override", tr(
            "{what}: the config the run composed has no {parent}, and verl's Megatron trainer config has {key}: the "
            "run composed another config (verl's FSDP ppo_trainer, the default); add --config-name=ppo_megatron_"
            "trainer", what=what, parent=parent, key=key),
            [Cause("--config-name", "--config-name=ppo_megatron_trainer")], ("config-name",), "likely")
    probe, unknown = launch, False
    if launch is None or not launch.about([key]):
        unknown = not (arg and "=" in arg)  # the value written is not in the log: probed with null
        written = arg if not unknown else f"++{key}=null"
        probe = replay(["--config-name=ppo_megatron_trainer", *([] if missing else [written])], None,
                       **_tree_options(options))
    found = probe.about([key]) if probe else []
    issue = found[0] if found else None
    if issue is None and missing:  # a '???' the launch left: only a rule of check gives a value
        return Verdict("override", tr("{what}: {key} has no value ('???' in verl's config): set it", what=what,
                                      key=key), [Cause(key)], (key.rsplit(".", 1)[-1],), "likely")
    if issue is None and dataclass:  # the section has it and the release's dataclass has no such field
        return Verdict("override", tr("{what}: the verl release that ran converts the section into a class without "
                                      "{key}: delete the argument", what=what, key=key),
                       [Cause(key, delete=True)], (key.rsplit(".", 1)[-1],), "likely")
    if issue is None:
        known = _known(key, arg, what, options, by_override)
        if known is not None:
            return known
    confirmed = bool(issue and launch is not None and probe is launch and clears(launch, issue, **options))
    fix = issue.override if issue else None
    delete = bool(issue and not fix and issue.deletes)
    if unknown and not missing and fix and fix.endswith("=null"):  # check's line carries the probe's value, not the
        fix, delete = None, True  # launch's: the argument goes
    if issue is not None:  # check's words say what the key is (a near miss, a release's field)
        what = tr("{what}: {check}", what=what, check=issue.message)
    return Verdict("override", what, [Cause(key, fix, confirmed, delete)], (key.rsplit(".", 1)[-1],),
                   "confirmed" if confirmed else "likely")


def _known(key: str, arg: Optional[str], what: Msg, options: dict, by_override: bool) -> Optional[Verdict]:
    """The verdict when the verl the checks read has ``key``: the release that ran does not, or (every release has
    it) the config the run composed was not verl's own."""
    version = options.get("verl_version")
    have = releases_with(key)
    if not have or (version and version in have):
        return None  # the release named by --verl-version has it too: nothing to tell from the releases
    span = verl_keys.span(have)
    if by_override and set(have) == set(verl_keys.releases()):  # no release lacks it: Hydra's '+' line adds it
        line = "+" + arg.lstrip("+") if arg and "=" in arg else None
        return Verdict("override", tr(
            "{what}: every verl release here ({span}) has {key}, so the config the run composed was not verl's own: "
            "Hydra's line with '+' adds it", what=what, span=span, key=key), [Cause(key, line)],
            (key.rsplit(".", 1)[-1],), "possible")
    if by_override:
        return Verdict("override", tr(
            "{what}: verl {span} have {key}; the release that ran does not: delete the argument (or run one of those "
            "releases)", what=what, span=span, key=key), [Cause(key, delete=True)], (key.rsplit(".", 1)[-1],),
            "likely")
    return added(key, what, None, options)


def added(key: str, what: Msg, function: Optional[str], options: dict) -> Verdict:
    """A key verl's code reads (``function``, when the frames say which) and the config of the release that ran
    lacks: add it with the value verl's own config gives it."""
    value = default(key, options.get("verl_version"))
    have = releases_with(key)
    reader = tr("verl's {function}", function=function) if function else tr("verl's code")
    text = tr("{what}: {reader} reads {key}, which the config of the release that ran lacks: add it", what=what,
              reader=reader, key=key)
    if have:
        text = tr("{text}; the verl releases whose config has it: {span}", text=text, span=verl_keys.span(have))
    if value is not None:
        text = tr("{text}; verl {release} gives it {value}", text=text, release=release(options.get("verl_version")),
                  value=hydra_value(value))
    fix = f"+{key}={hydra_value(value)}" if value is not None else None
    return Verdict("override", text, [Cause(key, fix)], (key.rsplit(".", 1)[-1],), "likely" if fix else "possible")


def accessed(key: str, function: str, writes: bool, what: Msg, options: dict) -> Verdict:
    """The verdict on a key verl's own code wrote (its bug) or read (one the launch can add)."""
    if writes:
        return Verdict("upstream", tr("{what}: verl's {function} writes {key} into a config that takes no new keys "
                                      "(struct mode): verl's own code, no launch key; a verl fix or release",
                                      what=what, function=function, key=key))
    return added(key, what, function, options)


def _tree_options(options: dict) -> dict:
    return {k: v for k, v in options.items() if k in ("verl_version", "verl_config_dir", "verl_source")}


__all__ = ["accessed", "added", "appended", "hydra_advice", "hydra_key", "logged_arguments", "logged_launch",
           "parent_missing", "refused", "refused_override"]
