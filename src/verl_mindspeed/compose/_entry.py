"""verl's entry modules, read with ``ast`` (never imported): which config folder and name each one composes.

``python3 -m verl.trainer.main_ppo`` runs ``@hydra.main(config_path="config", config_name="ppo_trainer")``;
the experimental entries (``verl.experimental.one_step_off_policy.main_ppo``,
``verl.experimental.fully_async_policy.fully_async_main``) and recipes (``recipe.dapo.main_dapo`` in a
source checkout) declare their own folder and name the same way. Hydra resolves ``config_path`` and a
command-line ``--config-path`` against the folder of the entry module.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Iterator, Optional

from ..errors import EvaluationError
from ..i18n import tr

DEFAULT_ENTRY = "verl.trainer.main_ppo"


def entry_severity(entry: Optional[str]) -> str:
    """What a release-read verdict on verl's own settings is through ``entry``: an error through ``main_ppo`` (the
    path read), a warning through another entry (a recipe may register or route it its own way)."""
    return "error" if (entry or DEFAULT_ENTRY) == DEFAULT_ENTRY else "warning"


@dataclass(frozen=True)
class Entry:
    module: str
    file: Path
    config_dir: Path
    """The entry's own ``config_path``, resolved against the module's folder."""
    config_name: Optional[str]
    """The entry's own ``config_name`` (what composes without ``--config-name``)."""
    validates: bool = True
    """Whether the entry calls verl's ``validate_config`` in its driver (``main_ppo`` does, the fully-async
    entry does not)."""


class EntryNotFound(EvaluationError):
    """The entry module is not in the tree (a recipe, a patched verl's entry, a newer release's)."""


def module_file(root: Path, module: str, recipe: Optional[Path] = None) -> Optional[Path]:
    """The source file of a dotted module inside a tree (``a.b`` -> ``a/b.py`` or ``a/b/__init__.py``); a
    ``recipe.*`` module is looked up in ``recipe`` (a verl-recipe checkout) first when one is given."""
    bases = [root.joinpath(*module.split("."))]
    if recipe is not None and module.startswith("recipe."):
        bases.insert(0, recipe.joinpath(*module.split(".")[1:]))
    for base in bases:
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def read_entry(root: Path, module: str, version: str, recipe: Optional[Path] = None) -> Entry:
    """The ``@hydra.main`` arguments of ``module`` in the tree at ``root`` (``recipe``: where the ``recipe``
    package lives, when not under ``root``); EntryNotFound without the module, EvaluationError without an entry."""
    path = module_file(root, module, recipe)
    if path is None:
        known = ", ".join(megatron_entries(root)) or "-"
        hint = tr(" (recipes are not part of verl's wheel: check against a verl source checkout that has them)") \
            if module.startswith("recipe.") else ""
        raise EntryNotFound(tr("entry module {module} is not part of verl {version}{hint}; Megatron entries there: "
                               "{known}", module=module, version=version, hint=hint, known=known))
    tree = _parse(path)
    found = _hydra_main(tree) if tree is not None else None
    if found is None:
        raise EvaluationError(tr("{module} ({path}) declares no @hydra.main entry", module=module, path=path))
    config_path, config_name = found
    return Entry(module, path, resolve_config_path(root, path.parent, config_path), config_name,
                 validates=_calls(tree, "validate_config"))


def resolve_config_path(root: Path, module_dir: Path, config_path: Optional[str]) -> Path:
    """Hydra's reading of a ``config_path``: ``pkg://a.b`` inside the tree, ``file://`` or absolute as is,
    anything else relative to the entry module's folder."""
    if not config_path:
        return module_dir
    if config_path.startswith("pkg://"):
        return root.joinpath(*config_path[len("pkg://"):].split("."))
    if config_path.startswith("file://"):
        config_path = config_path[len("file://"):]
    path = Path(config_path)
    return path if path.is_absolute() else (module_dir / path).resolve()


def map_foreign_path(root: Path, path: str) -> Optional[Path]:
    """An author's absolute config folder that does not exist here (``/home/me/verl/verl/trainer/config``),
    mapped onto the same folder of the tree being checked: the longest tail that exists under ``root``."""
    parts = PurePosixPath(path).parts
    for start in range(1, len(parts)):
        if parts[start] not in ("verl", "recipe"):
            continue
        candidate = root.joinpath(*parts[start:])
        if candidate.is_dir():
            return candidate
    return None


@lru_cache(maxsize=256)
def _parse(path: Path) -> Optional[ast.Module]:
    try:
        return ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None


def _hydra_main(tree: ast.Module) -> Optional[tuple[Optional[str], Optional[str]]]:
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for deco in node.decorator_list:
            if isinstance(deco, ast.Call) and _is_hydra_main(deco.func):
                return _main_args(deco)
    return None


def _calls(tree: ast.Module, name: str) -> bool:
    """Whether the parsed module calls a function named ``name``."""
    return any(isinstance(n, ast.Call) and (getattr(n.func, "id", None) or getattr(n.func, "attr", None)) == name
               for n in ast.walk(tree))


def _is_hydra_main(func: ast.expr) -> bool:
    if isinstance(func, ast.Attribute):
        return func.attr == "main" and isinstance(func.value, ast.Name) and func.value.id == "hydra"
    return isinstance(func, ast.Name) and func.id == "hydra_main"


def _main_args(call: ast.Call) -> tuple[Optional[str], Optional[str]]:
    values: dict[str, Optional[str]] = {"config_path": None, "config_name": None}
    for name, arg in zip(("config_path", "config_name"), call.args):
        values[name] = _literal(arg)
    for kw in call.keywords:
        if kw.arg in values:
            values[kw.arg] = _literal(kw.value)
    return values["config_path"], values["config_name"]


def _literal(node: ast.expr) -> Optional[str]:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def megatron_entries(root: Path) -> list[str]:
    """Entry modules of a tree whose config folder offers a Megatron trainer config (``*megatron*.yaml``)."""
    return [module for module, _ in _megatron_entries(root)]


def entry_with_config(root: Path, name: str) -> Optional[str]:
    """The Megatron entry module of the tree whose config folder holds ``name``.yaml (a launch of another entry
    checked without ``--entry``)."""
    return next((module for module, folder in _megatron_entries(root) if (folder / f"{name}.yaml").is_file()), None)


def _megatron_entries(root: Path) -> Iterator[tuple[str, Path]]:
    """Each Megatron entry module of the tree with its resolved config folder."""
    for top in ("verl", "recipe"):
        base = root / top
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            if "hydra.main" not in _head(path):
                continue
            tree = _parse(path)
            args = _hydra_main(tree) if tree is not None else None
            if args is None or (args[1] or "").startswith(("sft", "eval")):
                continue
            folder = resolve_config_path(root, path.parent, args[0])
            if folder.is_dir() and any(folder.glob("*megatron*.yaml")):
                yield ".".join(path.relative_to(root).with_suffix("").parts), folder


def _head(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


__all__ = ["DEFAULT_ENTRY", "Entry", "EntryNotFound", "entry_with_config", "map_foreign_path", "megatron_entries",
           "module_file", "read_entry", "resolve_config_path"]
