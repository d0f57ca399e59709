"""A Hydra composition error about one override -> an Issue on that key, with Hydra's own advice.

A key that is missing from the tree is explained from verl's key history when another release (or
another entry point's config) has it; a key verl's config dataclass would reject gets no ``+key`` advice.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional, Sequence

from hydra.core.override_parser.types import Override
from omegaconf import DictConfig

from .. import catalog
from ..catalog import OTC, universe, verl_keys
from ..errors import Issue
from ..i18n import tr
from ..overrides import split_override
from ..resolver._history import group_option_issue, has_path, history_issue, keys_at, rejected_issue
from ..resolver._suggest import list_fix, nearest, specialized
from ..rules._base import error
from ._dataclasses import DataclassIndex
from ._types import default_types


@dataclass(frozen=True)
class KeyContext:
    """What explains a missing key: the release checked, the config composed, verl's dataclasses."""

    version: str
    config_name: str = verl_keys.BASE
    dataclasses: Optional[DataclassIndex] = None


def _value_text(override: Override) -> str:
    text = override.input_line or ""
    return text.split("=", 1)[1] if "=" in text else ""


def issue_for_failure(message: str, override: Override, base: Optional[DictConfig],
                      context: Optional[KeyContext] = None) -> Issue:
    """The issue for an override Hydra refuses; its fix (when it has one) replaces the argument, since Hydra stops
    at the argument as written whatever follows it."""
    issue = _issue_for_failure(message, override, base, context)
    return replace(issue, replaces=override.input_line or None)


def unparsable_issue(text: str, error: str, overrides: Sequence[str], at: int) -> Issue:
    """An argument Hydra's override grammar refuses (``overrides[at]``): verl stops at once, before composing. A
    value Hydra cannot lex (``~/data``, ``a b``) parses quoted; bare words after an argument are its value, split by
    the shell at its spaces (an unquoted variable): the fix quotes them back into it."""
    prefix, key, value = split_override(text)
    if "=" not in text:
        start = at
        while start > 0 and _bare(overrides[start - 1]):
            start -= 1
        end = at
        while end + 1 < len(overrides) and _bare(overrides[end + 1]):
            end += 1
        owner = overrides[start - 1] if start > 0 and "=" in overrides[start - 1] else None
        words = tuple(overrides[start:end + 1])
        joined = f"{owner} {' '.join(words)}" if owner else None
        first = at == start and joined is not None and _parses(joined)
        return Issue("error", text, tr(
            "'{arg}' is not an override (key=value): Hydra refuses the launch ({error}); a value with spaces after "
            "'{after}' that the shell split into several arguments?", arg=text, error=error,
            after=overrides[at - 1] if at else ""),
            tr("quote the variable or value in the launch script (\"$VAR\"), or delete the argument"),
            rule="hydra-parse", override=joined if first else None, replaces=owner if first else text,
            deletes=words if first else ())
    quoted = f"{prefix}{key}='{value}'" if "'" not in value else f'{prefix}{key}="{value}"'
    # a path or a name parses quoted; a broken list, dict or number does not become what was meant by quoting it
    fix = quoted if _parses(quoted) and not set(value) & set("[]{}()") and not value[:1].isdigit() else None
    return Issue("error", key, tr(
        "Hydra cannot parse the value of {key} ({error}), so verl refuses the launch before composing it",
        key=key, error=error), tr("quote the value: Hydra then reads it as one string") if fix else "",
        rule="hydra-parse", override=fix, replaces=text)


def _bare(arg: str) -> bool:
    """A word with no ``=`` and no flag or override prefix: a piece of a value the shell split off."""
    return "=" not in arg and not arg.startswith(("-", "+", "~"))


def _parses(text: str) -> bool:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        OverridesParser.create().parse_overrides([text])
        return True
    except Exception:  # noqa: BLE001 - any refusal of Hydra's grammar
        return False


