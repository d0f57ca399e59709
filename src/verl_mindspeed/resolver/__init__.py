"""Composed verl config -> every issue found + the normalized per-role dicts -> injection.

    result = resolve(cfg, injected=False)   # a plain verl launch; never raises on a bad configuration
    result.raise_for_errors()        # ConfigError listing every error, one per line
    inject(cfg, result)              # writes the normalized dicts back (under open_dict)

A role is judged the way the verl era being checked builds it (:mod:`verl_mindspeed.eras`): roles
are built in the era's order in one process, the first owns Megatron's parallel state, every
``repatch`` merges into MindSpeed's namespace. ``injected`` says whether the launch goes through
verl-mindspeed (preset, callback, launcher), which writes the companions MindSpeed needs; a plain
verl launch is judged on the dict exactly as verl passes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Union

from omegaconf import DictConfig, OmegaConf, open_dict

from .. import catalog, eras
from ..catalog import OTC, universe
from ..errors import ConfigError, Issue
from ..i18n import tr
from ..rules import RULES
from ..rules._base import Context, warning
from ..simulate import (
    MEGATRON_BRIDGE,
    Build,
    RoleInput,
    Simulation,
    active_roles,
    bridge_kind,
    read_role,
    simulate,
    world_size,
)
from ..stack import Stack
from ._finalize import injected_dict
from ._follow import follow_fixes, follows
from ._interpolation import still_interpolated
from ._keys import check_megatron_keys, check_otc_keys, uncovered_switches
from ._normalize import normalize
from ._review import review, suggested_line
from ._role_checks import check_megatron_values, check_otc_values, preflight_issues

SCHEMA_VERSION = 1

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
    roles: dict[str, dict[str, Any]]
    """role -> {"override_transformer_config": {...}, "megatron": {...}, "repatch": {...}}: the dict the engine is
    given (in the form MindSpeed reads), its megatron sizes, and the dict verl hands to ``repatch`` (None when the
    build does not call it)."""
    release: str = universe.DEFAULT_RELEASE
    versions: dict[str, str] = field(default_factory=dict)
    presets: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Preset name -> every key it sets (filled by the launch pipeline for ``+mindspeed=<preset>``)."""
    receives: dict[str, Any] = field(default_factory=dict)
    """What MindSpeed's ``repatch`` receives, build by build, in the verl tree's era."""
    era: str = eras.ENGINE
    injected: bool = False
    simulation: Optional[Simulation] = None
    """Every role as the era builds it (the dicts given and sent, MindSpeed's namespace, the groups' owner)."""
    model: Any = None
    """The model spec the model-aware rules used (``None`` without a readable model config)."""
    model_dir: Optional[str] = None
    """Where that model config was read from (a folder holding ``config.json``, or the file given)."""
    upstream: Optional[dict[str, Any]] = None
    """What ``check --upstream`` ran: the sources, the interpreter, the verdict and its time."""
    stack: Optional[Stack] = None
    """The stack the launch was judged on (``None``: the rules of ``release`` alone, without the stack's checks)."""

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

    def to_json(self, lang: str = "en") -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "ok": self.ok,
            "errors": [i.to_json(lang) for i in self.errors],
            "warnings": [i.to_json(lang) for i in self.warnings],
            "notes": [i.to_json(lang) for i in self.notes],
            "roles": self.roles,
            "versions": {"mindspeed_release": self.release, **self.versions},
            "stack": self.stack.to_json() if self.stack is not None else None,
            "launch": {"era": self.era, "injected": self.injected},
            "presets": self.presets,
            "mindspeed_receives": self.receives,
            **({"upstream": self.upstream} if self.upstream is not None else {}),
        }


