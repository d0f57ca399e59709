"""Checks on single values, before the cross-field rules run."""

from __future__ import annotations

from typing import Any, Iterable

from omegaconf import DictConfig

from .. import catalog
from ..catalog import universe
from ..errors import Issue
from ..i18n import tr
from ..rules._base import error, fmt
from ._interpolation import still_interpolated, unresolved
from ._values import check_arg, check_flag, suggested_value


def preflight_issues(cfg: DictConfig) -> Iterable[Issue]:
    """Config-wide slips: a preset group that Hydra did not find became a plain key; interpolations verl cannot
    resolve."""
    yield from unresolved(cfg)
    stray = cfg.get("mindspeed") if isinstance(cfg, DictConfig) else None
    if stray is not None and not isinstance(stray, DictConfig):
        yield error(
            "mindspeed", tr("+mindspeed={value} added a plain key instead of loading a preset", value=fmt(stray)),
            "preset-not-found",
            hint=tr("the mindspeed preset group is not on Hydra's search path: install verl-mindspeed in the "
                    "Python that runs verl, or check the preset name with 'verl-mindspeed presets'"),
        )


def check_megatron_values(prefix: str, megatron: dict[str, Any]) -> list[Issue]:
    issues = []
    for flag in catalog.flags("megatron"):
        if flag.name in megatron and not still_interpolated(megatron[flag.name]):  # no type error repeats it
            problem = check_flag(flag, megatron[flag.name])
            if problem:
                fix = suggested_value(problem, megatron[flag.name], flag.minimum)
                example = prefix + "." + flag.name + "='${oc.decode:${oc.env:NAME}}'"
                hint = tr("a number read from the environment is a string: verl passes it on as one; decode it, "
                          "quoted for Hydra, e.g. {example}", example=example) \
                    if _numeric_text(megatron[flag.name]) else ""
                issues.append(error(f"{prefix}.{flag.name}", tr("{name} {problem}", name=flag.name, problem=problem),
                                    "value", hint=hint,
                                    override=None if fix is None else f"{prefix}.{flag.name}={fmt(fix)}"))
    return issues


def _numeric_text(value: Any) -> bool:
    """A string that reads as a number or a truth value: what ``${oc.env:X}`` gives for a size or a switch."""
    return isinstance(value, str) and value.strip().lower().lstrip("-").isdigit() or value in ("true", "false")


def check_otc_values(prefix: str, otc: dict[str, Any], release: str) -> list[Issue]:
    """Catalogue flags by their declared type; other keys by MindSpeed's or Megatron's argparse spec."""
    issues = []
    ms_release, ms_all = universe.mindspeed_args(release), universe.mindspeed_args()
    mg = universe.megatron_training_args()
    for name, value in otc.items():
        if still_interpolated(value):
            continue  # the interpolation check reports it
        flag = catalog.flag(name, "otc")
        if flag is not None:
            if flag.type == "layers":
                continue  # checked while normalizing
            problem = check_flag(flag, value)
        else:
            spec = ms_release.get(name) or ms_all.get(name) or mg.get(name)
            problem = check_arg(spec, value) if spec else None
        if problem:
            hint = tr("write True or False (Hydra reads yes/no/1/0 as strings or numbers)") \
                if getattr(problem, "template", "").startswith("must be True or False") else ""
            path = f"{prefix}.{catalog.OTC}.{name}"
            fix = suggested_value(problem, value, flag.minimum if flag is not None else None)
            issues.append(error(path, tr("{name} {problem}", name=name, problem=problem), "value", hint=hint,
                                override=None if fix is None else f"++{path}={fmt(fix)}"))
    return issues
