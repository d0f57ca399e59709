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
from typing import Any, Callable, Iterable, Literal, Mapping, Optional

from .._version import release_tuple
from ..catalog import universe
from ..errors import Issue, Severity
from ..simulate import Build
from ..simulate import as_int as _int  # noqa: F401  re-exported: the rules import _int from here
from ..simulate import fmt as fmt  # re-exported: the rules and the resolver import fmt from here
from ..stack import Stack

RoleView = Build
"""What a role rule sees: one role's frozen build (:class:`verl_mindspeed.simulate.Build`)."""


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
    driver_validates: bool = True
    """Whether the launch's entry runs verl's ``validate_config`` in its driver (``main_ppo`` does)."""
    injected: bool = False
    """Whether the launch runs through verl-mindspeed (preset, callback or launcher), which injects
    the companions MindSpeed needs; a plain verl launch gets only what verl itself adds."""
    builds: Mapping[str, Build] = field(default_factory=dict)
    """Every role's build (the simulation the rules judge), for fixes that must move all roles together."""
    stack: Optional[Stack] = None
    """The stack judged (:mod:`verl_mindspeed.stack`); ``None`` skips the stack's own rules."""

    @property
    def core(self) -> tuple[int, int]:
        """The megatron-core line the release runs on, e.g. ``(0, 12)``."""
        return universe.core_line(self.release)


#: The largest size or batch a fix's search tries: past it a value is no device count or batch a launch runs (a
#: digit pasted many times over), and searching up to it would hang the check.
SEARCH_CEILING = 1 << 17


def size_fix(role: Build, ctx: Context, name: str, value: Any) -> str:
    """The lines that set the parallel size ``name`` to ``value`` for ``role`` without breaking another rule.

    Every role built with the same engine size moves too (the first role built owns the process groups, and
    the others must agree), and each dict that carries the key is set alike (verl copies the dict over the
    engine's sizes on the model config). A dict inherited from the actor follows the actor's. A pipeline size
    of 1 takes with it what only a pipeline has (VPP, uneven first/last stages).
    """
    builds = ctx.builds or {role.name: role}
    same = [b for b in builds.values() if b.megatron.get(name) == role.megatron.get(name)] or [role]
    lines = [b.mset_line(name, value) for b in same if b.megatron.get(name) != value]
    lines += [b.set_line(name, value) for b in same if b.given.get(name) not in (None, value)
              and not (b.inherits_actor and "actor" in builds)]
    if name == "pipeline_model_parallel_size" and value == 1:  # what only a pipeline has goes with it
        lines += [b.mset_line(_VPP, None) for b in same if b.megatron.get(_VPP) is not None]
        lines += [b.set_line(k, None) for b in same for k in _STAGES if b.given.get(k) is not None
                  and not (b.inherits_actor and "actor" in builds)]
    return " ".join(dict.fromkeys(lines))


_VPP = "virtual_pipeline_model_parallel_size"
FIRST_STAGE, LAST_STAGE = "num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage"
_STAGES = (FIRST_STAGE, LAST_STAGE)


def release_at_least(release: str, version: tuple[int, int, int]) -> bool:
    """Whether a MindSpeed release branch (``26.0.0_core_r0.12.1``, ``master``...) is at least ``version``."""
    parts = release_tuple(release.split("_", 1)[0])
    if parts is None:
        return True  # master and core_r* branches carry the newest checks
    return parts >= version


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
    covers: tuple[str, ...] = ()
    """MindSpeed switches outside the feature guide whose own checks this rule mirrors: a user who sets one gets no
    ``no-hand-rule`` note. A switch a rule only names (as a conflict, say) is not covered."""

    @property
    def mindspeed(self) -> bool:
        """A rule on MindSpeed's own checks (its features manager): moot where ``repatch`` is missing."""
        return "mindspeed/" in self.cites

    def to_json(self) -> dict:
        return {"id": self.id, "scope": self.scope, "cites": self.cites, "holds_for": self.holds_for,
                "doc": self.doc}


RULES: list[Rule] = []


def rule(rule_id: str, *, cites: str, holds_for: str = "every release", scope: Scope = "role",
         covers: tuple[str, ...] = ()) -> Callable:
    """Register a rule function under ``rule_id`` (``covers``: see :attr:`Rule.covers`)."""

    def deco(fn: Callable[..., Iterable[Issue]]) -> Callable[..., Iterable[Issue]]:
        if any(r.id == rule_id for r in RULES):
            raise ValueError(f"duplicate rule id {rule_id}")
        RULES.append(Rule(rule_id, scope, fn, cites, holds_for, (fn.__doc__ or "").strip(), covers))
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
