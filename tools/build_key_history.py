#!/usr/bin/env python3
"""Build ``src/verl_mindspeed/catalog/data/verl_keys.json``: verl's config keys across releases.

    python tools/build_key_history.py            # fetch what is missing from PyPI, rebuild, write
    python tools/build_key_history.py --check    # exit 1 when the shipped index differs from a rebuild

For every release (``RELEASES``; each wheel fetched once into the cache, see ``tools/fetch_verl_trees.py``)
it composes, with Hydra and the same code as ``verl-mindspeed check``:

* ``ppo_megatron_trainer`` (entry ``verl.trainer.main_ppo``): every key path, with the releases it exists in;
* the variants in ``VARIANTS`` (``model_engine=mindspeed``, where the release has the option): the key paths
  they add to ``ppo_megatron_trainer``;
* the ``*megatron*`` configs of the other Megatron entry points the release ships (found by their
  ``@hydra.main``): the key paths they add;
* the options of each config group folder of ``verl/trainer/config``;
* moves: a key that disappears from a section that stays, while the section has a key of the same name one
  level or more deeper, in exactly one place (``actor.router_replay`` -> ``actor.megatron.router_replay``);
  for a section, at least half of its children must be alike.

Lists and interpolations are leaves. Nothing in the output is hand-written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

try:
    from verl_mindspeed.compose import _trees
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from verl_mindspeed.compose import _trees

from omegaconf import OmegaConf

from verl_mindspeed.catalog.verl_keys import compress
from verl_mindspeed.compose import compose_argv
from verl_mindspeed.compose._entry import megatron_entries, read_entry

OUT = Path(__file__).resolve().parents[1] / "src/verl_mindspeed/catalog/data/verl_keys.json"
RELEASES = ("0.4.1", "0.5.0", "0.6.0", "0.6.1", "0.7.0", "0.7.1", "0.8.0", "0.9.0", "0.9.1")
BASE = ("verl.trainer.main_ppo", "ppo_megatron_trainer")
#: Group options whose keys the index records, with the overrides that select them.
VARIANTS = {"model_engine=mindspeed": ("model_engine", "mindspeed")}


def flatten(node, prefix: str = "") -> set[str]:
    out: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            out.add(path)
            out |= flatten(value, path)
    return out


def compose_keys(version: str, entry: str, name: str, overrides: list[str]) -> set[str]:
    comp = compose_argv([f"--config-name={name}", *overrides], verl_version=version, entry=entry)
    problems = [i for i in comp.issues if i.severity == "error"]
    if problems:
        raise RuntimeError(f"verl {version} {entry} {name} {overrides}: {[str(i.message) for i in problems]}")
    return flatten(OmegaConf.to_container(comp.cfg, resolve=False))


def release_data(version: str) -> dict:
    root = _trees.fetch_tree(version)
    config = root / "verl" / "trainer" / "config"
    base = compose_keys(version, *BASE, [])
    data = {"base": base, "configs": {}, "groups": {}}
    for folder in sorted(p for p in config.iterdir() if p.is_dir()):
        data["groups"][folder.name] = sorted(p.stem for p in folder.glob("*.yaml"))
    for label, (group, option) in VARIANTS.items():
        if option in data["groups"].get(group, []):
            keys = compose_keys(version, *BASE, [f"{group}={option}"])
            data["configs"][label] = {"entry": BASE[0], "config": BASE[1], "overrides": [f"{group}={option}"],
                                      "keys": keys - base}
    entries = {_folder_of(root, e): e for e in megatron_entries(root) if e != BASE[0]}
    for folder in sorted(p.parent for p in (root / "verl").rglob("config/*megatron*.yaml")):
        if folder == config or folder.name != "config":
            continue
        entry = entries.get(folder, "")  # 0.7.1 ships the experimental configs without their entry modules
        for path in sorted(folder.glob("*megatron*.yaml")):
            keys = compose_keys(version, entry or BASE[0], path.stem, [f"--config-path={folder}"])
            data["configs"][path.stem] = {"entry": entry, "config": path.stem, "overrides": [], "keys": keys - base}
    return data


def _folder_of(root: Path, entry: str) -> Path:
    return read_entry(root, entry, "?").config_dir


def find_moves(per_release: dict[str, set[str]], order: list[str]) -> dict[str, dict[str, str]]:
    moves: dict[str, dict[str, str]] = {}
    for before, after in zip(order, order[1:]):
        gone = per_release[before] - per_release[after]
        new_keys = per_release[after]
        for key in sorted(gone):
            parent, _, leaf = key.rpartition(".")
            if not parent or parent not in new_keys or any(key.startswith(m + ".") for m in moves):
                continue
            candidates = [k for k in new_keys if k.rpartition(".")[2] == leaf and k.startswith(parent + ".")
                          and not k.startswith(key + ".")]
            if len(candidates) != 1:  # none, or several places (one profiler became one per role): no move
                continue
            best = candidates[0]
            if not _alike(per_release[before], key, new_keys, best):
                continue
            moves[key] = {"to": best, "in": after}
    return moves


def _alike(old_keys: set[str], old: str, new_keys: set[str], new: str) -> bool:
    old_children = {k[len(old) + 1:] for k in old_keys if k.startswith(old + ".")}
    new_children = {k[len(new) + 1:] for k in new_keys if k.startswith(new + ".")}
    if not old_children and not new_children:
        return True
    return len(old_children & new_children) * 2 >= max(len(old_children), 1)


def build(releases=RELEASES) -> dict:
    order = list(releases)
    per = {v: release_data(v) for v in order}
    keys: dict[str, list[str]] = {}
    for v in order:
        for k in per[v]["base"]:
            keys.setdefault(k, []).append(v)
    configs: dict[str, dict] = {}
    for v in order:
        for label, info in per[v]["configs"].items():
            entry = configs.setdefault(label, {"entry": info["entry"], "config": info["config"],
                                               "overrides": info["overrides"], "releases": [], "keys": {}})
            entry["releases"].append(v)
            entry["entry"] = info["entry"] or entry["entry"]  # the newest release that ships the entry module
            for k in info["keys"]:
                entry["keys"].setdefault(k, []).append(v)
    groups: dict[str, dict[str, list[str]]] = {}
    for v in order:
        for group, options in per[v]["groups"].items():
            for option in options:
                groups.setdefault(group, {}).setdefault(option, []).append(v)
    return {
        "generated_by": "tools/build_key_history.py",
        "releases": order,
        "keys": {k: compress(r, order) for k, r in sorted(keys.items())},
        "configs": {label: {**{k: v for k, v in c.items() if k != "keys"}, "releases": compress(c["releases"], order),
                            "keys": {k: compress(r, order) for k, r in sorted(c["keys"].items())}}
                    for label, c in sorted(configs.items())},
        "groups": {g: {o: compress(r, order) for o, r in sorted(opts.items())} for g, opts in sorted(groups.items())},
        "moves": find_moves({v: per[v]["base"] for v in order}, order),
    }


def render(data: dict) -> str:
    return json.dumps(data, indent=0, sort_keys=False, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped index instead of writing it")
    ns = parser.parse_args(argv)
    text = render(build())
    if ns.check:
        same = OUT.is_file() and OUT.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{OUT} differs from a rebuild: run tools/build_key_history.py")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
