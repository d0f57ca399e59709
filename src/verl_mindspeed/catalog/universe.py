"""Every key a role's ``override_transformer_config`` may legitimately hold.

The universe is the union of: the catalogue's flags and aliases; megatron-core's
``TransformerConfig``/``MLATransformerConfig`` fields (live from the installed
megatron-core when it is already imported or importable cheaply, otherwise the
snapshot in ``data/known_keys.json``); Megatron-LM's training arguments; and the
arguments MindSpeed registers, per release branch. Refresh the snapshot with
``tools/refresh_known_keys.py``.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from typing import Optional

from .._version import release_tuple
from . import aliases, flag, flags
from ._data import read_json

#: MindSpeed release the checks target when none is given (newest known release branch).
DEFAULT_RELEASE = "26.1.0_core_r0.12.1"


@lru_cache(maxsize=None)
def _data() -> dict:
    return read_json("known_keys.json")


@lru_cache(maxsize=None)
def stack_facts() -> dict:
    """The stack layers' facts generated from the packages (``data/stacks.json``, ``tools/refresh_stack_facts.py``):
    megatron-core's config fields per line, Megatron-Bridge's and mbridge's requirements and provider values."""
    return read_json("stacks.json")


def core_line_fields() -> dict[str, frozenset[str]]:
    """megatron-core release -> the fields of its ``TransformerConfig`` (with ``ModelParallelConfig``'s) and
    ``MLATransformerConfig``, for every line here (0.12.1, 0.16.1, 0.17.1, 0.18.2)."""
    return {v: frozenset(d["fields"]) | frozenset(d["mla_fields"]) for v, d in stack_facts()["megatron_core"].items()}


@lru_cache(maxsize=None)
def arguments() -> dict[str, dict]:
    """Every argument MindSpeed (any release here) or Megatron-LM's training registers, by destination: its
    ``action``, ``type``, ``choices`` and ``default`` as the newest source that has it gives them."""
    out: dict[str, dict] = {}
    for group in [*_data()["megatron_training"].values(), *_data()["mindspeed"].values()]:
        out.update(group["args"])
    return out


@lru_cache(maxsize=None)
def mindspeed_arguments() -> frozenset[str]:
    """The destinations of every argument MindSpeed registers (any release here): what verl's repatch hands
    MindSpeed from ``override_transformer_config`` as it stands."""
    return frozenset(dest for group in _data()["mindspeed"].values() for dest in group["args"])


@lru_cache(maxsize=None)
def switches() -> frozenset[str]:
    """The arguments a flag alone turns on or off (``store_true`` or ``store_false``)."""
    return frozenset(dest for dest, spec in arguments().items() if spec.get("action") in ("store_true", "store_false"))


def releases() -> list[str]:
    """MindSpeed release branches known to the snapshot."""
    return list(_data()["mindspeed"])


def core_line(release: str) -> tuple[int, int]:
    """The megatron-core line a MindSpeed release branch runs on: ``*_core_r0.12.1`` -> (0, 12);
    ``core_r0.16.0`` -> (0, 16). ``master`` (commit 028de58, 2026-07) runs on megatron-core 0.12.1: its imports
    fail on 0.16.1 (``legacy_a2a_token_dispatcher``), as the conformance oracle shows."""
    tail = release.rsplit("core_r", 1)[-1] if "core_r" in release else "0.12"
    parts = tail.split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return 0, 16


def has_repatch(release: str) -> bool:
    """Whether the release's ``mindspeed/megatron_adaptor.py`` has ``repatch`` (added in 2.2.0; verl's
    ``ImportError`` fallback then ignores every dict switch on 2.1.0)."""
    return not release.startswith("2.1.")


def canonical_release(text: str) -> Optional[str]:
    """The release branch a user means: ``26.1``, ``26.1.0`` or the full branch name; ``None`` if unknown.

    ``0.16``/``core_r0.16`` name the core_r0.16.0 branch.
    """
    text = str(text).strip()
    known = releases()
    if text in known:
        return text
    for name in known:
        head = name.split("_", 1)[0]
        if text in (head, head.rsplit(".", 1)[0] if head.count(".") == 2 and head.endswith(".0") else head):
            return name
    for name in known:
        if name.startswith("core_r") and text in (name[len("core_r"):], name[len("core_r"):].rsplit(".", 1)[0],
                                                  "core_r" + name[len("core_r"):].rsplit(".", 1)[0]):
            return name
    return None


def installed_release() -> tuple[Optional[str], Optional[str]]:
    """(release branch, what was found) of a MindSpeed installed in this Python, without importing it.

    MindSpeed is installed from source; its distribution version names the release on the release
    branches (``2.3.0``, ``26.1.0``...). Nothing installed, or a version that names no known branch:
    ``(None, description)``, and the checks keep their default release.
    """
    import importlib.metadata
    import importlib.util

    try:
        if importlib.util.find_spec("mindspeed") is None:
            return None, None
    except (ImportError, ValueError):
        return None, None
    try:
        version = importlib.metadata.version("mindspeed")
    except importlib.metadata.PackageNotFoundError:
        return None, "mindspeed (no distribution metadata)"
    return canonical_release(version), f"mindspeed {version}"


