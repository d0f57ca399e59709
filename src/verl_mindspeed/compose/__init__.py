"""verl's config tree + a launch's argv -> the composed DictConfig, without importing verl, torch or ray.

Composition mirrors the entry module's ``@hydra.main`` (``verl/trainer/main_ppo.py``:
``config_path="config", config_name="ppo_trainer"``; other entries are read the same way, see
:mod:`._entry`), with a command-line ``--config-path`` taken relative to the entry's folder. The tree
is the installed verl's, or another release's (``verl_version``), fetched once from PyPI (:mod:`._trees`).
A Hydra error about one override becomes an issue on that key and composition is retried without it,
so every problem is reported at once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Optional, Union

from hydra.core.override_parser.types import Override
from omegaconf import DictConfig

from .. import eras
from ..catalog import OTC
from ..errors import EvaluationError, Issue
from ..i18n import tr
from ..overrides import LaunchArgs, parse_overrides, split_argv
from ._dataclasses import DataclassIndex
from ._entry import DEFAULT_ENTRY, Entry, entry_with_config, map_foreign_path, module_file, read_entry
from ._fast import accelerated, read_yaml
from ._hydra_errors import KeyContext, issue_for_failure
from ._hydra_run import base_config, compose, culprit_of, screen, searchpath_overrides, sweep_message
from ._launchline import split_pasted
from ._trees import installed_tree, release_tree

MAX_RETRIES = 40


@dataclass
class VerlTree:
    """The verl config tree a launch is checked against and what the resolver needs from it."""

    trainer_dir: Optional[Path]
    """``verl/trainer`` of the tree, the base of ``main_ppo``'s relative ``--config-path``."""
    config_dir: Path
    """The folder whose ``<config-name>.yaml`` is composed (the entry's own, or ``--config-path``)."""
    version: str
    known_megatron_keys: set[str] = field(default_factory=set)
    otc_defaults: dict[str, Any] = field(default_factory=dict)
    root: Optional[Path] = None
    """The folder holding ``verl/`` (and ``recipe/`` in a source checkout)."""
    entry: Optional[Entry] = None
    config_name: Optional[str] = None
    """The config composed (set by :func:`compose_argv`)."""
    notes: list[Issue] = field(default_factory=list)
    """Notes about how the tree was chosen (an author's absolute ``--config-path`` mapped onto it)."""

    @property
    def trainer_config_dir(self) -> Path:
        """``verl/trainer/config``: engine defaults and the era live there, whatever the entry."""
        if self.trainer_dir is not None and (self.trainer_dir / "config").is_dir():
            return self.trainer_dir / "config"
        return self.config_dir

    @cached_property
    def dataclasses(self) -> DataclassIndex:
        return DataclassIndex(self.root)


def find_verl_tree(config_dir: Optional[str] = None, config_path: Optional[str] = None, *,
                   version: Optional[str] = None, entry: Optional[str] = None) -> VerlTree:
    """Locate the config folder to compose: ``config_dir`` if given, else the entry's folder (or
    ``config_path``) in verl ``version``'s tree (fetched once) or in the installed verl (never imported)."""
    if config_dir is not None:
        directory = Path(config_dir)
        if not directory.is_dir():
            raise EvaluationError(tr("verl config directory not found: {path}", path=directory))
        directory = Path(os.path.abspath(directory))  # not resolve(): a symlinked verl/ keeps its recipe/ siblings
        bare = not _is_trainer_config(directory) or (
            entry is None and module_file(directory.parents[2], DEFAULT_ENTRY) is None)
        if bare:  # a config folder without its entry module next to it: composed as it is
            label = tree_version(directory) or tr("config dir {path}", path=directory)
            tree = VerlTree(None, directory, label)
            tree.known_megatron_keys, tree.otc_defaults = _engine_keys(tree.trainer_config_dir)
            tree.notes.append(Issue("note", "--verl-config-dir", tr(
                "{path} has no verl sources beside it (verl/trainer/main_ppo.py, verl/workers/config): the keys verl's "
                "config dataclasses refuse at start-up (TypeError) are not checked; give the config folder of a verl "
                "checkout or installation", path=directory), rule="bare-config-dir"))
            return tree
        root = directory.parents[2]
        label = tree_version(directory) or tr("config dir {path}", path=directory)
    elif version is not None:
        root, label = release_tree(version)
    else:
        found = installed_tree()
        if found is None:
            raise EvaluationError(tr("verl is not installed in this Python; install it, pass --verl-version "
                                     "to check against a release from PyPI, or pass --verl-config-dir pointing "
                                     "at verl/trainer/config"))
        root, label = found
    tree = VerlTree(root / "verl" / "trainer", root / "verl" / "trainer" / "config", label, root=root)
    tree.entry = read_entry(root, entry or DEFAULT_ENTRY, label)
    tree.config_dir = _config_folder(tree, config_path)
    tree.known_megatron_keys, tree.otc_defaults = _engine_keys(tree.trainer_config_dir)
    return tree


