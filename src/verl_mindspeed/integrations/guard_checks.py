"""What the runtime guard compares, as plain functions over plain data (no torch, megatron, MindSpeed or verl).

:mod:`.guard` reads the live state in a worker and hands it here; the unit tests call these directly.
Sizes are dicts keyed by megatron's argument names (``tensor_model_parallel_size``...); a role is
``actor``, ``ref`` or ``critic`` (inferred from the engine: value model -> critic, forward-only -> ref).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from ..i18n import Msg, tr

#: The sizes ``initialize_model_parallel`` takes from an engine config, with their short names.
SIZES = {
    "tensor_model_parallel_size": "TP",
    "pipeline_model_parallel_size": "PP",
    "virtual_pipeline_model_parallel_size": "VPP",
    "context_parallel_size": "CP",
    "expert_model_parallel_size": "EP",
    "expert_tensor_parallel_size": "ETP",
}
#: megatron's getter of each live size (``megatron.core.parallel_state``).
GETTERS = {
    "tensor_model_parallel_size": "get_tensor_model_parallel_world_size",
    "pipeline_model_parallel_size": "get_pipeline_model_parallel_world_size",
    "virtual_pipeline_model_parallel_size": "get_virtual_pipeline_model_parallel_world_size",
    "context_parallel_size": "get_context_parallel_world_size",
    "expert_model_parallel_size": "get_expert_model_parallel_world_size",
    "expert_tensor_parallel_size": "get_expert_tensor_parallel_world_size",
}
#: Where each role's sizes live in verl's config (the same as ``catalog.ROLE_PREFIXES``).
SECTIONS = {
    "actor": "actor_rollout_ref.actor.megatron",
    "ref": "actor_rollout_ref.ref.megatron",
    "critic": "critic.megatron",
}


class GuardError(RuntimeError):
    """A role's engine would run with another layout or other MindSpeed switches than its config asked for."""


@dataclass(frozen=True)
class Owner:
    """Who initialized megatron's parallel state in this process, and with which sizes."""

    role: Optional[str]
    """The role whose engine made the call; ``None`` when no verl engine was being built."""
    sizes: dict[str, Any]


def role_of(model_type: Optional[str], forward_only: bool) -> str:
    """The role an engine serves, from what the engine itself knows."""
    if model_type == "value_model":
        return "critic"
    return "ref" if forward_only else "actor"


def asked_sizes(read: Callable[[str], Any]) -> dict[str, Any]:
    """A role's sizes, ``read(name)`` giving the engine config's value; an unset ETP means TP (megatron's rule)."""
    sizes = {name: read(name) for name in SIZES}
    for name in ("pipeline_model_parallel_size", "context_parallel_size", "expert_model_parallel_size"):
        sizes[name] = sizes[name] or 1
    sizes["tensor_model_parallel_size"] = sizes["tensor_model_parallel_size"] or 1
    if sizes["expert_tensor_parallel_size"] is None:
        sizes["expert_tensor_parallel_size"] = sizes["tensor_model_parallel_size"]
    return sizes


def live_sizes(getter: Callable[[str], Optional[Callable[[], Any]]]) -> dict[str, Any]:
    """The process's sizes, ``getter(name)`` giving megatron's function (or ``None`` when it has none)."""
    out = {}
    for name, function in GETTERS.items():
        fn = getter(function)
        if fn is not None:
            out[name] = fn()
    return out


def _pairs(sizes: Mapping[str, Any], names) -> str:
    return ", ".join(f"{SIZES[n]}={sizes.get(n)}" for n in names)