def installed_core_line() -> Optional[tuple[int, int]]:
    """The megatron-core line installed in this Python, from its distribution metadata."""
    import importlib.metadata

    try:
        parts = release_tuple(importlib.metadata.version("megatron-core"))
    except importlib.metadata.PackageNotFoundError:
        return None
    return (parts + (0,))[:2] if parts else None


def mindspeed_args(release: Optional[str] = None) -> dict[str, dict]:
    """Arguments MindSpeed registers: for one release, or the union of all releases."""
    ms = _data()["mindspeed"]
    if release is not None:
        return ms[release]["args"]
    out: dict[str, dict] = {}
    for rel in ms.values():
        out.update(rel["args"])
    return out


def megatron_training_args() -> dict[str, dict]:
    out: dict[str, dict] = {}
    for rel in _data()["megatron_training"].values():
        out.update(rel["args"])
    return out


def transformer_config_fields() -> tuple[frozenset[str], str]:
    """(fields, source) of megatron-core's TransformerConfig and MLATransformerConfig.

    Live from the installed megatron-core when there is one: from the classes if the
    module is already loaded (inside a training process), else read from its source
    files without importing it (importing pulls in torch, which takes seconds). The
    snapshot in ``data/known_keys.json`` and the fields of every megatron-core line in ``data/stacks.json`` are
    always included, so a key that is a field on any stack here is known (whether it is one on the stack judged is
    the key check's business).
    """
    snap = _data()["transformer_config"]
    fields = set(snap["fields"]) | set(snap["mla_fields"])
    for line in core_line_fields().values():
        fields |= line
    source = f"snapshot of megatron-core {snap['megatron_core_version']}"
    tc_mod = sys.modules.get("megatron.core.transformer.transformer_config")
    if tc_mod is not None:
        import dataclasses

        for cls_name in ("TransformerConfig", "MLATransformerConfig"):
            cls = getattr(tc_mod, cls_name, None)
            if cls is not None and dataclasses.is_dataclass(cls):
                fields |= {f.name for f in dataclasses.fields(cls)}
        return frozenset(fields), "megatron-core (loaded) + " + source
    parsed = _installed_source_fields()
    if parsed:
        return frozenset(fields | parsed[0]), f"megatron-core {parsed[1]} (installed source) + {source}"
    return frozenset(fields), source


_CONFIG_FILES = {
    "transformer/transformer_config.py": ("TransformerConfig", "MLATransformerConfig"),
    "model_parallel_config.py": ("ModelParallelConfig",),
}


@lru_cache(maxsize=None)
def _installed_source_fields() -> Optional[tuple[frozenset[str], str]]:
    """Annotated fields of megatron-core's config dataclasses, parsed from the installed sources."""
    import ast
    import importlib.metadata
    import importlib.util
    from pathlib import Path

    try:
        spec = importlib.util.find_spec("megatron.core")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(list(spec.submodule_search_locations)[0])
    fields: set[str] = set()
    for rel, classes in _CONFIG_FILES.items():
        path = root / rel
        if not path.is_file():
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name in classes:
                fields |= {st.target.id for st in node.body
                           if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)}
    try:
        version = importlib.metadata.version("megatron-core")
    except importlib.metadata.PackageNotFoundError:
        version = "?"
    return (frozenset(fields), version) if fields else None


@lru_cache(maxsize=None)
def known_otc_keys() -> frozenset[str]:
    """The whole universe of legal ``override_transformer_config`` keys (aliases included)."""
    tc, _ = transformer_config_fields()
    keys = set(tc) | set(megatron_training_args()) | set(mindspeed_args())
    keys |= {f.name for f in flags()} | set(aliases())
    return frozenset(keys)


def origin(key: str) -> str:
    """Which universe a key comes from, for messages."""
    if key in {f.name for f in flags("otc")}:
        return "catalogue"
    tc, _ = transformer_config_fields()
    if key in tc:
        return "TransformerConfig"
    if key in mindspeed_args():
        return "MindSpeed"
    if key in megatron_training_args():
        return "Megatron-LM training args"
    return "unknown"


def is_process_wide(key: str) -> bool:
    """A MindSpeed switch: a catalogue flag marked so, or a key only MindSpeed registers (patches are process-wide,
    so roles sharing a process share it)."""
    found = flag(key, "otc")
    if found is not None:
        return found.process_wide
    tc, _ = transformer_config_fields()
    return key in mindspeed_args() and key not in tc


def process_wide_items(otc: dict) -> dict:
    """The MindSpeed switches of a dict."""
    return {k: v for k, v in otc.items() if is_process_wide(k)}

