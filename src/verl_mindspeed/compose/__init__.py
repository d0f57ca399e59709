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
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Optional, Union

from hydra.core.override_parser.types import Override
from omegaconf import DictConfig

from .. import eras
from ..catalog import OTC
from ..errors import EvaluationError, Issue
from ..i18n import tr
from ..overrides import LaunchArgs, parse_each, split_argv
from ..resolver._suggest import edit_distance, nearest
from ._choices import choice_issues
from ._dataclasses import DataclassIndex
from ._entry import DEFAULT_ENTRY, Entry, EntryNotFound, entry_with_config, map_foreign_path, module_file, read_entry
from ._fast import accelerated, read_yaml
from ._hydra_errors import KeyContext, issue_for_failure, unparsable_issue
from ._hydra_run import base_config, compose, culprit_of, screen, searchpath_overrides, sweep_message
from ._late import late_issues
from ._launchline import split_pasted
from ._memo import ComposeMemo, disk_cache
from ._router import router_issues
from ._standin import MEGATRON_BASE, RECIPES, StandIn, base_of, source_root, unchecked
from ._trees import installed_tree, release_tree
from ._types import type_issues

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
    recipe_dir: Optional[Path] = None
    """Where the ``recipe`` package lives when ``--verl-source`` gives a verl-recipe checkout."""
    standin: Optional[StandIn] = None
    """Set when the launch's entry or config is not in the tree and a verl config it extends is composed instead."""

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
                   version: Optional[str] = None, entry: Optional[str] = None,
                   source: Optional[str] = None) -> VerlTree:
    """Locate the config folder to compose: ``config_dir`` if given, else the entry's folder (or
    ``config_path``) in the ``source`` checkout (``--verl-source``: verl's, or a verl-recipe checkout over the
    tree chosen otherwise), verl ``version``'s tree (fetched once) or the installed verl (never imported). An
    entry the tree lacks is stood in for by the verl config it extends (:mod:`._standin`)."""
    recipe = None
    if source is not None:
        if config_dir is not None:
            raise EvaluationError(tr("--verl-source and --verl-config-dir choose the tree two ways; give one"))
        checkout, recipe = source_root(source)
        if checkout is None and recipe is None:
            raise EvaluationError(tr("--verl-source {path} holds neither verl/trainer/config (a verl checkout) nor "
                                     "recipe entries (a verl-recipe checkout)", path=source))
        if checkout is not None:
            if version is not None:
                raise EvaluationError(tr("--verl-source {path} is a verl checkout and --verl-version names another "
                                         "tree; give one", path=source))
            config_dir = None
    if source is not None and checkout is not None:
        root = checkout
        label = tree_version(root / "verl" / "trainer" / "config") or tr("source {path}", path=root)
    elif config_dir is not None:
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
    tree = VerlTree(root / "verl" / "trainer", root / "verl" / "trainer" / "config", label, root=root,
                    recipe_dir=recipe)
    try:
        tree.entry = read_entry(root, entry or DEFAULT_ENTRY, label, recipe)
    except EntryNotFound:
        if source is not None:
            raise EvaluationError(tr("entry module {module} is in neither verl {version} nor --verl-source {path}",
                                     module=entry, version=label, path=source)) from None
        assert entry is not None
        stand = read_entry(root, DEFAULT_ENTRY, label)
        tree.entry = replace(stand, module=entry, validates="fully_async" not in entry)
        tree.standin = StandIn(entry, RECIPES.get(entry), MEGATRON_BASE, "entry")
        if config_path and not (Path(config_path).is_absolute() and Path(config_path).is_dir()):
            config_path = None  # relative to the missing entry's folder, or the author's own machine
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
                 entry: Optional[str] = None, verl_source: Optional[str] = None) -> Composition:
    """Compose verl's config for a launch argv; raises :class:`EvaluationError` when that is impossible.

    ``verl_version`` checks against that release's tree instead of the installed verl's; ``entry`` is the
    module the argv is given to (default ``verl.trainer.main_ppo``); ``verl_source`` a verl or verl-recipe
    checkout whose entries and configs compose as verl composes them. YAML is read at C speed and each override
    parsed once (:mod:`._fast`); the result is Hydra's.
    """
    with accelerated():
        return _compose_argv(argv, verl_config_dir, verl_version, entry, verl_source)


