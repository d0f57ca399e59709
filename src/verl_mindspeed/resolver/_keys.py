"""Unknown keys: typos become errors with "did you mean", far-off keys warnings (errors with --strict).

Three places: MindSpeed's dict (``override_transformer_config``, checked against the MindSpeed/Megatron
universe), the keys directly under ``<role>.megatron`` (verl's engine config), and every key a launch
adds with ``+``/``++`` elsewhere, judged the way verl's dataclass conversion judges it and explained from
verl's key history when another release has the key (:func:`check_added_keys`).
"""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence

from .. import catalog
from ..catalog import universe, verl_keys
from ..errors import Issue
from ..i18n import tr
from ..overrides import split_override
from ..rules._base import error, fmt, note, warning
from ._history import has_path, history_issue, keys_at, rejected_issue
from ._suggest import nearest, specialized

#: How to have MindSpeed itself judge a switch no hand rule covers.
UNCHECKED_HINT = tr("verl-mindspeed check --upstream runs MindSpeed's own checks on it here, before any worker starts")


def check_otc_keys(prefix: str, raw: dict[str, Any], *, strict: bool, stack: Any = None,
                   refused: bool = False) -> list[Issue]:
    """``refused``: the role's bridge refuses a key its provider lacks (Megatron-Bridge 0.5+), so a far-off key is
    that rule's error (``bridge-refuses-unknown``), not a warning here."""
    known = universe.known_otc_keys()
    preferred = [f.name for f in catalog.flags("otc")]
    issues = []
    for name, _value in raw.items():
        if name in known:
            if stack is not None:
                issues += _other_line_field(prefix, name, stack)
            continue
        path = f"{prefix}.{catalog.OTC}.{name}"
        near = nearest(name, known, preferred)
        if near is not None:
            issues.append(error(
                path, tr("unknown key '{name}'; did you mean '{near}'?", name=name, near=near), "unknown-key",
                hint=tr("MindSpeed and Megatron would never read '{name}'", name=name),
                suggestion=f"{prefix}.{catalog.OTC}.{near}",
            ))
        elif not refused:
            make = error if strict else warning
            issues.append(make(
                path, tr("'{name}' is not a MindSpeed, Megatron-LM or TransformerConfig option; passed through as is",
                         name=name),
                "unknown-key", hint=tr("check the spelling, or ignore if a newer release added it"),
            ))
    return issues


def _other_line_field(prefix: str, name: str, stack: Any) -> list[Issue]:
    """A key that is a config field of another megatron-core line only: known, and nothing reads it on this stack
    (an error where the Megatron-Bridge provider refuses it: ``rules/stack.py``)."""
    from ..stack import line_fields, lines_with_field

    fields = line_fields(stack.megatron_core)
    if not fields or name in fields or name in universe.mindspeed_args(stack.mindspeed) \
            or name in universe.megatron_training_args() or catalog.flag(name, "otc") or name in catalog.aliases():
        return []
    lines = lines_with_field(name)
    if not lines:
        return []
    return [warning(f"{prefix}.{catalog.OTC}.{name}", tr(
        "'{name}' is a TransformerConfig field of megatron-core {lines}, not of megatron-core {core} on this stack: "
        "nothing reads it there", name=name, lines=", ".join(lines), core=stack.megatron_core), "field-of-another-line",
        hint=tr("check the stack your cluster runs (--megatron-core, --mindspeed-release), or drop the key"))]


def uncovered_switches(prefix: str, otc: dict[str, Any], explicit: Iterable[str], release: str) -> list[Issue]:
    """MindSpeed switches outside the feature guide whose own checks no rule here mirrors (no rule ``covers`` them),
    set by the user: said as a note, since MindSpeed's own checks on them run only inside each worker."""
    from ..rules import covered_switches

    args, (fields, _) = universe.mindspeed_args(release), universe.transformer_config_fields()
    covered = covered_switches()
    out = []
    for name in sorted(explicit):
        spec, value = args.get(name), otc.get(name)
        if spec is None or name in fields or catalog.flag(name, "otc") or name in covered:
            continue
        if value in (None, False, "") or value == spec.get("default"):
            continue
        out.append(note(f"{prefix}.{catalog.OTC}.{name}", tr(
            "{name}={value} is a MindSpeed {release} switch outside the feature guide that no check here covers: "
            "MindSpeed's own checks on it run only inside each worker", name=name, value=fmt(value),
            release=release), "no-hand-rule", hint=UNCHECKED_HINT))
    return out


