"""verl's config tree + a launch's argv -> the composed DictConfig, without importing verl, torch or ray.

Composition mirrors ``verl/trainer/main_ppo.py``: ``@hydra.main(config_path="config",
config_name="ppo_trainer")``, with a command-line ``--config-path`` taken relative to
``verl/trainer/``. A Hydra error about one override becomes an issue on that key and
composition is retried without it, so every problem is reported at once.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from omegaconf import DictConfig, OmegaConf

from ..catalog import OTC
from ..errors import EvaluationError, Issue
from ._argv import LaunchArgs, parse_overrides, split_argv
from ._hydra_errors import issue_for_failure

MAX_RETRIES = 20


@dataclass
class VerlTree:
    """The installed (or given) verl config tree and what the resolver needs from it."""

    trainer_dir: Optional[Path]
    """``verl/trainer`` of the installed verl, the base of a relative ``--config-path``."""
    config_dir: Path
    version: str
    known_megatron_keys: set[str] = field(default_factory=set)
    otc_defaults: dict[str, Any] = field(default_factory=dict)


def find_verl_tree(config_dir: Optional[str] = None, config_path: Optional[str] = None) -> VerlTree:
    """Locate verl's config directory: ``config_dir`` if given, else the installed verl (never imported)."""
    trainer_dir, version = None, "unknown"
    if config_dir is None:
        spec = importlib.util.find_spec("verl")
        if spec is None or not spec.submodule_search_locations:
            raise EvaluationError(
                "verl is not installed in this Python; install it or pass --verl-config-dir "
                "pointing at verl/trainer/config"
            )
        trainer_dir = Path(list(spec.submodule_search_locations)[0]) / "trainer"
        try:
            version = importlib.metadata.version("verl")
        except importlib.metadata.PackageNotFoundError:
            pass
        path = Path(config_path or "config")
        directory = path if path.is_absolute() else trainer_dir / path
    else:
        directory = Path(config_dir)
        version = tree_version(directory) or f"config dir {directory}"
    if not directory.is_dir():
        raise EvaluationError(f"verl config directory not found: {directory}")
    tree = VerlTree(trainer_dir, directory.resolve(), version)
    tree.known_megatron_keys, tree.otc_defaults = _engine_keys(tree.config_dir)
    return tree


def tree_version(config_dir: Union[str, Path]) -> Optional[str]:
    """The version of the verl package a ``verl/trainer/config`` directory belongs to, if it says so."""
    path = Path(config_dir).resolve().parents[1] / "version" / "version"
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return text or None


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
        data = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
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
    """Problems Hydra reported about single overrides."""


def compose_argv(argv: list[str], verl_config_dir: Optional[str] = None) -> Composition:
    """Compose verl's config for a launch argv; raises :class:`EvaluationError` when that is impossible."""
    args: LaunchArgs = split_argv(argv)
    tree = find_verl_tree(verl_config_dir or args.config_dir, args.config_path)
    name = args.config_name or "ppo_trainer"
    if not (tree.config_dir / f"{name}.yaml").is_file():
        options = sorted(p.stem for p in tree.config_dir.glob("*.yaml"))
        raise EvaluationError(f"config name {name!r} not found in {tree.config_dir}; available: {', '.join(options)}")
    parsed = parse_overrides(args.overrides)
    issues: list[Issue] = []
    remaining = list(zip(args.overrides, parsed))
    for override_text, override in list(remaining):
        if override.is_sweep_override():
            issues.append(issue_for_failure(_sweep_message(override_text), override, None))
            remaining.remove((override_text, override))
    for _ in range(MAX_RETRIES):
        try:
            cfg = _compose(tree.config_dir, name, [t for t, _ in remaining])
            return Composition(cfg, tree, name, [t for t, _ in remaining], issues)
        except EvaluationError:
            raise
        except Exception as exc:  # hydra.errors.* and omegaconf errors
            culprit = _culprit(str(exc), remaining)
            if culprit is None:
                raise EvaluationError(f"Hydra could not compose the config: {exc}") from exc
            remaining.remove(culprit)
            base = _try_compose(tree.config_dir, name, [t for t, _ in remaining])
            issues.append(issue_for_failure(str(exc), culprit[1], base))
    raise EvaluationError(f"gave up after {MAX_RETRIES} failing overrides")


def _compose(config_dir: Path, name: str, overrides: list[str]) -> DictConfig:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(config_dir), version_base=None):
            return compose(config_name=name, overrides=overrides)
    finally:
        GlobalHydra.instance().clear()


def _try_compose(config_dir: Path, name: str, overrides: list[str]) -> Optional[DictConfig]:
    try:
        return _compose(config_dir, name, overrides)
    except Exception:  # noqa: BLE001 - only used to look up near-miss keys
        return None


def _culprit(message: str, remaining: list) -> Optional[tuple]:
    """The override a Hydra error message is about: the longest key quoted in the message."""
    best = None
    for text, override in remaining:
        names = {override.key_or_group, text, text.lstrip("+~")}
        if any(f"'{n}" in message for n in names) and (best is None or len(text) > len(best[0])):
            best = (text, override)
    return best


def _sweep_message(text: str) -> str:
    return f"Ambiguous value for argument '{text}'"


__all__ = ["Composition", "VerlTree", "compose_argv", "find_verl_tree", "split_argv", "tree_version"]