def _issue_for_failure(message: str, override: Override, base: Optional[DictConfig],
                       context: Optional[KeyContext] = None) -> Issue:
    key = override.key_or_group
    value = _value_text(override)
    arg = override.input_line or key
    first = message.strip().splitlines()[0] if message.strip() else message
    if first.startswith("Ambiguous value"):
        written = override.input_line.split("=")[0]
        if not written.startswith(("+", "~")) and not set("/@") & set(written) and base is not None \
                and not _exists(base, key):
            written = "+" + written  # a key verl's config lacks: without '+' the quoted value stops Hydra again
        flag = catalog.flag(key.rpartition(".")[2], "otc") if f".{OTC}." in key else None
        typed = default_types(base, [key]) if base is not None else {}
        if flag is not None and flag.type == "str_list":  # a list key: Hydra's list, not one quoted string
            hint = tr("{key} takes a list: write it in brackets", key=key.rpartition(".")[2])
            line = f"{written}={list_fix(value, flag.choices) or '[' + value + ']'}"
        elif typed:  # a switch or a number: quoted, the values are one string verl cannot read
            hint = tr("one run takes one value: keep one of {values}", values=value)
            line = None
        else:
            hint = tr("quote the value so that the shell hands Hydra one string (Hydra's advice: key='value1,value2')")
            line = f"{written}='\"{value}\"'"
        return error(key, tr("{value} is a Hydra sweep (several runs), not one value", value=value), "hydra-sweep",
                     hint=hint, override=line)
    if "Could not find" in first or "Could not load" in first:
        return _group_issue(key, value, message, arg, context)
    if "appears more than once in the final defaults list" in first:
        return error(key, tr("'{arg}' adds a second '{key}': the config already selects one", arg=arg, key=key),
                     "hydra-append", hint=tr("Hydra: write {key}=value to change a config group's selection", key=key),
                     override=f"{key}={value}")
    if "An item is already at" in message or "Could not append" in message:
        return error(
            key, tr("'{key}' already exists, so '+' cannot add it", key=key), "hydra-append",
            hint=tr("Hydra: use key=value to override an existing key, or ++key=value to add or override"),
            override=f"++{key}={value}",
        )
    if "Could not delete" in message:
        return error(key, tr("'~{key}' removes a key that does not exist", key=key), "hydra-delete",
                     hint=tr("delete the argument '{arg}' instead", arg=arg))
    if "Could not override" in first:
        return _missing_key_issue(key, value, arg, base, context)
    return error(key, first, "hydra")