def check_megatron_keys(prefix: str, megatron: dict[str, Any], known: Iterable[str]) -> list[Issue]:
    """Keys directly under ``<role>.megatron``: verl's dataclass conversion rejects unknown ones later."""
    known = set(known)
    otc_keys = universe.known_otc_keys()
    issues = []
    for name, value in megatron.items():
        if name in known or name == catalog.OTC:
            continue
        path = f"{prefix}.{name}"
        near = nearest(name, known)
        if near is not None:
            issues.append(error(
                path, tr("unknown key '{name}'; did you mean '{near}'?", name=name, near=near), "unknown-megatron-key",
                hint=tr("verl fails when it turns this section into McoreEngineConfig"), suggestion=f"{prefix}.{near}",
            ))
        elif name in otc_keys:
            target = f"{prefix}.{catalog.OTC}.{name}"
            issues.append(error(
                path, tr("'{name}' belongs in override_transformer_config, not directly under megatron", name=name),
                "unknown-megatron-key", hint=tr("write +{target}={value}", target=target, value=fmt(value)),
                suggestion=target,
            ))
        else:
            issues.append(error(
                path, tr("'{name}' is not a setting of verl's megatron engine config", name=name),
                "unknown-megatron-key",
                hint=tr("verl fails when it turns this section into McoreEngineConfig; the key may belong to "
                        "another verl version"),
            ))
    return issues


def added_keys(argv: Sequence[str]) -> list[tuple[str, str, str, str]]:
    """(prefix, key, value, argument) of every ``+key=value``/``++key=value`` override of a launch argv."""
    out = []
    for arg in argv:
        prefix, key, value = split_override(arg)
        if prefix in ("+", "++") and "=" in arg and "." in key:
            out.append((prefix, key, value, arg))
    return out


def check_added_keys(cfg: Any, argv: Sequence[str], tree: Any) -> list[Issue]:
    """``+``/``++`` keys Hydra accepted that verl would reject (its config dataclass has no such field) or that
    belong to another verl release; MindSpeed's dict is left to :func:`check_otc_keys`."""
    index = getattr(tree, "dataclasses", None)
    version = getattr(tree, "version", "")
    config_name = getattr(tree, "config_name", None) or verl_keys.BASE
    if index is None or cfg is None:
        return []
    user_paths = frozenset(split_override(a)[1] for a in argv if not a.startswith("-"))
    issues = []
    for prefix, key, value, arg in added_keys(argv):
        if f".{catalog.OTC}." in f".{key}." and not key.endswith(f".{catalog.OTC}"):
            continue
        if not has_path(cfg, key):
            continue  # a later '~key' deleted it: verl never sees it
        verdict = index.verdict(cfg, key, user_paths)
        if verdict.kind == "rejected":
            why = verl_keys.explain(verdict.at, version, config_name)
            if why is not None:
                issues.append(history_issue(key, value, arg, why, version, config_name,
                                            exists=lambda p: has_path(cfg, p)))
            else:
                siblings = keys_at(cfg, verdict.at.rpartition('.')[0])
                issues.append(rejected_issue(key, arg, verdict, version, siblings, cfg=cfg))
        elif verdict.kind == "plain":
            anchor = _first_unknown(key, version, prefix, config_name)
            why = verl_keys.explain(anchor, version, config_name) if anchor else None
            if why is not None and why.kind != "config":
                issues.append(history_issue(key, value, arg, why, version, config_name,
                                            exists=lambda p: has_path(cfg, p)))
            elif prefix == "+":
                issues += _near_sibling(cfg, key, value, user_paths)
    return issues


def _near_sibling(cfg: Any, key: str, value: str, user_paths: frozenset[str]) -> list[Issue]:
    """A ``+key`` in a section verl reads without a dataclass (``data``, ``trainer``) is accepted and usually
    ignored, so one that looks like a typo of a key already there is worth a warning."""
    parent, _, leaf = key.rpartition(".")
    siblings = [s for s in keys_at(cfg, parent) if f"{parent}.{s}" not in user_paths]
    near = nearest(leaf, siblings)
    split = specialized(leaf, siblings) if near is None else ()
    if split:  # the key without the qualifier the section splits it by: each of them, with the value
        return [warning(key, tr("'{leaf}' is not a key of verl's '{parent}' section (verl does not read it); it "
                                "has it per use: {keys}", leaf=leaf, parent=parent, keys=", ".join(split)),
                        "unknown-key", override=" ".join([f"~{key}", *(f"{parent}.{k}={value}" for k in split)]))]
    if near is None:
        return []
    fixed = f"{parent}.{near}"
    return [warning(key, tr("'{leaf}' is not a key of verl's '{parent}' section (verl does not read it); "
                            "did you mean '{near}'?",
                            leaf=leaf, parent=parent, near=near), "unknown-key", suggestion=fixed,
                    override=f"{fixed}={value}")]


def _first_unknown(key: str, version: str, prefix: str, config_name: str) -> Optional[str]:
    """The shortest prefix of ``key`` the release's config lacks; None when that cannot be known."""
    if version not in verl_keys.releases():
        return key if prefix == "+" else None
    parts = key.split(".")
    for n in range(1, len(parts) + 1):
        head = ".".join(parts[:n])
        if version not in verl_keys.base_releases(head) + verl_keys.config_releases(config_name, head):
            return head
    return None


