"""What verl's own config and code say about a key a log names: the value verl gives it, the releases that have it,
the rollout engines it builds, the engine arguments its rollout settings become.

Read from the verl the checks use (the installed one, or ``--verl-version``'s tree): the config is composed as
``check`` composes it, the rollout registry is read from ``verl/workers/rollout/base.py`` without importing verl.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

from ..catalog import verl_keys
from ..errors import EvaluationError

#: A value no fix line can carry: Hydra's mandatory marker, or a node rather than a leaf.
_NO_VALUE = ("???",)


@lru_cache(maxsize=8)
def _tree(verl_version: Optional[str]):
    from ..compose import compose_argv

    try:
        return compose_argv(["--config-name=ppo_megatron_trainer"], verl_version=verl_version)
    except (EvaluationError, OSError):
        return None


def source_root(verl_version: Optional[str] = None) -> Optional[Path]:
    """The folder holding the ``verl`` package whose config the doctor reads (None when none is at hand)."""
    found = _tree(verl_version)
    return found.tree.root if found is not None else None


def release(verl_version: Optional[str] = None) -> Optional[str]:
    """The verl release whose config the doctor reads (None when none is at hand)."""
    found = _tree(verl_version)
    return str(found.tree.version) if found is not None else None


def _holder(key: str, verl_version: Optional[str] = None) -> tuple[Any, str]:
    """(the section of verl's config that holds ``key``, its last name); the section is None when the config (or
    the section) lacks the key."""
    from omegaconf import DictConfig, OmegaConf

    found = _tree(verl_version)
    node, _, leaf = key.rpartition(".")
    parent = (OmegaConf.select(found.cfg, node) if node else found.cfg) if found is not None else None
    return (parent if isinstance(parent, DictConfig) and leaf in parent else None), leaf


def default(key: str, verl_version: Optional[str] = None) -> Optional[Any]:
    """The scalar value verl's own config gives ``key`` (None when the config lacks it, it is mandatory, a node, or
    an interpolation of another key)."""
    from omegaconf import DictConfig, ListConfig, OmegaConf

    parent, leaf = _holder(key, verl_version)
    if parent is None:
        return None
    if OmegaConf.is_interpolation(parent, leaf) or OmegaConf.is_missing(parent, leaf):
        return None
    value = parent[leaf]
    if isinstance(value, (DictConfig, ListConfig)) or value in _NO_VALUE or value is None:
        return None
    return value


def sections_of(cls: str, verl_version: Optional[str] = None, derived: bool = False) -> tuple[str, ...]:
    """The config sections verl converts into the dataclass named ``cls`` (their ``_target_``), the actor's first:
    ``HFModelConfig`` -> ``actor_rollout_ref.model``, ... With ``derived``, into a class derived from it as well
    (``ActorConfig`` -> the actor's and the ref's ``McoreActorConfig``), read from the classes' sources."""
    from ..compose._dataclasses import ancestors

    root = source_root(verl_version)
    return tuple(section for section, target in _targets(verl_version) if target.rsplit(".", 1)[-1] == cls
                 or (derived and root is not None and cls in ancestors(root, target)))


def releases_with(key: str) -> tuple[str, ...]:
    """The verl releases whose Megatron trainer config has ``key`` (empty when none of the index has it)."""
    spec = verl_keys._data()["keys"].get(key)
    return verl_keys.expand(spec) if spec else ()


@lru_cache(maxsize=8)
def rollout_engines(verl_version: Optional[str] = None) -> tuple[str, ...]:
    """The rollout names verl's registry builds (``_ROLLOUT_REGISTRY`` in ``verl/workers/rollout/base.py``), in
    the registry's order; empty when that file is not at hand."""
    root = source_root(verl_version)
    if root is None:
        return ()
    path = root / "verl" / "workers" / "rollout" / "base.py"
    try:
        module = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return ()
    for node in ast.walk(module):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "_ROLLOUT_REGISTRY" for t in targets):
                names = [k.elts[0].value if isinstance(k, ast.Tuple) else getattr(k, "value", None)
                         for k in node.value.keys]
                return tuple(dict.fromkeys(n for n in names if isinstance(n, str)))
    return ()


