"""The stack a launch runs on: verl x the model bridge's package x megatron-core x MindSpeed.

Every verdict is judged on one stack, and every report names it. Each layer is *found* (installed in this Python
next to MindSpeed, so this is the host that runs, or its image), *given* (an option), or *assumed* (derived from
the layers above it, so that the stack can actually start the launch). Which path builds a role's config
(Megatron-Bridge, mbridge or verl's converter) is the launch's choice (``megatron.use_mbridge`` and
``megatron.vanilla_mbridge``, :mod:`verl_mindspeed.simulate`); the stack says which of those packages exist and
in which version.

The facts of each layer are generated from the packages (``tools/refresh_stack_facts.py`` writes
``catalog/data/stacks.json``): megatron-core's config fields and defaults per line, Megatron-Bridge's requirements,
provider fields and fusion values per HF architecture, and the line of MindSpeed core_r0.17/0.18 that imports
``megatron_adaptor``. Which megatron-core line a Megatron-Bridge release imports with was established by running
the imports (:data:`BRIDGE_CORE_LINES`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ._version import release_tuple
from .catalog import universe

FOUND, GIVEN, ASSUMED = "found", "given", "assumed"

#: megatron-core lines each Megatron-Bridge minor release imports with. 0.3: its metadata (``<0.17.0,>=0.15.0a0``)
#: and its import run here on 0.16.1 and on 0.12.1, where ``models/conversion/model_bridge.py:39`` stops with
#: ``ModuleNotFoundError: megatron.core.activations`` (``tests/integration/test_stack_imports.py``); 0.4 to 0.6:
#: their imports run on CPU (the upstream manifest's notes): 0.4.x needs 0.17, 0.5.x and 0.6.x need 0.18.
BRIDGE_CORE_LINES: dict[tuple[int, int], tuple[tuple[int, int], ...]] = {
    (0, 3): ((0, 15), (0, 16)), (0, 4): ((0, 17),), (0, 5): ((0, 18),), (0, 6): ((0, 18),)}
#: The Megatron-Bridge release assumed for a megatron-core line (the newest whose facts are generated here).
BRIDGE_FOR_LINE = {(0, 15): "0.3.1", (0, 16): "0.3.1", (0, 17): "0.4.2", (0, 18): "0.5.1"}
MBRIDGE_DEFAULT = "0.15.1"
#: First Megatron-Bridge release whose provider refuses an override it has no attribute for.
BRIDGE_REFUSES_UNKNOWN = (0, 5)
#: The MindSpeed release assumed for a launch whose roles build through Megatron-Bridge when none is given or
#: installed: the newest here whose megatron-core line a Megatron-Bridge release imports with and that imports
#: without ``megatron_adaptor`` (core_r0.17.0 and core_r0.18.0 need it, a package published nowhere we install from).
BRIDGE_DEFAULT_RELEASE = "core_r0.16.0"
#: MindSpeed releases whose ``mindspeed/__init__.py`` imports ``megatron_adaptor``.
ADAPTOR_RELEASES = ("core_r0.17.0", "core_r0.18.0")


def facts() -> dict[str, Any]:
    """The generated facts (``catalog/data/stacks.json``)."""
    return universe.stack_facts()


def line_of(version: Optional[str]) -> Optional[tuple[int, int]]:
    parts = release_tuple(version) if version else None
    return (parts + (0,))[:2] if parts else None


def core_version(line: tuple[int, int]) -> str:
    """The megatron-core release whose facts stand for a line (``(0, 18)`` -> ``0.18.2``)."""
    known = [v for v in facts()["megatron_core"] if line_of(v) == line]
    return known[-1] if known else f"{line[0]}.{line[1]}"


def core_facts(version: str) -> Optional[dict[str, Any]]:
    """Fields and defaults of megatron-core's config classes for the line of ``version``."""
    data = facts()["megatron_core"]
    if version in data:
        return data[version]
    line = line_of(version)
    same = [v for v in data if line_of(v) == line]
    return data[same[-1]] if same else None


def bridge_facts(version: Optional[str]) -> Optional[dict[str, Any]]:
    """Megatron-Bridge's facts for the release of ``version`` (the nearest generated release of its minor line)."""
    if not version:
        return None
    data = facts()["megatron_bridge"]
    if version in data:
        return data[version]
    same = [v for v in data if line_of(v) == line_of(version)]
    return data[same[-1]] if same else None


def provider_fields(core: str, bridge: Optional[str], mla: bool) -> frozenset[str]:
    """The attributes of Megatron-Bridge's provider on this stack: megatron-core's config fields (the MLA ones on
    an MLA model's provider only) and the bridge's own provider fields."""
    data, bridged = core_facts(core), bridge_facts(bridge)
    out = set(data["fields"]) | (set(data["mla_fields"]) if mla else set()) if data else set()
    return frozenset(out | set(bridged["provider_fields"] if bridged else ()))


def argument_namespace(release: str) -> frozenset[str]:
    """MindSpeed's argument namespace for a release: Megatron-LM's training arguments and MindSpeed's own (what its
    ``__init_subclass__`` patch gives the config's subclasses, where the release has it)."""
    return frozenset(universe.megatron_training_args()) | frozenset(universe.mindspeed_args(release))


def bridge_imports_with(bridge: str, core: str) -> bool:
    """Whether a Megatron-Bridge release imports with a megatron-core release (unknown minor lines: assumed so)."""
    lines = BRIDGE_CORE_LINES.get(line_of(bridge) or (0, 0))
    return lines is None or line_of(core) in lines


