"""verl's build of every role in one process, in the era's order: the one model of ``repatch``.

Each build of a role that calls ``repatch`` hands MindSpeed a dict (:func:`sent_dict`); MindSpeed's
``repatch`` (``mindspeed/megatron_adaptor.py``) MERGES it into one process-wide namespace, so a key an
earlier build set sticks until a later build sets it again. The first role built (legacy workers: the
actor) initializes Megatron's parallel state; the others reuse it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any, Mapping, Optional

from ..eras import PARALLEL_SIZES, Era
from ._bridge import bridge_kind, bridge_view
from ._build import Build, RoleInput


def sent_dict(era: Era, given: Mapping[str, Any], cp: int) -> dict[str, Any]:
    """The dict verl hands to ``repatch`` for one build, given the dict the engine reads (``given``)."""
    args = dict(given)
    if era.adds == "fa_on":
        args["use_flash_attn"] = True
    elif era.adds == "fa_default":
        if args.get("use_flash_attn_npu_batch_invariant"):
            args["use_flash_attn"] = False
        else:
            args.setdefault("use_flash_attn", True)
    if era.adds != "nothing" and cp > 1:
        args["context_parallel_size"] = cp
    return args


@dataclass(frozen=True)
class Simulation:
    """Every role of one launch as its era builds them (see :func:`simulate`)."""

    era: Era
    builds: Mapping[str, Build]
    """role -> its build, in the order the roles were given (the config's order)."""
    order: tuple[str, ...]
    """The roles in the order verl builds them."""
    owner: Optional[str]
    """The role whose sizes initialize Megatron's parallel state."""
    world: Optional[int] = None
    """The device count the process groups span (``trainer.nnodes x trainer.n_gpus_per_node``), when known."""

    @property
    def calls(self) -> list[tuple[str, Mapping[str, Any]]]:
        """Every ``repatch`` call in build order: (role, the dict MindSpeed receives)."""
        return [(name, self.builds[name].sent) for name in self.order if self.builds[name].sent is not None]

    def receives(self) -> dict[str, Any]:
        """What MindSpeed receives build by build, as plain data (the report's ``mindspeed_receives``)."""
        return {"era": self.era.id, "builds": [
            {"role": name, "repatch": _plain(self.builds[name].sent), "namespace": _plain(self.builds[name].ns)}
            for name in self.order]}


def simulate(inputs: Mapping[str, RoleInput], era: Era, *, model: Any = None, has_repatch: bool = True,
             given: Optional[Mapping[str, Mapping[str, Any]]] = None, world: Optional[int] = None) -> Simulation:
    """Build every role of ``inputs`` the way ``era`` does, once.

    ``given`` replaces the dict a role's engine is given (the injected dicts of a launch through
    verl-mindspeed); by default each role gets its own ``given``. ``has_repatch`` is False for MindSpeed
    releases without ``repatch``: then no build hands MindSpeed anything. ``world``: the device count the
    parallel state is initialized over.
    """
    names = list(inputs)
    order = tuple(era.builds(names))
    owner = era.owner_of(names)
    groups = {k: inputs[owner].megatron.get(k) for k in PARALLEL_SIZES} if owner else {}
    dicts = {name: (given or {}).get(name, role.given) for name, role in inputs.items()}
    sent: dict[str, Optional[dict[str, Any]]] = {}
    namespaces: dict[str, dict[str, Any]] = {}
    namespace: dict[str, Any] = {}
    for name in order:
        if era.repatches(name) and has_repatch:
            source = era.dict_source(name) if era.dict_source(name) in inputs else name
            sent[name] = sent_dict(era, dicts[source], inputs[source].cp)
            namespace = {**namespace, **sent[name]}
        namespaces[name] = dict(namespace)
    builds = {}
    for name, role in inputs.items():
        base = {f.name: getattr(role, f.name) for f in fields(RoleInput)}
        builds[name] = Build(**{**base, "given": dicts[name]}, sent=sent.get(name), ns=namespaces.get(name, {}),
                             bridge=bridge_view(role.megatron, groups, model), bridge_kind=bridge_kind(role.megatron),
                             groups=groups, owner=name == owner)
    return Simulation(era, MappingProxyType(builds), order, owner, world)


def _plain(data: Optional[Mapping[str, Any]]) -> Optional[dict[str, Any]]:
    return dict(data) if data is not None else None
