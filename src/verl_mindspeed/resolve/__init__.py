"""Composed verl config -> every issue found + the normalized per-role dicts -> injection.

    result = resolve(cfg)            # never raises on a bad configuration
    result.raise_for_errors()        # ConfigError listing every error, one per line
    inject(cfg, result)              # writes the normalized dicts back (under open_dict)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from omegaconf import DictConfig, OmegaConf, open_dict

from .. import catalog
from ..catalog import OTC, universe
from ..errors import ConfigError, Issue
from ..rules import RULES
from ..rules._base import Context, RoleView
from ._finalize import finalize, process_wide_items
from ._keys import check_megatron_keys, check_otc_keys
from ._normalize import normalize
from ._role_checks import check_megatron_values, check_otc_values, compare_roles, preflight_issues
from ._roles import active_roles, read_role, world_size

#: verl 0.9.1's ``engine/megatron.yaml`` defaults for the dict; used when the installed tree is unknown.
VERL_OTC_DEFAULTS: dict[str, Any] = {
    "recompute_granularity": None,
    "recompute_modules": ["core_attn"],
    "recompute_method": None,
    "recompute_num_layers": None,
    "attention_backend": "flash",
}


@dataclass
class Resolution:
    """What :func:`resolve` found and produced."""

    issues: list[Issue]
    roles: dict[str, dict[str, dict[str, Any]]]
    """role -> {"override_transformer_config": {...}, "megatron": {...}} in the form MindSpeed reads."""
    release: str = universe.DEFAULT_RELEASE
    versions: dict[str, str] = field(default_factory=dict)
    presets: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Preset name -> every key it sets (filled by ``check`` for ``+mindspeed=<preset>``)."""
    receives: dict[str, Any] = field(default_factory=dict)
    """What MindSpeed's ``repatch`` receives per worker in the verl tree's era (filled by ``check``)."""

    @property
    def errors(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "error"]

    @property
    def warnings(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "warning"]

    @property
    def notes(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "note"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def raise_for_errors(self) -> None:
        if self.errors:
            raise ConfigError(self.errors)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "errors": [i.to_json() for i in self.errors],
            "warnings": [i.to_json() for i in self.warnings],
            "notes": [i.to_json() for i in self.notes],
            "roles": self.roles,
            "versions": {"mindspeed_release": self.release, **self.versions},
            "presets": self.presets,
            "mindspeed_receives": self.receives,
        }


def resolve(
    cfg: DictConfig,
    *,
    strict: bool = False,
    release: Optional[str] = None,
    model: Any = None,
    known_megatron_keys: Optional[set[str]] = None,
    otc_defaults: Optional[dict[str, Any]] = None,
) -> Resolution:
    """Validate every MindSpeed option of a composed verl config and normalize it per role.

    ``release`` is the MindSpeed release branch to check enum values against.
    ``model`` is a ``verl_mindspeed.model.ModelSpec`` for the model-aware rules.
    ``known_megatron_keys`` are the keys verl's engine config accepts under
    ``<role>.megatron`` (from the installed verl's YAML); unknown ones are errors.
    """
    release = release or universe.DEFAULT_RELEASE
    defaults = VERL_OTC_DEFAULTS if otc_defaults is None else otc_defaults
    issues: list[Issue] = list(preflight_issues(cfg))
    views: dict[str, RoleView] = {}
    inherited: dict[str, bool] = {}
    for name in active_roles(cfg):
        raw = read_role(cfg, name)
        if raw is None:
            continue
        if raw.strategy not in (None, "megatron"):
            issues.extend(_not_megatron(raw, defaults))
            continue
        skip_dup = raw.inherits_actor_otc and "actor" in views
        if known_megatron_keys is not None:
            issues += check_megatron_keys(raw.prefix, raw.megatron, known_megatron_keys)
        issues += check_megatron_values(raw.prefix, raw.megatron)
        otc, found = normalize(raw.prefix, raw.otc)
        if not skip_dup:
            issues += check_otc_keys(raw.prefix, raw.otc, strict=strict)
            issues += found
            issues += check_otc_values(raw.prefix, otc, release)
        explicit = {k for k, v in otc.items() if k not in defaults or defaults[k] != v}
        views[name] = RoleView(name, raw.prefix, raw.megatron, otc, explicit)
        inherited[name] = raw.inherits_actor_otc

    ctx = Context(world_size=world_size(cfg), release=release, model=model, config=cfg)
    issues += compare_roles(views, inherited)
    # MindSpeed patches are process-wide: other roles run with the actor's switches, so check them that way.
    actor_shared = process_wide_items(views["actor"].otc) if "actor" in views else {}
    shared: dict[str, dict[str, Any]] = {}
    for name, view in views.items():
        shared[name] = {} if name == "actor" else {k: v for k, v in actor_shared.items() if k not in view.otc}
        view.otc = {**shared[name], **view.otc}
    for rule in RULES:
        if rule.scope == "run":
            issues += list(rule.fn(views, ctx))
            continue
        for name, view in views.items():
            if name != "actor" and inherited.get(name) and _same_layout(view, views.get("actor")):
                continue  # an inherited dict with the actor's layout repeats the actor's findings
            issues += list(rule.fn(view, ctx))

    roles: dict[str, dict[str, dict[str, Any]]] = {}
    for name, view in views.items():
        final, notes = finalize(view, shared[name], model)
        issues += notes
        roles[name] = {"override_transformer_config": final, "megatron": _megatron_view(view)}
    return Resolution(_dedupe(issues), roles, release)


def inject(cfg: DictConfig, resolution: Resolution) -> None:
    """Write each role's normalized ``override_transformer_config`` into ``cfg`` in place."""
    for name, settings in resolution.roles.items():
        node = OmegaConf.select(cfg, catalog.ROLE_PREFIXES[name])
        if not isinstance(node, DictConfig):
            continue
        with open_dict(node):
            node[OTC] = OmegaConf.create(settings["override_transformer_config"])


def _not_megatron(raw, defaults) -> list[Issue]:
    from ..rules._base import warning

    extra = sorted(k for k, v in raw.otc.items() if k not in defaults or defaults[k] != v)
    if not extra:
        return []
    return [warning(
        f"{raw.prefix}.{OTC}", f"strategy={raw.strategy}: the Megatron/MindSpeed settings {', '.join(extra)} "
        "have no effect", "strategy-not-megatron",
        hint=f"set {raw.prefix.rsplit('.', 1)[0]}.strategy=megatron (or use the megatron trainer config)",
    )]


def _same_layout(view: RoleView, actor: Optional[RoleView]) -> bool:
    return actor is not None and all(
        view.megatron.get(k) == actor.megatron.get(k) for k in (f.name for f in catalog.flags("megatron"))
    )


def _megatron_view(view: RoleView) -> dict[str, Any]:
    keys = [f.name for f in catalog.flags("megatron")] + ["sequence_parallel"]
    return {k: view.megatron.get(k) for k in keys if k in view.megatron}


def _dedupe(issues: list[Issue]) -> list[Issue]:
    seen, out = set(), []
    for i in issues:
        marker = (i.severity, i.key, i.message)
        if marker not in seen:
            seen.add(marker)
            out.append(i)
    return out


__all__ = ["Resolution", "resolve", "inject", "VERL_OTC_DEFAULTS"]