def _compose_argv(argv: list[str], verl_config_dir: Optional[str], verl_version: Optional[str],
                  entry: Optional[str], verl_source: Optional[str] = None) -> Composition:
    if verl_config_dir and verl_version:
        raise EvaluationError(tr("--verl-config-dir and --verl-version choose the tree two ways; give one"))
    args: LaunchArgs = split_argv(argv)
    # Hydra's --config-dir adds a folder to the search path; the primary folder stays --config-path's.
    added = tuple(d for d in [args.config_dir] if d)
    for folder in added:
        if not Path(folder).is_dir():
            raise EvaluationError(tr("verl config directory not found: {path}", path=folder))
    tree = find_verl_tree(verl_config_dir, args.config_path, version=verl_version, entry=entry, source=verl_source)
    name, primary, config_issues = _primary(tree, args, added, entry)
    tree.config_name = name
    context = KeyContext(tree.version, name, tree.dataclasses)
    remaining, refused = parse_each(args.overrides)
    issues: list[Issue] = [*tree.notes, *config_issues]
    if tree.standin is not None:
        issues.append(tree.standin.note(tree.version))
    issues += [unparsable_issue(text, error, args.overrides, at) for at, text, error in refused]
    failed = lambda message, override, at: unchecked(  # noqa: E731
        issue_for_failure(message, override, at, context), tree.standin)
    # a sweep is judged against the config the other overrides compose (a key it lacks needs '+' in the line)
    sweeps = [(text, override) for text, override in remaining if override.is_sweep_override()]
    remaining = [item for item in remaining if item not in sweeps]
    # Hydra's compose API reads the primary config from its main folder only: a primary config found in an added
    # folder makes that folder the main one, and the tree's folder joins the search path in its place.
    main = primary.parent
    if main != tree.config_dir:
        added = (str(tree.config_dir), *(d for d in added if Path(d).resolve() != main.resolve()))
    extra = searchpath_overrides(tree.root, primary, added)
    base: Optional[DictConfig] = None
    # verl's tree composed once: a retry after a refused override applies the others to a copy of it (Hydra's own
    # application), where composing again would read every YAML file again
    composer = compose if isinstance(compose, ComposeMemo) else ComposeMemo(compose, strict=True, disk=disk_cache())
    for attempt in range(MAX_RETRIES):
        try:
            cfg = composer(main, name, [t for t, _ in remaining] + extra)
            issues += [failed(sweep_message(text), override, cfg) for text, override in sweeps]
            written = [o for _, o in remaining]
            issues += type_issues(composer.defaults, cfg, written, stand_in=tree.standin is not None)
            module = tree.standin.module if tree.standin else (tree.entry.module if tree.entry else None)
            issues += choice_issues(tree.version, module, cfg, written)
            issues += router_issues(tree.version, module, cfg, written)
            issues += late_issues(tree.version, module, cfg, written)
            return Composition(cfg, tree, name, [t for t, _ in remaining], issues, written)
        except EvaluationError:
            raise
        except Exception as exc:  # hydra.errors.* and omegaconf errors
            if attempt == 0:
                # Hydra stops at the first bad override: find the others in one pass against the config
                # the top-level overrides (groups such as model_engine=..., presets) compose, then retry.
                base = base_config(main, name, remaining, extra, composer)
                screened = screen(base, remaining)
                for culprit, message in screened:
                    remaining.remove(culprit)
                    issues.append(failed(message, culprit[1], base))
                if screened:
                    continue
            culprit = culprit_of(str(exc), remaining)
            if culprit is None:
                raise EvaluationError(tr("Hydra could not compose the config: {error}", error=exc)) from exc
            remaining.remove(culprit)
            issues.append(failed(str(exc), culprit[1], base))
    raise EvaluationError(tr("gave up after {n} failing overrides", n=MAX_RETRIES))


def _primary(tree: VerlTree, args: LaunchArgs, added: tuple[str, ...],
             entry: Optional[str]) -> tuple[str, Path, list[Issue]]:
    """The config to compose and its file. A name the tree lacks is a near miss (an error with the name meant,
    composed in its place), another entry's config (check with that entry), or a config the tree does not have:
    the verl config it extends stands in for it."""
    asked = args.config_name or (tree.entry.config_name if tree.entry else None) or "ppo_trainer"
    if tree.standin is not None:  # the entry's own name when known; main_ppo's says nothing about it
        asked = args.config_name or tree.standin.config_name
    folders = [tree.config_dir, *map(Path, added)]
    found = next((d / f"{asked}.yaml" for d in folders if (d / f"{asked}.yaml").is_file()), None) if asked else None
    if found is not None:
        if tree.standin is not None:  # the recipe's launch names a verl config: composed as it is
            tree.standin = replace(tree.standin, config_name=asked, base=asked)
        return asked, found, []
    options = sorted(p.stem for p in tree.config_dir.glob("*.yaml") if not p.stem.startswith("_"))
    other = entry_with_config(tree.root, asked) if tree.root is not None and entry is None else None
    if other is not None and tree.standin is None:
        raise EvaluationError(tr("config name {name!r} is the config of {module}, not of {default}: check with "
                                 "--entry {module}, or give the launch script itself to --args-file", name=asked,
                                 module=other, default=tree.entry.module if tree.entry else DEFAULT_ENTRY))
    near = nearest(asked, options) if tree.standin is None else None
    if near is not None and edit_distance(asked, near) > 2:  # a longer name is a new config, not a typo
        near = None
    if near is not None:
        issue = Issue("error", "--config-name", tr("config name {name!r} not found in {folder}; did you mean {near!r}? "
                                                   "(checked as {near})", name=asked, folder=tree.config_dir,
                                                   near=near),
                      tr("available: {options}", options=", ".join(options)), suggestion=near,
                      rule="config-name-unknown", override=f"--config-name={near}")
        return near, tree.config_dir / f"{near}.yaml", [issue]
    base = base_of(asked, tree.standin.module if tree.standin else None, args.overrides, options)
    module = tree.standin.module if tree.standin else (tree.entry.module if tree.entry else DEFAULT_ENTRY)
    tree.standin = StandIn(module, asked, base, tree.standin.missing if tree.standin else "config")
    return base, tree.config_dir / f"{base}.yaml", []


__all__ = ["Composition", "DEFAULT_ENTRY", "VerlTree", "compose_argv", "era_of_tree", "find_verl_tree", "split_pasted",
           "split_argv", "tree_version"]