def resolve(
    cfg: DictConfig,
    *,
    strict: bool = False,
    release: Optional[str] = None,
    model: Any = None,
    known_megatron_keys: Optional[set[str]] = None,
    otc_defaults: Optional[dict[str, Any]] = None,
    era: Union[str, eras.Era, None] = None,
    injected: bool,
    device_memory_gib: float = 64.0,
    driver_validates: bool = True,
    stack: Optional[Stack] = None,
) -> Resolution:
    """Validate every MindSpeed option of a composed verl config, the way ``era`` builds it.

    ``release`` is the MindSpeed release branch to check against; ``model`` a
    ``verl_mindspeed.model.ModelSpec`` for the model-aware rules; ``known_megatron_keys`` the keys
    verl's engine config accepts under ``<role>.megatron``; ``era`` an era id or :class:`~eras.Era`
    (default: verl 0.8+ engines); ``injected`` (required, as the CLI decides it from the launch) whether
    verl-mindspeed writes the dicts: True through a preset, the callback or the launcher, False for a plain
    verl launch; ``driver_validates`` whether the entry runs verl's ``validate_config`` (``main_ppo`` does);
    ``stack`` the stack to judge on (``launch.choose_stack``): without one, the stack's own checks (a bridge that
    cannot import, fields of another megatron-core line) do not run.
    """
    release = release or universe.DEFAULT_RELEASE
    spec = _era(cfg, era)
    defaults = VERL_OTC_DEFAULTS if otc_defaults is None else otc_defaults
    issues: list[Issue] = list(preflight_issues(cfg))
    inputs: dict[str, RoleInput] = {}
    repeats: set[str] = set()
    for name in active_roles(cfg):
        raw = read_role(cfg, name)
        if raw is None:
            continue
        if raw.strategy not in (None, "megatron"):
            issues.extend(_not_megatron(raw, defaults))
            continue
        repeats_actor = raw.inherits_actor_otc and "actor" in inputs
        if known_megatron_keys is not None:
            issues += check_megatron_keys(raw.prefix, raw.megatron, known_megatron_keys)
        issues += check_megatron_values(raw.prefix, raw.megatron)
        otc, found = normalize(raw.prefix, raw.otc, injected=injected)
        if not repeats_actor:
            refused = stack is not None and stack.bridge_refuses_unknown() and \
                bridge_kind(raw.megatron) == MEGATRON_BRIDGE
            issues += check_otc_keys(raw.prefix, raw.otc, strict=strict, stack=stack, refused=refused)
            issues += found
            issues += check_otc_values(raw.prefix, otc, release)
        explicit = {k for k, v in otc.items() if k not in defaults or defaults[k] != v}
        if not repeats_actor:
            issues += uncovered_switches(raw.prefix, otc, explicit, release)
        inputs[name] = RoleInput(name, raw.prefix, raw.megatron, otc, explicit, given=raw.otc,
                                 inherits_actor=raw.inherits_actor_otc)
        if repeats_actor and _same_layout(inputs[name], inputs["actor"]):
            repeats.add(name)

    has_repatch, world = universe.has_repatch(release), world_size(cfg)
    sim = simulate(inputs, spec, model=model, has_repatch=has_repatch, world=world)
    if injected:
        given, found = _injected(sim, model)
        issues += found
        sim = simulate(inputs, spec, model=model, has_repatch=has_repatch, given=given, world=world)
    views = dict(sim.builds)
    unknown = _unresolved_keys(inputs.values())
    refused = {i.key for i in issues if i.rule == "value"}  # no rule reports under that id: fixed before the rules
    # a near miss's line deletes the key and sets the one meant: another error on that key (the bridge refusing it)
    # would print a second deletion, which Hydra refuses once the first ran
    unknown |= {i.key for i in issues if i.rule == "unknown-key" and i.severity == "error"}
    ctx = Context(world_size=world, release=release, model=model, config=cfg, era=spec,
                  injected=injected, device_memory_gib=device_memory_gib, builds=sim.builds,
                  driver_validates=driver_validates, stack=stack)
    handed = has_repatch and any(spec.repatches(name) for name in inputs)  # verl 0.4/0.5 never call repatch
    for rule in RULES:
        if rule.mindspeed and not handed and rule.id not in ("no-repatch", "verl-no-repatch"):
            continue  # MindSpeed never sees the dict: its checks cannot fire
        found: list[Issue] = []
        if rule.scope == "run":
            found = list(rule.fn(views, ctx))
        else:
            for name, view in views.items():
                if name not in repeats:  # a dict inherited with the actor's layout repeats the actor's findings
                    found += list(rule.fn(view, ctx))
        # a key whose interpolation failed or a near miss: its error says it, no guess; a key whose value has the
        # wrong type or choice: a warning judged on that value is noise (it surfaces again, if it holds, once the
        # value is fixed)
        issues += [i for i in found if i.key not in unknown and not (i.severity != "error" and i.key in refused)]
    roles = {name: {"override_transformer_config": dict(view.given), "megatron": _megatron_view(view),
                    "repatch": dict(view.sent) if view.sent is not None else None}
             for name, view in views.items()}
    return Resolution(_dedupe(issues), roles, release, receives=sim.receives(), era=spec.id, injected=injected,
                      simulation=sim, stack=stack)