def layout_mismatch(role: str, asked: Mapping[str, Any], live: Mapping[str, Any],
                    owner: Optional[Owner]) -> Optional[Msg]:
    """The message when the live parallel state is not the layout ``role`` asked for; ``None`` when it is."""
    differ = [n for n in SIZES if n in live and asked.get(n) != live[n]]
    tp, etp = "tensor_model_parallel_size", "expert_tensor_parallel_size"
    if tp in differ and etp in differ and asked.get(etp) == asked.get(tp) and live.get(etp) == live.get(tp):
        differ.remove(etp)  # ETP follows TP unless set: the TP fix fixes it too
    if not differ:
        return None
    want, got = _pairs(asked, differ), _pairs(live, differ)
    if owner is None or owner.role is None:
        return tr("{role} asked for {asked} but the process groups were already built with {live} before any "
                  "verl engine of this process; verl builds them once per process", role=role, asked=want, live=got)
    if owner.role == role:
        return tr("{role} asked for {asked} but megatron built the process groups with {live}",
                  role=role, asked=want, live=got)
    fix = " ".join(f"{SECTIONS[owner.role]}.{n}={asked.get(n)}" for n in differ)
    return tr("{role} asked for {asked} but the process groups were built with {live} by the {owner}, which was "
              "built first (verl builds them once per process): set {fix}",
              role=role, asked=want, live=got, owner=owner.role, fix=fix)


_ABSENT = object()


def _fmt(key: str, value: Any) -> str:
    return f"{key}=<absent>" if value is _ABSENT else f"{key}={getattr(value, 'name', value)!s}"


def namespace_mismatch(role: str, sent: Mapping[str, Any], namespace: Mapping[str, Any]) -> Optional[Msg]:
    """The message when MindSpeed's namespace does not hold what ``role``'s repatch handed it; else ``None``."""
    differ = [k for k, v in sent.items() if namespace.get(k, _ABSENT) != v]
    if not differ:
        return None
    return tr("{role}: after its repatch MindSpeed's namespace holds {found}, but verl handed MindSpeed {asked}",
              role=role, found=", ".join(_fmt(k, namespace.get(k, _ABSENT)) for k in differ),
              asked=", ".join(_fmt(k, sent[k]) for k in differ))


def _switch(a: Any, b: Any) -> bool:
    """Only on/off switches are reported across roles: sizes, lists and recompute settings are per-role config."""
    return a != b and (isinstance(a, bool) or isinstance(b, bool))


def switch_notes(role: str, sent: Mapping[str, Any], namespace: Mapping[str, Any],
                 before: Mapping[str, Any], earlier: Mapping[str, Mapping[str, Any]]) -> list[Msg]:
    """Warnings after ``role``'s repatch: switches an earlier role set that this build changed for the whole
    process, and switches this role runs with only because an earlier build set them.

    ``before`` is MindSpeed's namespace before the first repatch; ``earlier`` maps each role built before
    (in order) to the dict its repatch received.
    """
    notes = []
    for other, args in earlier.items():
        changed = [k for k, v in args.items() if k in sent and _switch(v, sent[k])]
        if changed:
            notes.append(tr("the {earlier} asked for {asked}, but the {role}'s repatch set {now} for the whole "
                            "process (MindSpeed's patches are process-wide; the last build wins)", earlier=other,
                            role=role, asked=", ".join(_fmt(k, args[k]) for k in changed),
                            now=", ".join(_fmt(k, sent[k]) for k in changed)))
    carried = sorted(k for k, v in namespace.items()
                     if k not in sent and _switch(before.get(k, _ABSENT), v) and isinstance(v, bool))
    if carried:
        notes.append(tr("{role} runs with {keys} although its dict does not set them: an earlier build's repatch set "
                        "them and MindSpeed's namespace keeps them", role=role,
                        keys=", ".join(_fmt(k, namespace[k]) for k in carried)))
    return notes


def passed(role: str, live: Mapping[str, Any]) -> Msg:
    return tr("{role} runs with the layout it asked for ({sizes})", role=role,
              sizes=_pairs(live, [n for n in live if live[n] is not None]))


__all__ = ["GETTERS", "GuardError", "Owner", "SECTIONS", "SIZES", "asked_sizes", "layout_mismatch", "live_sizes",
           "namespace_mismatch", "passed", "role_of", "switch_notes"]
