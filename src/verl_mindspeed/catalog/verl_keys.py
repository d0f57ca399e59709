"""verl's config keys across releases, from the generated index ``data/verl_keys.json``.

The index holds, for every key path of verl's composed Megatron trainer config
(``ppo_megatron_trainer``, entry ``verl.trainer.main_ppo``), the releases it exists in; the extra keys of
``model_engine=mindspeed`` (verl 0.8-0.9.0's MindSpeed-LLM engine) and of the other Megatron entry points'
configs; the options of config groups; and the keys that moved. ``tools/build_key_history.py`` writes it
from each release's wheel (one command; a test fails when it drifts). Release sets are written
``"0.4.1-0.9.0"`` (a run of consecutive releases) joined by commas.

:func:`explain` answers "why does this release not have this key" for one path.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

from .._version import release_tuple
from ..i18n import Msg, joined, tr
from ._data import read_json

BASE = "ppo_megatron_trainer"


@lru_cache(maxsize=None)
def _data() -> dict:
    return read_json("verl_keys.json", missing={"releases": [], "keys": {}, "configs": {}, "groups": {}, "moves": {}})


def releases() -> tuple[str, ...]:
    """Every release the index was built from, oldest first."""
    return tuple(_data()["releases"])


def version_key(text: str) -> Optional[tuple[int, ...]]:
    """``"0.9.1"`` -> ``(0, 9, 1)``; ``"0.9.1.dev0"`` -> ``(0, 9, 1)``; None when it is not a version."""
    return release_tuple(text)


def expand(spec: str) -> tuple[str, ...]:
    """``"0.4.1-0.6.1,0.8.0"`` -> the releases it names, in order."""
    order = releases()
    out: list[str] = []
    for part in filter(None, spec.split(",")):
        first, _, last = part.partition("-")
        i, j = order.index(first), order.index(last or first)
        out += order[i:j + 1]
    return tuple(out)


def compress(names, order) -> str:
    """The inverse of :func:`expand` over the release list ``order``."""
    index = sorted(order.index(n) for n in set(names))
    runs: list[list[int]] = []
    for i in index:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ",".join(order[r[0]] if len(r) == 1 else f"{order[r[0]]}-{order[r[-1]]}" for r in runs)


def span(names: tuple[str, ...]) -> Msg:
    """Releases for a message, in the reader's language: ``0.4.1 to 0.9.0``, ``0.9.1``, ``0.4.1 to 0.6.1, 0.8.0``."""
    parts = []
    for run in compress(names, releases()).split(","):  # at least one run
        first, _, last = run.partition("-")
        parts.append(tr("{first} to {last}", first=first, last=last) if last else tr("{release}", release=first))
    return joined(parts, ",")


def base_releases(path: str) -> tuple[str, ...]:
    """Releases whose ``ppo_megatron_trainer`` has ``path``."""
    spec = _data()["keys"].get(path)
    return expand(spec) if spec else ()


def config_releases(label: str, path: str) -> tuple[str, ...]:
    """Releases in which the config ``label`` (a variant or an entry's config) adds ``path``."""
    spec = _data()["configs"].get(label, {}).get("keys", {}).get(path)
    return expand(spec) if spec else ()


def configs() -> dict[str, dict]:
    """Label -> {"entry", "config", "overrides", "releases", "keys"} for every non-base config of the index."""
    return _data()["configs"]


def group_options(group: str) -> dict[str, tuple[str, ...]]:
    """Option -> releases, for a config group of ``verl/trainer/config`` such as ``model_engine``."""
    return {k: expand(v) for k, v in _data()["groups"].get(group, {}).items()}


def move_of(path: str) -> Optional[tuple[str, str]]:
    """(new path, release that has only the new one) when ``path`` or an ancestor of it moved."""
    moves = _data()["moves"]
    parts = path.split(".")
    for n in range(len(parts), 0, -1):
        head = ".".join(parts[:n])
        if head in moves:
            rest = parts[n:]
            return ".".join([moves[head]["to"], *rest]), moves[head]["in"]
    return None


@dataclass(frozen=True)
class Explanation:
    """Why a release lacks a key path, from the index."""

    kind: str
    """``moved``, ``removed`` (only in older releases), ``added`` (only in newer ones), ``elsewhere``
    (releases on both sides), ``config`` (this release has it in ``ppo_megatron_trainer``, not in the config
    being checked), ``variant`` (only with a group option such as ``model_engine=mindspeed``, which this release
    lacks), ``select`` (that group option exists here but the launch does not select it) or ``entry`` (only in
    another entry point's config)."""
    anchor: str
    """The first missing segment of the path (the key itself, or the ancestor that does not exist)."""
    releases: tuple[str, ...]
    target: str = ""
    """``moved``: the full new path."""
    since: str = ""
    """``moved``: the first release with only the new path; ``added``/``removed``: the boundary release."""
    label: str = ""
    """``variant``: e.g. ``model_engine=mindspeed``; ``entry``: the config name."""
    entry: str = ""


def explain(anchor: str, version: str, config_name: str = BASE) -> Optional[Explanation]:
    """Why verl ``version`` (checked with ``config_name``) has no ``anchor``, or None when the index never saw it."""
    here = version_key(version)
    found = base_releases(anchor)
    moved = move_of(anchor)
    if moved is not None and here is not None and here >= (version_key(moved[1]) or ()):
        return Explanation("moved", anchor, found, target=moved[0], since=moved[1])
    if found:
        keys = [version_key(r) for r in found]
        if here is None or any(k == here for k in keys):
            kind = "config" if here is not None and config_name != BASE else "elsewhere"
            return Explanation(kind, anchor, found)
        if all(k < here for k in keys):
            return Explanation("removed", anchor, found, since=found[-1])
        if all(k > here for k in keys):
            return Explanation("added", anchor, found, since=found[0])
        return Explanation("elsewhere", anchor, found)
    for label, info in configs().items():
        spec = info.get("keys", {}).get(anchor)
        if not spec or label == config_name:
            continue
        found = expand(spec)
        variant = bool(info.get("overrides"))
        if here is not None and variant and any(version_key(r) == here for r in found):
            return Explanation("select", anchor, found, label=label, entry=info.get("entry", ""))
        if here is not None and variant and version in expand(info.get("releases", "")):
            keys = [version_key(r) for r in found]  # the engine is there, this key of it is not
            kind = "removed" if all(k < here for k in keys) else "added" if all(k > here for k in keys) else "elsewhere"
            return Explanation(kind, anchor, found, since=found[-1] if kind == "removed" else found[0])
        return Explanation("variant" if variant else "entry", anchor, found, label=label, entry=info.get("entry", ""))
    return None


__all__ = ["BASE", "Explanation", "base_releases", "compress", "config_releases", "configs", "expand",
           "explain", "group_options", "move_of", "releases", "span", "version_key"]
