"""Checks on single values and between roles, before the cross-field rules run."""

from __future__ import annotations

from typing import Any, Iterable

from omegaconf import DictConfig

from .. import catalog
from ..catalog import universe
from ..errors import Issue
from ..rules._base import RoleView, error, fmt, warning
from ._finalize import is_process_wide
from ._values import check_arg, check_flag


def preflight_issues(cfg: DictConfig) -> Iterable[Issue]:
    """Config-wide slips: a preset group that Hydra did not find became a plain key."""
    stray = cfg.get("mindspeed") if isinstance(cfg, DictConfig) else None
    if stray is not None and not isinstance(stray, DictConfig):
        yield error(
            "mindspeed", f"+mindspeed={fmt(stray)} added a plain key instead of loading a preset",
            "preset-not-found",
            hint="the mindspeed preset group is not on Hydra's search path: install verl-mindspeed in the "
                 "Python that runs verl, or check the preset name with "
                 "'verl-mindspeed presets'",
        )


def check_megatron_values(prefix: str, megatron: dict[str, Any]) -> list[Issue]:
    issues = []
    for flag in catalog.flags("megatron"):
        if flag.name in megatron:
            problem = check_flag(flag, megatron[flag.name])
            if problem:
                issues.append(error(f"{prefix}.{flag.name}", f"{flag.name} {problem}", "value"))
    return issues


def check_otc_values(prefix: str, otc: dict[str, Any], release: str) -> list[Issue]:
    """Catalogue flags by their declared type; other keys by MindSpeed's or Megatron's argparse spec."""
    issues = []
    ms_release, ms_all, mg = universe.mindspeed_args(release), universe.mindspeed_args(), universe.megatron_training_args()
    for name, value in otc.items():
        flag = catalog.flag(name, "otc")
        if flag is not None:
            if flag.type == "layers":
                continue  # checked while normalizing
            problem = check_flag(flag, value)
        else:
            spec = ms_release.get(name) or ms_all.get(name) or mg.get(name)
            problem = check_arg(spec, value) if spec else None
        if problem:
            issues.append(error(f"{prefix}.{catalog.OTC}.{name}", f"{name} {problem}", "value",
                                hint=_bool_hint(value) if "True or False" in problem else ""))
    return issues


def _bool_hint(value: Any) -> str:
    return "write True or False (Hydra reads yes/no/1/0 as strings or numbers)"


def compare_roles(views: dict[str, RoleView], inherited: dict[str, bool]) -> list[Issue]:
    """Ref that lost the actor's dict, and MindSpeed switches that differ between roles sharing a process."""
    actor = views.get("actor")
    if actor is None:
        return []
    issues: list[Issue] = []
    ref = views.get("ref")
    if ref is not None and not inherited.get("ref", True):
        lost = sorted(k for k in actor.otc if k not in ref.otc)
        if lost:
            restored = [k for k in lost if is_process_wide(k)]
            issues.append(warning(
                ref.otc_path,
                f"writing under ref's override_transformer_config replaced the dict ref inherits from the actor; "
                f"ref lost: {', '.join(lost)}",
                "ref-lost-inherited",
                hint=("verl-mindspeed restores the MindSpeed switches " + ", ".join(restored) + "; "
                      if restored else "") + "set the others for ref too, or drop the ref line (ref inherits the actor's)",
            ))
    for name, view in views.items():
        if name == "actor":
            continue
        for key in sorted(set(actor.otc) | set(view.otc)):
            if not is_process_wide(key) or key not in view.otc or key not in actor.otc:
                continue
            if view.otc[key] != actor.otc[key]:
                issues.append(warning(
                    view.key(key),
                    f"{name} sets {key}={fmt(view.otc[key])} but the actor sets {fmt(actor.otc[key])}; MindSpeed "
                    "patches are process-wide and colocated roles share processes",
                    "role-flags-differ",
                    hint="verl 0.6/0.7 apply the actor's value to every role; verl 0.8+ repatch per engine, "
                         "so the last engine built wins",
                ))
    return issues