def lines_with_field(name: str) -> list[str]:
    """The megatron-core releases here whose config classes have ``name``."""
    return [v for v, fields in universe.core_line_fields().items() if name in fields]


def line_fields(version: str) -> frozenset[str]:
    """The config fields of the megatron-core line of ``version`` (empty when no line here matches)."""
    data = core_facts(version)
    return frozenset(data["fields"]) | frozenset(data["mla_fields"]) if data else frozenset()


@dataclass(frozen=True)
class Stack:
    """One stack: each layer's version and how it was learnt (:data:`FOUND`, :data:`GIVEN`, :data:`ASSUMED`)."""

    verl: str
    mindspeed: str
    """The MindSpeed release branch, e.g. ``26.1.0_core_r0.12.1``."""
    megatron_core: str
    megatron_bridge: Optional[str]
    """The Megatron-Bridge release on the host; ``None`` when there is none (none imports with the line)."""
    mbridge: Optional[str]
    source: dict[str, str] = field(default_factory=dict)
    """Layer -> found, given or assumed."""
    adaptor: Optional[bool] = None
    """Whether ``megatron_adaptor`` imports here (``None``: not looked for; only a found MindSpeed needs it)."""

    @property
    def core_line(self) -> tuple[int, int]:
        return line_of(self.megatron_core) or universe.core_line(self.mindspeed)

    @property
    def assumed(self) -> list[str]:
        return [k for k, v in self.source.items() if v == ASSUMED]

    def bridge_refuses_unknown(self) -> bool:
        return (line_of(self.megatron_bridge) or (0, 0)) >= BRIDGE_REFUSES_UNKNOWN

    def bridge_usable(self) -> bool:
        """Whether the host has a Megatron-Bridge that imports with its megatron-core."""
        return self.megatron_bridge is not None and bridge_imports_with(self.megatron_bridge, self.megatron_core)

    def describe(self) -> str:
        bridge = f"Megatron-Bridge {self.megatron_bridge}" if self.megatron_bridge else "no Megatron-Bridge"
        mb = f"mbridge {self.mbridge}" if self.mbridge else "no mbridge"
        return (f"verl {self.verl} · {bridge} · {mb} · megatron-core {self.megatron_core} · "
                f"MindSpeed {self.mindspeed}")

    def to_json(self) -> dict[str, Any]:
        return {"verl": self.verl, "megatron_bridge": self.megatron_bridge, "mbridge": self.mbridge,
                "megatron_core": self.megatron_core, "mindspeed": self.mindspeed, "source": dict(self.source),
                "megatron_adaptor": self.adaptor}


def installed(dist: str) -> Optional[str]:
    """The version of an installed distribution, without importing it."""
    import importlib.metadata

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def parse_bridge_option(text: str) -> dict[str, Optional[str]]:
    """``--bridge``: ``megatron-bridge==0.5.1``, ``mbridge==0.15.1``, ``megatron-bridge=none`` or ``none`` (no
    bridge package on the host), comma-separated; ValueError on anything else."""
    out: dict[str, Optional[str]] = {}
    for part in (p.strip() for p in str(text).split(",") if p.strip()):
        if part == "none":
            out.update({"megatron-bridge": None, "mbridge": None})
            continue
        name, sep, version = part.replace("==", "=").partition("=")
        name = name.strip().lower().replace("_", "-")
        if name not in ("megatron-bridge", "mbridge") or not sep:
            raise ValueError(part)
        version = version.strip()
        if version == "none":
            out[name] = None
        elif release_tuple(version) is None:
            raise ValueError(part)
        else:
            out[name] = version
    if not out:
        raise ValueError(text)
    return out


def build_stack(verl: str, release: str, release_source: str, *, core: Optional[str] = None,
                bridges: Optional[dict[str, Optional[str]]] = None) -> Stack:
    """The stack for a MindSpeed release: layers given by option, else found next to an installed MindSpeed, else
    assumed from the release's megatron-core line."""
    source = {"verl": FOUND, "mindspeed": release_source}
    on_host = release_source == FOUND  # MindSpeed installed here: the other layers are read here too
    if core:
        source["megatron_core"] = GIVEN
    elif on_host and installed("megatron-core"):
        core, source["megatron_core"] = installed("megatron-core"), FOUND
    else:
        core, source["megatron_core"] = core_version(universe.core_line(release)), ASSUMED
    bridges = dict(bridges or {})
    versions: dict[str, Optional[str]] = {}
    for dist in ("megatron-bridge", "mbridge"):
        if dist in bridges:
            versions[dist], source[dist] = bridges[dist], GIVEN
        elif on_host:
            versions[dist], source[dist] = installed(dist), FOUND
        else:
            line = line_of(core)
            guess = BRIDGE_FOR_LINE.get(line) if dist == "megatron-bridge" else MBRIDGE_DEFAULT
            versions[dist], source[dist] = guess, ASSUMED
    adaptor = None
    if on_host and release in ADAPTOR_RELEASES:
        import importlib.util

        adaptor = importlib.util.find_spec("megatron_adaptor") is not None
    return Stack(verl=verl, mindspeed=release, megatron_core=core, megatron_bridge=versions["megatron-bridge"],
                 mbridge=versions["mbridge"], source=source, adaptor=adaptor)


__all__ = ["ADAPTOR_RELEASES", "ASSUMED", "BRIDGE_DEFAULT_RELEASE", "FOUND", "GIVEN", "Stack", "line_fields",
           "argument_namespace", "bridge_facts", "bridge_imports_with", "build_stack", "core_facts", "facts",
           "lines_with_field", "parse_bridge_option", "provider_fields"]