def _injected(sim: Simulation, model: Any) -> tuple[dict[str, dict[str, Any]], list[Issue]]:
    """The dict verl-mindspeed writes for each role, from the plain launch's builds.

    Legacy workers only ever hand the actor's dict to MindSpeed: only it is rewritten (a ref that
    still inherits it follows); the other dicts stay as written.
    """
    spec, builds, notes = sim.era, sim.builds, []
    shared = _shared_switches(builds, spec) if spec.repatch_dict == "own" else {}
    given: dict[str, dict[str, Any]] = {}
    for name, build in builds.items():
        if spec.repatch_dict != "actor" or name == "actor":
            given[name], found = injected_dict(build, shared.get(name, {}), model)
            notes += found
    if spec.repatch_dict == "actor" and "actor" in given:
        for name, build in builds.items():
            if build.inherits_actor and name != "actor":
                given[name] = dict(given["actor"])
    return given, notes


def _shared_switches(views: Mapping[str, Build], spec: eras.Era) -> dict[str, dict[str, Any]]:
    """MindSpeed switches each role's dict gets from the others: patches are process-wide, so every
    build is validated with the switches the process ends up running (the last build wins a clash)."""
    merged: dict[str, Any] = {}
    for name in spec.builds(list(views)):
        merged.update(universe.process_wide_items(views[name].otc))
    return {name: {k: v for k, v in merged.items() if k not in view.otc} for name, view in views.items()}


def inject(cfg: DictConfig, resolution: Resolution, *, force: bool = False) -> None:
    """Write each role's normalized ``override_transformer_config`` into ``cfg`` in place.

    Refuses a resolution with errors (``ConfigError``) unless ``force=True``.
    """
    if resolution.errors and not force:
        raise ConfigError(resolution.errors)
    for name, settings in resolution.roles.items():
        node = OmegaConf.select(cfg, catalog.ROLE_PREFIXES[name])
        if not isinstance(node, DictConfig):
            continue
        with open_dict(node):
            node[OTC] = OmegaConf.create(settings["override_transformer_config"])


def _era(cfg: DictConfig, era: Union[str, eras.Era, None]) -> eras.Era:
    if isinstance(era, eras.Era):
        return era
    return eras.ERAS[eras.worker_mode(cfg, era or eras.ENGINE)]


def _not_megatron(raw, defaults) -> list[Issue]:
    extra = sorted(k for k, v in raw.otc.items() if k not in defaults or defaults[k] != v)
    if not extra:
        return []
    return [warning(
        f"{raw.prefix}.{OTC}", tr("strategy={strategy}: the Megatron/MindSpeed settings {keys} have no effect",
                                  strategy=raw.strategy, keys=", ".join(extra)), "strategy-not-megatron",
        hint=tr("set {key}=megatron (or use the megatron trainer config)",
                key=raw.prefix.rsplit(".", 1)[0] + ".strategy"),
    )]


def _same_layout(view: RoleInput, actor: RoleInput) -> bool:
    return all(view.megatron.get(k) == actor.megatron.get(k) for k in (f.name for f in catalog.flags("megatron")))


def _megatron_view(view: Build) -> dict[str, Any]:
    keys = [f.name for f in catalog.flags("megatron")] + ["sequence_parallel"]
    return {k: view.megatron.get(k) for k in keys if k in view.megatron}


def _unresolved_keys(inputs: Iterable[RoleInput]) -> set[str]:
    """Keys whose value still holds an interpolation that did not resolve: a rule cannot judge what it reads
    there (the interpolation check already reports the key)."""
    keys = {f"{i.prefix}.{k}" for i in inputs for k, v in i.megatron.items() if still_interpolated(v)}
    keys |= {f"{i.prefix}.{catalog.OTC}.{k}" for i in inputs for k, v in (i.given or {}).items()
             if still_interpolated(v)}
    return keys


def _dedupe(issues: list[Issue]) -> list[Issue]:
    seen, out = set(), []
    for i in issues:
        marker = (i.severity, i.key, str(i.message))
        if marker not in seen:
            seen.add(marker)
            out.append(i)
    return out


__all__ = ["Resolution", "SCHEMA_VERSION", "resolve", "inject", "review", "suggested_line", "follow_fixes",
           "follows", "VERL_OTC_DEFAULTS"]