def _rollout_reads(node: ast.AST, aliases: dict[str, str]) -> Optional[str]:
    """The rollout setting an expression is: ``self.config.x`` (any ``*.config.x``), or a local bound to one."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "config":
        return node.attr
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    return None


@lru_cache(maxsize=8)
def engine_arguments(verl_version: Optional[str] = None) -> dict[str, str]:
    """Engine argument -> the rollout key verl passes as it (``tensor_parallel_size`` ->
    ``actor_rollout_ref.rollout.tensor_model_parallel_size``, SGLang's ``mem_fraction_static`` ->
    ``...gpu_memory_utilization``): the dict entries and keywords of verl's rollout servers whose value is a setting
    of the rollout config, or a local bound to one (``infer_tp``). Empty when those files are not at hand."""
    root = source_root(verl_version)
    if root is None:
        return {}
    keys = verl_keys._data()["keys"]
    out: dict[str, str] = {}
    for path in sorted((root / "verl" / "workers" / "rollout").glob("*/*.py")):
        try:
            module = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        for function in (n for n in ast.walk(module) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            aliases = {t.id: read for n in ast.walk(function) if isinstance(n, ast.Assign)
                       for read in [_rollout_reads(n.value, {})] if read for t in n.targets if isinstance(t, ast.Name)}
            pairs = [(k.value, v) for n in ast.walk(function) if isinstance(n, ast.Dict)
                     for k, v in zip(n.keys, n.values) if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            pairs += [(kw.arg, kw.value) for n in ast.walk(function) if isinstance(n, ast.Call)
                      for kw in n.keywords if kw.arg]
            for name, value in pairs:
                read = _rollout_reads(value, aliases)
                if read and f"actor_rollout_ref.rollout.{read}" in keys:
                    out.setdefault(name, f"actor_rollout_ref.rollout.{read}")
    return out


@lru_cache(maxsize=8)
def _targets(verl_version: Optional[str] = None) -> tuple[tuple[str, str], ...]:
    """(section, the class name of its ``_target_``) for every section of verl's config that verl converts."""
    from omegaconf import DictConfig

    found = _tree(verl_version)
    out: list[tuple[str, str]] = []

    def walk(node, path: str) -> None:
        target = node.get("_target_") if isinstance(node, DictConfig) else None
        if target:
            out.append((path, str(target)))
        for key in node.keys() if isinstance(node, DictConfig) else ():
            if isinstance(node._get_node(key), DictConfig):
                walk(node._get_node(key), f"{path}.{key}" if path else str(key))

    if found is not None:
        walk(found.cfg, "")
    return tuple(sorted(out, key=lambda st: (not st[0].startswith("actor_rollout_ref."), ".ref." in f"{st[0]}.",
                                             len(st[0]), st[0])))


_ALIAS = re.compile(r"\$\{(?:oc\.select:)?(?P<ref>\.*[\w.]+)(?:,[^}]*)?\}")


@lru_cache(maxsize=256)
def written_as(key: str, verl_version: Optional[str] = None) -> str:
    """The key a user writes for ``key``: where verl's config makes it a copy of another
    (``rollout.prompt_length: ${oc.select:data.max_prompt_length,512}``), that one, followed to its end; else ``key``.
    A reference within the section (``${oc.select:.ppo_micro_batch_size,null}``) is a legacy name, not followed."""
    from omegaconf import OmegaConf

    seen = {key}
    while True:
        parent, leaf = _holder(key, verl_version)
        if parent is None or not OmegaConf.is_interpolation(parent, leaf):
            break
        hit = _ALIAS.fullmatch(str(parent._get_node(leaf)._value()))
        if hit is None:
            break
        target = hit.group("ref")  # a relative one (".ppo_micro_batch_size") is the section's own legacy name
        if target.startswith(".") or target in seen or target not in verl_keys._data()["keys"]:
            break
        seen.add(target)
        key = target
    return key


__all__ = ["default", "engine_arguments", "release", "releases_with", "rollout_engines",
           "sections_of", "written_as"]
