"""What a rule sees (one role's build, the whole run's context) and how rules register.

A rule is a small named function with an id. Role rules take ``(role, ctx)`` and run once per
role build; run rules take ``(roles, ctx)`` and run once. Both yield
:class:`~verl_mindspeed.errors.Issue` objects, worded "A=x requires B=y" or "A and B cannot be
combined", and cite the upstream code they mirror and the releases that code holds for.

A role is judged the way verl builds it (see :mod:`verl_mindspeed.eras`): ``sent`` is the dict
verl hands to MindSpeed's ``repatch`` for this build, ``ns`` the keys MindSpeed's process-wide
namespace holds at this build (``repatch`` merges), and ``built`` what megatron's
``TransformerConfig`` ends up holding: the namespace, then what the model bridge sets, then the
role's own dict, as MindSpeed's ``TransformerConfig.__init__`` wrapper merges them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal, Optional

from ..catalog import OTC, universe
from ..errors import Issue, Severity


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass
class RoleView:
    """One role's Megatron settings and what its build really hands to MindSpeed and megatron."""

    name: str
    """``actor``, ``ref`` or ``critic``."""
    prefix: str
    """Dotted path of the role's ``megatron`` node, e.g. ``actor_rollout_ref.actor.megatron``."""
    megatron: dict[str, Any]
    """Resolved ``megatron.*`` values (without ``override_transformer_config``)."""
    otc: dict[str, Any]
    """The role's normalized ``override_transformer_config`` as the user wrote it (aliases mapped)."""
    explicit: set[str] = field(default_factory=set)
    """``otc`` keys the user set for this role (not verl's YAML defaults)."""
    given: Optional[dict[str, Any]] = None
    """The dict the role's engine is given: as written for a plain verl launch, ``otc`` plus the
    injected companions for a launch through verl-mindspeed."""
    sent: Optional[dict[str, Any]] = None
    """What this build hands to ``repatch``; ``None`` when the build does not call it."""
    ns: dict[str, Any] = field(default_factory=dict)
    """MindSpeed's namespace at this build: every key the ``repatch`` calls so far set."""
    bridge: dict[str, Any] = field(default_factory=dict)
    """What the model bridge puts into ``TransformerConfig`` besides the dict (bridge defaults)."""
    groups: dict[str, Any] = field(default_factory=dict)
    """The process's parallel sizes: those of the role that builds first (see eras)."""
    owner: bool = True
    """Whether this role's sizes initialize Megatron's parallel state (the others reuse it)."""

    def __post_init__(self) -> None:
        if self.given is None:
            self.given = dict(self.otc)

    # -- names -------------------------------------------------------------------------------
    def key(self, name: str) -> str:
        """Full dotted path of an ``override_transformer_config`` key."""
        return f"{self.prefix}.{OTC}.{name}"

    @property
    def otc_path(self) -> str:
        return f"{self.prefix}.{OTC}"

    def mkey(self, name: str) -> str:
        """Full dotted path of a ``megatron.*`` key."""
        return f"{self.prefix}.{name}"

    def set_line(self, name: str, value: Any) -> str:
        """A pasteable override setting an ``override_transformer_config`` key (``++`` adds or replaces)."""
        return f"++{self.key(name)}={fmt(value)}"

    def mset_line(self, name: str, value: Any) -> str:
        """A pasteable override setting a ``megatron.*`` key (always present in verl's YAML)."""
        return f"{self.mkey(name)}={fmt(value)}"

    # -- values ------------------------------------------------------------------------------
    @property
    def built(self) -> dict[str, Any]:
        """``TransformerConfig`` as built: namespace, then bridge defaults, then the role's dict."""
        return {**self.ns, **self.bridge, **(self.given or {})}

    def get(self, name: str, default: Any = None) -> Any:
        """A value of the built config (``None`` counts as unset)."""
        value = self.built.get(name)
        return default if value is None else value

    def on(self, name: str) -> bool:
        """True when a switch of the built config is true."""
        return self.built.get(name) is True

    def in_ns(self, name: str) -> bool:
        """Whether MindSpeed's namespace holds ``name`` at this build (only dicts handed to repatch put it there)."""
        return name in self.ns

    def size(self, name: str) -> int:
        """A parallel size from ``megatron.*`` (null and missing count as 1)."""
        value = _int(self.megatron.get(name))
        return value if value is not None and value >= 1 else 1

    def built_size(self, name: str) -> int:
        """A parallel size as ``TransformerConfig`` gets it: the dict's, else the bridge's (the process groups for
        mbridge and verl's converter, the role's own for Megatron-Bridge), else the role's ``megatron.*``."""
        value = _int(self.built.get(name))
        return value if value is not None and value >= 1 else self.size(name)

    @property
    def tp(self) -> int:
        return self.size("tensor_model_parallel_size")

    @property
    def pp(self) -> int:
        return self.size("pipeline_model_parallel_size")

    @property
    def cp(self) -> int:
        return self.size("context_parallel_size")

    @property
    def ep(self) -> int:
        return self.size("expert_model_parallel_size")

    @property
    def etp(self) -> int:
        value = self.megatron.get("expert_tensor_parallel_size")
        return self.tp if value is None else self.size("expert_tensor_parallel_size")

    @property
    def vpp(self) -> Optional[int]:
        return _int(self.megatron.get("virtual_pipeline_model_parallel_size"))

    @property
    def sequence_parallel(self) -> Optional[bool]:
        """Whether SP is on in the built config; ``None`` when nothing says (older trees, no bridge view)."""
        value = self.built.get("sequence_parallel")
        if value is not None:
            return value is True
        if self.megatron.get("sequence_parallel") is None:
            return None
        return bool(self.megatron["sequence_parallel"]) and self.tp > 1