def _is_trainer_config(directory: Path) -> bool:
    return directory.name == "config" and directory.parent.name == "trainer" and directory.parents[1].name == "verl"


def _config_folder(tree: VerlTree, config_path: Optional[str]) -> Path:
    assert tree.entry is not None and tree.root is not None
    if not config_path:
        return tree.entry.config_dir
    path = Path(config_path)
    if not path.is_absolute():
        path = (tree.entry.file.parent / path).resolve()
    if path.is_dir():
        return path
    mapped = map_foreign_path(tree.root, config_path) if Path(config_path).is_absolute() else None
    if mapped is None:
        raise EvaluationError(tr("verl config directory not found: {path}", path=path))
    tree.notes.append(Issue(
        "note", "--config-path", tr("{path} does not exist here; checked against verl {version}'s {folder}",
                                    path=config_path, version=tree.version, folder=mapped.relative_to(tree.root)),
        rule="config-path-mapped"))
    return mapped


def tree_version(config_dir: Union[str, Path]) -> Optional[str]:
    """The version of the verl package a ``verl/trainer/config`` directory belongs to, if it says so."""
    parents = Path(config_dir).resolve().parents
    if len(parents) < 2:  # a directory right under the root holds no verl package
        return None
    try:
        text = (parents[1] / "version" / "version").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return text or None


def era_of_tree(config_dir: Union[str, Path]) -> str:
    """The verl era of a config tree: from ``verl/version/version`` if present, else from its layout.

    Layout markers (verified on 0.6.1, 0.7.1, 0.8.0, 0.9.1): ``model_engine/megatron.yaml``
    appears in 0.8.0 together with the per-engine repatch. ValueError for a tree before verl 0.6.
    """
    version = tree_version(config_dir)
    if version is not None:
        return eras.era_of(version)
    return eras.ENGINE if (Path(config_dir) / "model_engine" / "megatron.yaml").is_file() else eras.LEGACY


def _engine_keys(config_dir: Path) -> tuple[set[str], dict[str, Any]]:
    """Keys verl accepts under ``<role>.megatron`` and its default dict, read from the YAML files."""
    keys: set[str] = set()
    defaults: dict[str, Any] = {}
    candidates = [config_dir / "engine" / "megatron.yaml"]
    for group in ("actor", "ref", "critic"):
        candidates += sorted((config_dir / group).glob("*megatron*.yaml"))
    for path in candidates:
        if not path.is_file():
            continue
        data = read_yaml(path)
        node = data if path.parent.name == "engine" else data.get("megatron")
        if not isinstance(node, dict):
            continue
        keys |= {k for k in node if k != "_target_"} | ({"_target_"} if "_target_" in node else set())
        if isinstance(node.get(OTC), dict) and not defaults:
            defaults = dict(node[OTC])
    return keys, defaults


@dataclass
class Composition:
    cfg: DictConfig
    tree: VerlTree
    config_name: str
    overrides: list[str]
    """The overrides that composed (failed ones removed)."""
    issues: list[Issue]
    """Problems Hydra reported about single overrides, and notes on the tree."""
    parsed: list[Override] = field(default_factory=list)
    """``overrides`` as Hydra's parser reads them (parsed once, for every later reader)."""


