"""One role's build as frozen data: what the config says of the role and what verl makes of it.

A :class:`RoleInput` is read from the composed config (and normalized); a :class:`Build` adds what the
era's build of that role produces: the dict the engine is given, the dict handed to ``repatch``,
MindSpeed's namespace after it, the process groups and their owner, and the model bridge's view.
Both are immutable: :func:`~verl_mindspeed.simulate.simulate` makes every :class:`Build` at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping, Optional

from ..catalog import OTC
from ..overrides import hydra_value

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def as_int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def fmt(value: Any) -> str:
    """A value as the user would type it on a Hydra command line."""
    if value is True:
        return "True"
    if value is False:
        return "False"
    if value is None:
        return "null"
    return str(value)


def frozen(data: Optional[Mapping[str, Any]]) -> Mapping[str, Any]:
    """A read-only view of a copy of ``data`` (``None`` stays ``None``)."""
    return MappingProxyType(dict(data)) if data is not None else None  # type: ignore[return-value]


@dataclass(frozen=True)
class RoleInput:
    """What the composed config says of one role that uses the Megatron strategy."""

    name: str
    """``actor``, ``ref`` or ``critic``."""
    prefix: str
    """Dotted path of the role's ``megatron`` node, e.g. ``actor_rollout_ref.actor.megatron``."""
    megatron: Mapping[str, Any]
    """Resolved ``megatron.*`` values (without ``override_transformer_config``)."""
    otc: Mapping[str, Any]
    """The role's normalized ``override_transformer_config`` as the user wrote it (aliases mapped)."""
    explicit: frozenset = frozenset()
    """``otc`` keys the user set for this role (not verl's YAML defaults)."""
    given: Optional[Mapping[str, Any]] = None
    """The dict the role's engine is given: as written for a plain verl launch (default: ``otc``), ``otc``
    plus the injected companions for a launch through verl-mindspeed."""
    inherits_actor: bool = False
    """Whether the role's dict is verl's interpolation of the actor's (ref's default)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "megatron", frozen(self.megatron))
        object.__setattr__(self, "otc", frozen(self.otc))
        object.__setattr__(self, "explicit", frozenset(self.explicit))
        object.__setattr__(self, "given", frozen(self.otc if self.given is None else self.given))

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
        return f"++{self.key(name)}={hydra_value(value)}"

    def mset_line(self, name: str, value: Any) -> str:
        """A pasteable override setting a ``megatron.*`` key (always present in verl's YAML)."""
        return f"{self.mkey(name)}={hydra_value(value)}"

    # -- the engine's sizes ------------------------------------------------------------------
    def size(self, name: str) -> int:
        """A parallel size from ``megatron.*`` (null and missing count as 1)."""
        value = as_int(self.megatron.get(name))
        return value if value is not None and value >= 1 else 1

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
        return as_int(self.megatron.get("virtual_pipeline_model_parallel_size"))


@dataclass(frozen=True)
class Build(RoleInput):
    """One role as its era builds it; every field is fixed when the simulation is made."""

    sent: Optional[Mapping[str, Any]] = None
    """What this build hands to ``repatch``; ``None`` when the build does not call it."""
    ns: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    """MindSpeed's namespace at this build: every key the ``repatch`` calls so far set (``repatch`` merges)."""
    bridge: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    """What the model bridge puts into ``TransformerConfig`` besides the dict (bridge defaults)."""
    bridge_kind: str = ""
    """Which config path builds the role: ``megatron-bridge``, ``mbridge`` or ``converter``."""
    groups: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    """The process's parallel sizes: those of the role that builds first (see eras)."""
    owner: bool = True
    """Whether this role's sizes initialize Megatron's parallel state (the others reuse it)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("ns", "bridge", "groups"):
            object.__setattr__(self, name, frozen(getattr(self, name)))
        object.__setattr__(self, "sent", frozen(self.sent))
        object.__setattr__(self, "built", MappingProxyType({**self.ns, **self.bridge, **self.given}))

    built: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, init=False, repr=False, compare=False)
    """``TransformerConfig`` as built: namespace, then bridge defaults, then the role's dict, as MindSpeed's
    ``TransformerConfig.__init__`` wrapper merges them."""

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

    def built_size(self, name: str) -> int:
        """A parallel size as ``TransformerConfig`` gets it: the dict's, else the bridge's (the process groups for
        mbridge and verl's converter, the role's own for Megatron-Bridge), else the role's ``megatron.*``."""
        value = as_int(self.built.get(name))
        return value if value is not None and value >= 1 else self.size(name)

    @property
    def sequence_parallel(self) -> Optional[bool]:
        """Whether SP is on in the built config; ``None`` when nothing says (older trees, no bridge view)."""
        value = self.built.get("sequence_parallel")
        if value is not None:
            return value is True
        if self.megatron.get("sequence_parallel") is None:
            return None
        return bool(self.megatron["sequence_parallel"]) and self.tp > 1