@dataclass
class Context:
    """What every rule may consult besides one role."""

    world_size: Optional[int] = None
    """``trainer.nnodes * trainer.n_gpus_per_node`` when both are known."""
    release: str = universe.DEFAULT_RELEASE
    """Target MindSpeed release branch, e.g. ``26.1.0_core_r0.12.1``."""
    model: Any = None
    """A ``verl_mindspeed.model.ModelSpec`` when the HF config could be read, else ``None``."""
    config: Any = None
    """The composed verl config (DictConfig), read-only, for rules that need other sections."""
    era: Any = None
    """The :class:`verl_mindspeed.eras.Era` of the verl tree being checked."""
    device_memory_gib: float = 64.0
    """Memory of one device, for the peak estimate (64: the Atlas 800T A2)."""
    injected: bool = False
    """Whether the launch runs through verl-mindspeed (preset, callback or launcher), which injects
    the companions MindSpeed needs; a plain verl launch gets only what verl itself adds."""

    @property
    def core(self) -> tuple[int, int]:
        """The megatron-core line the release runs on, e.g. ``(0, 12)``."""
        return universe.core_line(self.release)


def release_at_least(release: str, version: tuple[int, int, int]) -> bool:
    """Whether a MindSpeed release branch (``26.0.0_core_r0.12.1``, ``master``...) is at least ``version``."""
    head = release.split("_", 1)[0]
    parts = head.split(".")
    if not all(p.isdigit() for p in parts):
        return True  # master and core_r* branches carry the newest checks
    return tuple(int(p) for p in parts) >= version


Scope = Literal["role", "run"]


@dataclass(frozen=True)
class Rule:
    id: str
    scope: Scope
    fn: Callable[..., Iterable[Issue]]
    cites: str
    """The upstream file (and branch) whose check this rule mirrors."""
    holds_for: str
    """The releases the rule holds for, e.g. ``MindSpeed 26.0.0+``, ``megatron-core 0.12.1 and 0.16.1``."""
    doc: str = ""

    @property
    def mindspeed(self) -> bool:
        """A rule on MindSpeed's own checks (its features manager): moot where ``repatch`` is missing."""
        return "mindspeed/" in self.cites

    def to_json(self) -> dict:
        return {"id": self.id, "scope": self.scope, "cites": self.cites, "holds_for": self.holds_for,
                "doc": self.doc}


RULES: list[Rule] = []


def rule(rule_id: str, *, cites: str, holds_for: str = "every release", scope: Scope = "role") -> Callable:
    """Register a rule function under ``rule_id``."""

    def deco(fn: Callable[..., Iterable[Issue]]) -> Callable[..., Iterable[Issue]]:
        if any(r.id == rule_id for r in RULES):
            raise ValueError(f"duplicate rule id {rule_id}")
        RULES.append(Rule(rule_id, scope, fn, cites, holds_for, (fn.__doc__ or "").strip()))
        return fn

    return deco


def issue(severity: Severity, key: str, message: str, rule_id: str, hint: str = "", **kw: Any) -> Issue:
    return Issue(severity=severity, key=key, message=message, hint=hint, rule=rule_id, **kw)


def error(key: str, message: str, rule_id: str, hint: str = "", **kw: Any) -> Issue:
    return issue("error", key, message, rule_id, hint, **kw)


def warning(key: str, message: str, rule_id: str, hint: str = "", **kw: Any) -> Issue:
    return issue("warning", key, message, rule_id, hint, **kw)


def note(key: str, message: str, rule_id: str, hint: str = "", **kw: Any) -> Issue:
    return issue("note", key, message, rule_id, hint, **kw)


def fmt(value: Any) -> str:
    """A value as the user would type it on a Hydra command line."""
    if value is True:
        return "True"
    if value is False:
        return "False"
    if value is None:
        return "null"
    return str(value)
