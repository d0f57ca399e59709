"""What a rule sees (one role's settings, the whole run's context) and how rules register.

A rule is a small named function with an id. Role rules take ``(role, ctx)`` and
run once per role; run rules take ``(roles, ctx)`` and run once. Both yield
:class:`~verl_mindspeed.errors.Issue` objects, worded "A=x requires B=y" or
"A and B cannot be combined", and cite the upstream code they mirror.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal, Optional

from ..catalog import OTC
from ..errors import Issue, Severity

@dataclass
class RoleView:
    """One role's Megatron settings after normalization, with helpers to name keys."""

    name: str
    """``actor``, ``ref`` or ``critic``."""
    prefix: str
    """Dotted path of the role's ``megatron`` node, e.g. ``actor_rollout_ref.actor.megatron``."""
    megatron: dict[str, Any]
    """Resolved ``megatron.*`` values (without ``override_transformer_config``)."""
    otc: dict[str, Any]
    """Normalized ``override_transformer_config``: what MindSpeed and Megatron will read."""
    explicit: set[str] = field(default_factory=set)
    """``otc`` keys the user set for this role (not verl's YAML defaults)."""

    def key(self, name: str) -> str:
        """Full dotted path of an ``override_transformer_config`` key."""
        return f"{self.prefix}.{OTC}.{name}"

    @property
    def otc_path(self) -> str:
        return f"{self.prefix}.{OTC}"

    def set_line(self, name: str, value: Any) -> str:
        """A pasteable override setting an ``override_transformer_config`` key (``++`` adds or replaces)."""
        return f"++{self.key(name)}={fmt(value)}"

    def mset_line(self, name: str, value: Any) -> str:
        """A pasteable override setting a ``megatron.*`` key (always present in verl's YAML)."""
        return f"{self.mkey(name)}={fmt(value)}"

    def mkey(self, name: str) -> str:
        """Full dotted path of a ``megatron.*`` key."""
        return f"{self.prefix}.{name}"

    def get(self, name: str, default: Any = None) -> Any:
        value = self.otc.get(name, default)
        return default if value is None else value

    def on(self, name: str) -> bool:
        """True when a boolean switch in the dict is set to true."""
        return self.otc.get(name) is True

    def size(self, name: str) -> int:
        """A parallel size from ``megatron.*`` (null and missing count as 1)."""
        value = self.megatron.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else 1

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
        value = self.megatron.get("virtual_pipeline_model_parallel_size")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def sequence_parallel(self) -> Optional[bool]:
        """Whether SP is effectively on: the dict wins, else verl's ``megatron.sequence_parallel`` (verl 0.9
        turns it off when TP = 1); ``None`` when neither says (older verl trees without the key)."""
        if self.otc.get("sequence_parallel") is not None:
            return self.otc["sequence_parallel"] is True
        if self.megatron.get("sequence_parallel") is None:
            return None
        return bool(self.megatron["sequence_parallel"]) and self.tp > 1


@dataclass
class Context:
    """What every rule may consult besides one role."""

    world_size: Optional[int] = None
    """``trainer.nnodes * trainer.n_gpus_per_node`` when both are known."""
    release: str = ""
    """Target MindSpeed release branch, e.g. ``26.1.0_core_r0.12.1``."""
    model: Any = None
    """A ``verl_mindspeed.model.ModelSpec`` when the HF config could be read, else ``None``."""
    config: Any = None
    """The composed verl config (DictConfig), read-only, for rules that need other sections."""


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
    doc: str = ""


RULES: list[Rule] = []


def rule(rule_id: str, *, cites: str, scope: Scope = "role") -> Callable:
    """Register a rule function under ``rule_id``."""

    def deco(fn: Callable[..., Iterable[Issue]]) -> Callable[..., Iterable[Issue]]:
        if any(r.id == rule_id for r in RULES):
            raise ValueError(f"duplicate rule id {rule_id}")
        RULES.append(Rule(rule_id, scope, fn, cites, (fn.__doc__ or "").strip()))
        return fn

    return deco


def issue(severity: Severity, key: str, message: str, rule_id: str, hint: str = "", **kw: Any) -> Issue:
    return Issue(severity=severity, key=key, message=message, hint=hint, rule=rule_id, **kw)


def error(key: str, message: str, rule_id: str, hint: str = "", **kw: Any) -> Issue:
    return issue("error", key, message, rule_id, hint, **kw)


def warning(key: str, message: str, rule_id: str, hint: str = "", **kw: Any) -> Issue:
    return issue("warning", key, message, rule_id, hint, **kw)


def fmt(value: Any) -> str:
    """A value as the user would type it on a Hydra command line."""
    if value is True:
        return "True"
    if value is False:
        return "False"
    if value is None:
        return "null"
    return str(value)