def _missing_key_issue(key: str, value: str, arg: str, base: Optional[DictConfig],
                       context: Optional[KeyContext]) -> Issue:
    parent, _, leaf = key.rpartition(".")
    if context is not None and "." not in key and verl_keys.group_options(key).get(value):
        return group_option_issue(key, value, arg, verl_keys.group_options(key)[value], context.version, [])
    if context is not None and "." in key and verl_keys.group_options(leaf).get(value):
        return error(  # a top-level choice written under a section: actor_rollout_ref.actor.model_engine=megatron
            key, tr("'{leaf}' is a top-level choice of verl's config, not a key of '{parent}'", leaf=leaf,
                    parent=parent), "unknown-key", suggestion=leaf, override=f"{leaf}={value}")
    anchor = _first_missing(base, key)
    # a key of override_transformer_config is free-form; a missing section above it (no megatron section at all)
    # is explained like any other key
    if context is not None and f".{OTC}." not in f".{anchor}.":
        explained = verl_keys.explain(anchor, context.version, context.config_name)
        if explained is not None:
            return history_issue(key, value, arg, explained, context.version, context.config_name,
                                 exists=lambda path: _exists(base, path))
        if base is not None and context.dataclasses is not None:
            verdict = context.dataclasses.verdict(base, key)
            if verdict.kind == "rejected":
                return rejected_issue(key, arg, verdict, context.version, _keys_at(base, verdict.at.rpartition(".")[0]),
                                      hydra=True, cfg=base)
    fixed_path = _fixed_section(base, key, anchor)
    if fixed_path is not None:  # a misspelt section on the way: actor_rollout_ref.actr.megatron.x
        wrong = anchor.rpartition(".")[2]
        right = fixed_path[len(anchor.rpartition(".")[0]):].lstrip(".").split(".")[0]
        return error(key, tr("unknown key '{leaf}'; did you mean '{near}'?", leaf=wrong, near=right), "unknown-key",
                     suggestion=fixed_path, override=f"{fixed_path}={value}")
    siblings = _keys_at(base, parent)
    near = nearest(leaf, siblings) if siblings else None
    if parent.endswith(OTC):
        near = near or nearest(leaf, universe.known_otc_keys())
        if leaf in universe.known_otc_keys():
            return error(
                key, tr("'{leaf}' is not in verl's default override_transformer_config, so it needs '+'", leaf=leaf),
                "hydra-missing-plus", hint=tr("Hydra: to append to your config use +key=value"),
                override=f"+{key}={value}",
            )
    if near and near != leaf:
        fixed = f"{parent}.{near}" if parent else near
        return error(
            key, tr("unknown key '{leaf}'; did you mean '{near}'?", leaf=leaf, near=near), "unknown-key",
            suggestion=fixed, override=(f"{fixed}={value}" if near in siblings else f"+{fixed}={value}"),
        )
    split = specialized(leaf, siblings)
    if split:  # the key without the qualifier the section splits it by: each of them, with the value
        return error(key, tr("unknown key '{leaf}'; verl's '{parent}' has it per use: {keys}", leaf=leaf,
                             parent=parent, keys=", ".join(split)), "unknown-key",
                     override=" ".join(f"{parent}.{k}={value}" for k in split))
    return error(
        key, tr("'{key}' is not in verl's config", key=key), "hydra-missing-plus",
        hint=tr("Hydra: to append to your config use +key=value (check the spelling first: verl may reject it later)"),
        override=f"+{key}={value}",
    )


def _fixed_section(base: Optional[DictConfig], key: str, anchor: str) -> Optional[str]:
    """``key`` with its first missing section (``anchor``, above the leaf) replaced by the nearest existing one,
    when the whole corrected path exists."""
    if base is None or anchor == key or not key.startswith(anchor + "."):
        return None
    parent, _, wrong = anchor.rpartition(".")
    near = nearest(wrong, _keys_at(base, parent))
    if near is None:
        return None
    fixed = f"{parent}.{near}{key[len(anchor):]}" if parent else f"{near}{key[len(anchor):]}"
    return fixed if _exists(base, fixed) else None


def _first_missing(base: Optional[DictConfig], key: str) -> str:
    """The shortest prefix of ``key`` that ``base`` lacks (the key itself when ``base`` is unknown)."""
    if base is None:
        return key
    parts = key.split(".")
    for n in range(1, len(parts) + 1):
        head = ".".join(parts[:n])
        if not _exists(base, head):
            return head
    return key


def _exists(base: Optional[DictConfig], path: str) -> bool:
    return base is not None and has_path(base, path)


def _keys_at(base: Optional[DictConfig], parent: str) -> list[str]:
    return [] if base is None else keys_at(base, parent)


def _group_issue(key: str, value: str, message: str, arg: str, context: Optional[KeyContext]) -> Issue:
    options = [line.strip() for line in message.splitlines() if line.startswith("\t") and "=" not in line]
    options = [o for o in options if o and not o.startswith("provider")]
    if context is not None:
        releases = verl_keys.group_options(key).get(value)
        if releases:
            return group_option_issue(key, value, arg, releases, context.version, options)
    near = nearest(value, options) if options else None
    hint = tr("available: {options}", options=", ".join(options)) if options else ""
    if near:
        text = tr("no config '{value}' in group '{group}'; did you mean '{near}'?", value=value, group=key, near=near)
    else:
        text = tr("no config '{value}' in group '{group}'", value=value, group=key)
    prefix = split_override(arg)[0] if arg.startswith("+") else ""
    return error(key, text, "hydra-group", hint=hint, suggestion=key if near else None,
                 override=f"{prefix}{key}={near}" if near else None)