def compose_argv(argv: list[str], verl_config_dir: Optional[str] = None, *, verl_version: Optional[str] = None,
                 entry: Optional[str] = None) -> Composition:
    """Compose verl's config for a launch argv; raises :class:`EvaluationError` when that is impossible.

    ``verl_version`` checks against that release's tree instead of the installed verl's; ``entry`` is the
    module the argv is given to (default ``verl.trainer.main_ppo``). YAML is read at C speed and each override
    parsed once (:mod:`._fast`); the result is Hydra's.
    """
    with accelerated():
        return _compose_argv(argv, verl_config_dir, verl_version, entry)


def _compose_argv(argv: list[str], verl_config_dir: Optional[str], verl_version: Optional[str],
                  entry: Optional[str]) -> Composition:
    if verl_config_dir and verl_version:
        raise EvaluationError(tr("--verl-config-dir and --verl-version choose the tree two ways; give one"))
    args: LaunchArgs = split_argv(argv)
    # Hydra's --config-dir adds a folder to the search path; the primary folder stays --config-path's.
    added = tuple(d for d in [args.config_dir] if d)
    for folder in added:
        if not Path(folder).is_dir():
            raise EvaluationError(tr("verl config directory not found: {path}", path=folder))
    tree = find_verl_tree(verl_config_dir, args.config_path, version=verl_version, entry=entry)
    name = args.config_name or (tree.entry.config_name if tree.entry else None) or "ppo_trainer"
    primary = next((d / f"{name}.yaml" for d in [tree.config_dir, *map(Path, added)] if (d / f"{name}.yaml").is_file()),
                   tree.config_dir / f"{name}.yaml")
    if not primary.is_file():
        options = sorted(p.stem for p in tree.config_dir.glob("*.yaml"))
        other = entry_with_config(tree.root, name) if tree.root is not None and entry is None else None
        if other is not None:
            raise EvaluationError(tr("config name {name!r} is the config of {module}, not of {default}: check with "
                                     "--entry {module}, or give the launch script itself to --args-file", name=name,
                                     module=other, default=tree.entry.module if tree.entry else DEFAULT_ENTRY))
        raise EvaluationError(tr("config name {name!r} not found in {folder}; available: {options}",
                                 name=name, folder=tree.config_dir, options=", ".join(options)))
    tree.config_name = name
    context = KeyContext(tree.version, name, tree.dataclasses)
    parsed = parse_overrides(args.overrides)
    issues: list[Issue] = list(tree.notes)
    remaining = list(zip(args.overrides, parsed))
    for override_text, override in list(remaining):
        if override.is_sweep_override():
            issues.append(issue_for_failure(sweep_message(override_text), override, None, context))
            remaining.remove((override_text, override))
    # Hydra's compose API reads the primary config from its main folder only: a primary config found in an added
    # folder makes that folder the main one, and the tree's folder joins the search path in its place.
    main = primary.parent
    if main != tree.config_dir:
        added = (str(tree.config_dir), *(d for d in added if Path(d).resolve() != main.resolve()))
    extra = searchpath_overrides(tree.root, primary, added)
    base: Optional[DictConfig] = None
    for attempt in range(MAX_RETRIES):
        try:
            cfg = compose(main, name, [t for t, _ in remaining] + extra)
            return Composition(cfg, tree, name, [t for t, _ in remaining], issues, [o for _, o in remaining])
        except EvaluationError:
            raise
        except Exception as exc:  # hydra.errors.* and omegaconf errors
            if attempt == 0:
                # Hydra stops at the first bad override: find the others in one pass against the config
                # the top-level overrides (groups such as model_engine=..., presets) compose, then retry.
                base = base_config(main, name, remaining, extra)
                screened = screen(base, remaining)
                for culprit, message in screened:
                    remaining.remove(culprit)
                    issues.append(issue_for_failure(message, culprit[1], base, context))
                if screened:
                    continue
            culprit = culprit_of(str(exc), remaining)
            if culprit is None:
                raise EvaluationError(tr("Hydra could not compose the config: {error}", error=exc)) from exc
            remaining.remove(culprit)
            issues.append(issue_for_failure(str(exc), culprit[1], base, context))
    raise EvaluationError(tr("gave up after {n} failing overrides", n=MAX_RETRIES))


__all__ = ["Composition", "DEFAULT_ENTRY", "VerlTree", "compose_argv", "era_of_tree", "find_verl_tree", "split_pasted",
           "split_argv", "tree_version"]
