"""Issues for keys the checked verl release does not have, explained from verl's key history.

Such a key is always an error and never gets ``+key`` advice: verl's YAML does not have it, and verl's
config dataclass (``verl/utils/config.py``, ``omega_conf_to_dataclass``) would reject it or nothing
would read it. The fix says what to do instead: delete the argument (``~key`` fails on a key that does
not exist), write the key where it moved, or check against the release it belongs to.

The keys of one missing engine or entry point (``model_engine=mindspeed`` and its
``actor_rollout_ref.actor.mindspeed.*``) become one issue, not one per argument (:func:`group`).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

from omegaconf import DictConfig

from ..catalog import verl_keys
from ..catalog.verl_keys import Explanation
from ..errors import Issue
from ..i18n import Msg, tr
from ..rules._base import error
from ._suggest import nearest

RULE_MOVED = "verl-key-moved"
RULE_REMOVED = "verl-key-removed"
RULE_ADDED = "verl-key-added"
RULE_ELSEWHERE = "verl-key-other-release"
RULE_CONFIG = "verl-key-other-config"
RULE_VARIANT = "verl-engine-other-release"
RULE_SELECT = "verl-engine-not-selected"
RULE_ENTRY = "verl-entry-config"
RULE_REJECTED = "verl-dataclass-rejects"
#: Rules whose fix is to delete the argument (there is no override to paste).
DROP_RULES = frozenset({RULE_REMOVED, RULE_ADDED, RULE_ELSEWHERE, RULE_CONFIG, RULE_VARIANT, RULE_ENTRY,
                        RULE_REJECTED, RULE_SELECT})

#: What a config variant of the index is, for messages.
VARIANTS = {"model_engine=mindspeed": tr("verl's MindSpeed-LLM engine")}


def _drop(arg: str) -> Msg:
    return tr("delete the argument '{arg}' (a '~' removal fails too: the key does not exist)", arg=arg)


def history_issue(key: str, value: str, arg: str, why: Explanation, version: str, config_name: str,
                  exists: Callable[[str], bool]) -> Issue:
    """The error for ``key`` (given as the argument ``arg``), which verl ``version`` lacks for reason ``why``."""
    releases = verl_keys.span(why.releases) if why.releases else ""
    if why.kind == "moved":
        target = why.target + key[len(why.anchor):]
        line = f"{target}={value}" if exists(target) else f"++{target}={value}"
        return error(key, tr("verl {version} has no '{key}': it moved to '{target}' in verl {since}",
                             version=version, key=key, target=target, since=why.since), RULE_MOVED,
                     hint=tr("verl {since} and later read it at the new place; for verl {last} and older keep the old "
                             "key (check with --verl-version {last})", since=why.since,
                             last=why.releases[-1] if why.releases else "?"),
                     suggestion=target, override=line)
    if why.kind == "removed":
        message = tr("verl {version} has no '{key}': it exists in verl {releases} and was removed after {last}",
                     version=version, key=key, releases=releases, last=why.since)
        hint = tr("{drop}; or check and run with verl {last} (--verl-version {last})", drop=_drop(arg), last=why.since)
        return error(key, message, RULE_REMOVED, hint=hint)
    if why.kind == "added":
        message = tr("verl {version} has no '{key}': it was added in verl {first}",
                     version=version, key=key, first=why.since)
        hint = tr("{drop}; or check and run with verl {first} or later (--verl-version {first})",
                  drop=_drop(arg), first=why.since)
        return error(key, message, RULE_ADDED, hint=hint)
    if why.kind == "config":
        message = tr("verl {version} has '{key}' in {base}, not in the config checked ({config})",
                     version=version, key=key, base=verl_keys.BASE, config=config_name)
        hint = tr("{drop}; or compose the Megatron trainer config (--config-name={base})", drop=_drop(arg),
                  base=verl_keys.BASE)
        return error(key, message, RULE_CONFIG, hint=hint)
    if why.kind == "variant":
        about = VARIANTS.get(why.label, why.label)
        message = tr("'{key}' belongs to {about} ({label}), which exists in verl {releases}, not in verl {version}",
                     key=key, about=about, label=why.label, releases=releases, version=version)
        return error(key, message, RULE_VARIANT, hint=_variant_hint(why.label, why.releases, [arg]))
    if why.kind == "select":
        about = VARIANTS.get(why.label, why.label)
        message = tr("'{key}' belongs to {about}, which this launch does not select ({label})", key=key, about=about,
                     label=why.label)
        return error(key, message, RULE_SELECT, hint=tr("add the argument {label}, or {drop}", label=why.label,
                                                        drop=_drop(arg)))
    if why.kind == "entry":
        message = tr("'{key}' belongs to the config {label} of the entry {entry} (verl {releases}), not to {config}",
                     key=key, label=why.label, entry=why.entry, releases=releases, config=config_name)
        hint = tr("check with --entry {entry} --config-name={label}, or {drop}", entry=why.entry, label=why.label,
                  drop=_drop(arg))
        return error(key, message, RULE_ENTRY, hint=hint)
    message = tr("verl {version} has no '{key}'; verl {releases} have it", version=version, key=key, releases=releases)
    hint = tr("{drop}; or check and run with one of those releases (--verl-version)", drop=_drop(arg))
    return error(key, message, RULE_ELSEWHERE, hint=hint)


def _variant_hint(label: str, releases: tuple[str, ...], args: list[str]) -> Msg:
    last = releases[-1] if releases else "?"
    return tr("delete these arguments ({args}) and configure the engine this release has (model_engine=megatron "
              "keeps its settings under actor_rollout_ref.actor.megatron); or check and run with verl {last} "
              "(--verl-version {last})", args=_shown(args), last=last)


def _shown(args: list[str]) -> str:
    return ", ".join(args[:4]) + (tr(" and {n} more", n=len(args) - 4) if len(args) > 4 else "")


def group_option_issue(group: str, value: str, arg: str, releases: tuple[str, ...], version: str,
                       options: list[str]) -> Issue:
    """A config group option (``model_engine=mindspeed``) that the checked release does not have."""
    label = f"{group}={value}"
    shown = verl_keys.span(releases)
    if label in VARIANTS:
        message = tr("'{label}' ({about}) exists in verl {releases}, not in verl {version}; available: {options}",
                     label=label, about=VARIANTS[label], releases=shown, version=version,
                     options=", ".join(options) or "-")
        return error(group, message, RULE_VARIANT, hint=_variant_hint(label, releases, [arg]))
    message = tr("'{label}' exists in verl {releases}, not in verl {version}", label=label, releases=shown,
                 version=version)
    here = verl_keys.version_key(version)
    nearest_release = releases[-1] if here is None or verl_keys.version_key(releases[-1]) < here else releases[0]
    return error(group, message, RULE_ELSEWHERE,
                 hint=tr("{drop}; or check and run with verl {release} (--verl-version {release})",
                         drop=_drop(arg), release=nearest_release))


def ancestor_key(cfg: Any, parent: str, leaf: str) -> Optional[str]:
    """The nearest section above ``parent`` in ``cfg`` that has the key ``leaf`` (a key written one level too
    deep: ``actor.policy_loss.tau_pos`` for ``actor.tau_pos``), as a full path."""
    parts = parent.split(".")
    for n in range(len(parts) - 1, 0, -1):
        section = ".".join(parts[:n])
        if leaf in keys_at(cfg, section):
            return f"{section}.{leaf}"
    return None


def rejected_issue(key: str, arg: str, verdict, version: str, fields: Iterable[str], hydra: bool = False,
                   cfg: Any = None) -> Issue:
    """A key verl's config dataclass has no field for (``TypeError: unexpected keyword argument`` at start-up).

    ``hydra``: the argument has no ``+``, so Hydra refuses it first (the key is not in verl's YAML) and the
    message leads with that; verl's dataclass is why ``+`` would not help."""
    parent, _, leaf = verdict.at.rpartition(".")
    near = nearest(leaf, [f for f in fields if f != leaf and not f.startswith("_")])
    params = dict(version=version, parent=parent or "<root>", target=verdict.target.rpartition(".")[2], leaf=leaf)
    if hydra:
        message = tr("Hydra stops at '{arg}' before verl starts: '{parent}' has no key '{leaf}' (and with '+', "
                     "verl {version} would stop with TypeError: its {target} has no field '{leaf}')", arg=arg,
                     **params)
    else:
        message = tr("verl {version} converts '{parent}' into {target}, which has no field '{leaf}': verl stops "
                     "with TypeError (unexpected keyword argument) before training", **params)
    above = ancestor_key(cfg, parent, leaf) if near is None and cfg is not None and parent else None
    if above is not None:
        return error(key, tr("{message}; '{leaf}' is a key of '{section}'", message=message, leaf=leaf,
                             section=above.rpartition(".")[0]), "unknown-key", suggestion=above + key[len(verdict.at):])
    if near is not None:
        fixed = f"{parent}.{near}{key[len(verdict.at):]}"
        return error(key, tr("{message}; did you mean '{near}'?", message=message, near=near), "unknown-key",
                     hint=tr("verl/utils/config.py omega_conf_to_dataclass instantiates {target} with every key of "
                             "the section", target=verdict.target), suggestion=fixed)
    return error(key, message, RULE_REJECTED,
                 hint=tr("{drop}; verl/utils/config.py omega_conf_to_dataclass instantiates {target} with every key "
                         "of the section", drop=_drop(arg), target=verdict.target))


def group(issues: list[Issue], args_by_key: dict[str, str]) -> list[Issue]:
    """One issue per missing engine variant or foreign entry config, instead of one per argument."""
    out: list[Issue] = []
    buckets: dict[tuple, list[Issue]] = {}
    for issue in issues:
        label = _label(issue)
        if label is None:
            out.append(issue)
            continue
        bucket = buckets.setdefault(label, [])
        if not bucket:
            out.append(issue)  # placeholder: replaced by the merged issue below
        bucket.append(issue)
    merged = {id(b[0]): _merge(b, args_by_key) for b in buckets.values() if len(b) > 1}
    return [merged.get(id(i), i) for i in out]


def _label(issue: Issue) -> Optional[tuple]:
    if issue.rule not in (RULE_VARIANT, RULE_ENTRY, RULE_REJECTED, RULE_SELECT, RULE_CONFIG) \
            or not isinstance(issue.message, Msg):
        return None
    params = issue.message.params
    if issue.rule == RULE_REJECTED:
        return (issue.rule, params.get("parent"), params.get("leaf"))
    if issue.rule == RULE_CONFIG:
        return (issue.rule, params.get("base"), params.get("config"))
    return (issue.rule, params.get("label"), params.get("entry"))


def _merge(bucket: list[Issue], args_by_key: dict[str, str]) -> Issue:
    order = {key: n for n, key in enumerate(args_by_key)}
    ranked = sorted(bucket, key=lambda i: ("." in i.key, order.get(i.key, len(order))))  # the group option first
    first = ranked[0]
    params = first.message.params
    args = [args_by_key.get(i.key, i.key) for i in ranked]
    if first.rule == RULE_REJECTED:
        at = f"{params['parent']}.{params['leaf']}"
        message = tr("{n} arguments set keys under '{at}', but verl {version} converts '{parent}' into {target}, "
                     "which has no field '{leaf}': verl stops with TypeError (unexpected keyword argument) before "
                     "training", n=len(bucket), at=at, version=params["version"], parent=params["parent"],
                     target=params["target"], leaf=params["leaf"])
        return error(first.key, message, RULE_REJECTED, hint=tr("delete these arguments ({args})", args=_shown(args)),
                     deletes=tuple(args))
    if first.rule == RULE_CONFIG:  # several keys of the Megatron trainer: the launch composes the other config
        message = tr("{n} arguments set keys of {base}, but this launch composes {config}: verl {version} has them "
                     "only in {base}", n=len(bucket), base=params["base"], config=params["config"],
                     version=params["version"])
        if str(params["config"]).startswith(("sft", "eval")):  # another trainer: the PPO config is no fix for it
            return error(first.key, message, RULE_CONFIG, hint=tr("delete these arguments ({args})",
                                                                   args=_shown(args)), deletes=tuple(args))
        return error(first.key, message, RULE_CONFIG, override=f"--config-name={params['base']}",
                     hint=tr("compose {base}; or delete these arguments ({args})", base=params["base"],
                             args=_shown(args)))
    if first.rule == RULE_SELECT:
        label = params["label"]
        message = tr("{n} arguments belong to {about}, which this launch does not select ({label})", n=len(bucket),
                     about=VARIANTS.get(label, label), label=label)
        return error(first.key, message, RULE_SELECT, hint=tr("add the argument {label}, or delete these arguments "
                                                               "({args})", label=label, args=_shown(args)),
                     deletes=tuple(args))
    if first.rule == RULE_VARIANT:
        label = params["label"]
        releases = tuple(r for r in verl_keys.releases() if r in _releases_of(label))
        message = tr("{n} arguments belong to {about} ({label}), which exists in verl {releases}, not in verl "
                     "{version}", n=len(bucket), about=VARIANTS.get(label, label), label=label,
                     releases=params.get("releases", ""), version=params.get("version", ""))
        # no deletion as the fix: without the engine's arguments the launch is another one (verl's default engine)
        return error(first.key, message, RULE_VARIANT, hint=_variant_hint(label, releases, args))
    message = tr("{n} arguments belong to the config {label} of the entry {entry} (verl {releases}), not to {config}",
                 n=len(bucket), label=params["label"], entry=params["entry"], releases=params.get("releases", ""),
                 config=params.get("config", ""))
    return error(first.key, message, RULE_ENTRY, hint=tr("check with --entry {entry} --config-name={label}",
                                                          entry=params["entry"], label=params["label"]),
                 deletes=tuple(args))


def _releases_of(label: str) -> tuple[str, ...]:
    info = verl_keys.configs().get(label)
    if info and info.get("releases"):
        return verl_keys.expand(info["releases"])
    group_name, _, option = label.partition("=")
    return verl_keys.group_options(group_name).get(option, ())


def has_path(cfg: Any, path: str) -> bool:
    """Whether the composed ``cfg`` has the key ``path``, also when its value is ``???`` (verl's mandatory
    ``rollout.name``) or an interpolation: structure only, nothing is resolved."""
    node = cfg
    for part in path.split("."):
        if not isinstance(node, DictConfig) or part not in node.keys():
            return False
        node = node._get_node(part, validate_access=False)
    return True


def keys_at(cfg: Any, parent: str) -> list[str]:
    """The keys of the section ``parent`` of ``cfg`` (the root for ``""``); none when it is not a section."""
    from omegaconf import OmegaConf

    node = OmegaConf.select(cfg, parent) if parent else cfg
    return [str(k) for k in node.keys()] if isinstance(node, DictConfig) else []


def occupied(cfg: Any, path: str) -> bool:
    """Whether Hydra refuses ``+path=...`` on ``cfg``: a value other than null is there (Hydra's own test in
    ``config_loader_impl._apply_overrides_to_config``; a null value may be added over)."""
    from omegaconf import OmegaConf

    try:
        return OmegaConf.select(cfg, path, throw_on_missing=False) is not None
    except Exception:  # noqa: BLE001 - Hydra fails on it too, but not with "already there"
        return False


__all__ = ["DROP_RULES", "has_path", "keys_at", "occupied", "group", "group_option_issue", "history_issue",
           "rejected_issue"]
