"""The fields of verl's config dataclasses, read from the tree's sources with ``ast`` (verl is never imported).

verl turns every config section that carries a ``_target_`` into that dataclass with
``verl.utils.config.omega_conf_to_dataclass`` (``hydra.utils.instantiate(section, _convert_="partial")``):
each key of the section becomes a keyword argument, so a key the dataclass has no field for fails with
``TypeError: ... got an unexpected keyword argument``. A field annotated as a dict (``override_transformer_config``,
``engine_kwargs``...) takes any keys. :func:`verdict` says which of the three applies to one key path.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

from omegaconf import DictConfig, OmegaConf

from ._entry import module_file

#: Bases that contribute no dataclass fields.
_FIELDLESS_BASES = {"object", "ABC", "Mapping", "MutableMapping", "Generic", "Protocol"}
_OPEN_MARKERS = ("dict", "Dict", "Any", "DictConfig", "Mapping")


@dataclass(frozen=True)
class ClassFields:
    target: str
    fields: frozenset[str]
    """Names the constructor accepts."""
    open_fields: frozenset[str]
    """Fields annotated as a dict (or ``Any``): any key may go beneath them."""


@dataclass(frozen=True)
class Verdict:
    kind: str
    """``rejected`` (verl's dataclass conversion fails), ``field`` (a field that accepts it), ``open`` (under a
    dict-typed field), ``plain`` (a section verl reads without a dataclass) or ``unknown`` (sources not found)."""
    at: str = ""
    """The dotted path where the verdict was reached (for ``rejected``: the first key the dataclass lacks)."""
    target: str = ""
    """The ``_target_`` class involved."""


class DataclassIndex:
    """Fields of the ``_target_`` classes of one verl tree (cached per class)."""

    def __init__(self, root: Optional[Path]):
        self.root = root

    def fields_of(self, target: str) -> Optional[ClassFields]:
        if self.root is None or "." not in target:
            return None
        return _class_fields(self.root, target)

    def verdict(self, cfg: DictConfig, path: str, user_paths: frozenset[str] = frozenset()) -> Verdict:
        """What verl's conversion does with the key ``path`` of the composed ``cfg``.

        ``user_paths`` are the keys the launch's overrides name: a ``_target_`` section whose other keys
        are not all fields of its class is evidently never converted whole by verl (its ``ref`` section
        keeps ``log_prob_*`` keys ``McoreActorConfig`` lacks), so keys there are not judged.
        """
        node: Any = cfg
        current: Optional[ClassFields] = None
        walked: list[str] = []
        for part in path.split("."):
            target = _target(node)
            if target:
                fields = self.fields_of(target)
                if fields is None:
                    return Verdict("unknown", ".".join(walked), target)
                current = fields if _converted(node, walked, fields, user_paths) else None
            if current is not None and target:
                if part not in current.fields:
                    return Verdict("rejected", ".".join([*walked, part]), current.target)
                if part in current.open_fields:
                    return Verdict("open", ".".join([*walked, part]), current.target)
            walked.append(part)
            node = _child(node, part)
            if node is None:
                break
        if current is None:
            return Verdict("plain", path)
        return Verdict("field", path, current.target)


def _converted(node: DictConfig, walked: list[str], fields: ClassFields, user_paths: frozenset[str]) -> bool:
    for key in node.keys():
        full = ".".join([*walked, str(key)])
        if full in user_paths or any(u.startswith(full + ".") for u in user_paths):
            continue
        if key not in fields.fields:
            return False
    return True


def _target(node: Any) -> str:
    if isinstance(node, DictConfig) and "_target_" in node:
        value = node._get_node("_target_")
        text = value._value() if value is not None else None
        return text if isinstance(text, str) else ""
    return ""


def _child(node: Any, key: str) -> Any:
    if not isinstance(node, DictConfig) or key not in node:
        return None
    if OmegaConf.is_interpolation(node, key):
        return None
    return node._get_node(key)


@lru_cache(maxsize=512)
def _class_fields(root: Path, target: str) -> Optional[ClassFields]:
    found = _target_class(root, target)
    if found is None:
        return None
    fields, open_fields, complete = _collect(root, found[0], found[1], 0)
    if not complete:
        return None
    return ClassFields(target, frozenset(fields), frozenset(open_fields))


def _collect(root: Path, module: str, cls: ast.ClassDef, depth: int) -> tuple[set[str], set[str], bool]:
    fields: set[str] = set()
    open_fields: set[str] = set()
    complete = True
    for resolved in _bases(root, module, cls, depth):
        if resolved is None:
            complete = False
            continue
        f, o, c = _collect(root, resolved[0], resolved[1], depth + 1)
        fields |= f
        open_fields |= o
        complete = complete and c
    for stmt in cls.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        annotation = ast.unparse(stmt.annotation)
        if annotation.startswith(("ClassVar", "typing.ClassVar")) or _init_false(stmt.value):
            fields.discard(stmt.target.id)
            continue
        fields.add(stmt.target.id)
        if any(marker in annotation for marker in _OPEN_MARKERS) and not _names_dataclass(annotation):
            open_fields.add(stmt.target.id)
        else:
            open_fields.discard(stmt.target.id)
    return fields, open_fields, complete


@lru_cache(maxsize=512)
def ancestors(root: Path, target: str) -> tuple[str, ...]:
    """The class names of ``target`` (a ``_target_`` path) and of every base it derives from, resolved in the
    tree's sources as the fields are (``McoreActorConfig`` -> ``ActorConfig``, ``BaseConfig``...)."""
    found = _target_class(root, target)
    out: list[str] = []

    def walk(where: str, cls: ast.ClassDef, depth: int) -> None:
        out.append(cls.name)
        for resolved in _bases(root, where, cls, depth):
            if resolved is not None:
                walk(resolved[0], resolved[1], depth + 1)

    if found is not None:
        walk(found[0], found[1], 0)
    return tuple(dict.fromkeys(out))


def _target_class(root: Path, target: str) -> Optional[tuple[str, ast.ClassDef]]:
    """(module, class) a ``_target_`` path names, in the tree's sources (by module, else by name anywhere)."""
    module, _, name = target.rpartition(".")
    return _resolve_class(root, module, name, 0) or _find_class(root, name)


def _bases(root: Path, module: str, cls: ast.ClassDef, depth: int) -> list[Optional[tuple[str, ast.ClassDef]]]:
    """Each base of ``cls`` that may hold fields, resolved in the tree's sources: (module, class), or None where it
    cannot be (or ten levels down)."""
    out: list[Optional[tuple[str, ast.ClassDef]]] = []
    for base in cls.bases:
        name = _base_name(base)
        if name is not None and name not in _FIELDLESS_BASES:
            out.append((_resolve_class(root, module, name, 0) or _find_class(root, name)) if depth < 10 else None)
    return out


def _names_dataclass(annotation: str) -> bool:
    """``dict[str, FooConfig]`` and ``Optional[FooConfig]`` still name a config class: not free-form."""
    return "Config" in annotation and not annotation.startswith(("dict", "Dict", "Optional[dict", "Optional[Dict"))


def _init_false(value: Optional[ast.expr]) -> bool:
    return (isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", "")) == "field"
            and any(kw.arg == "init" and isinstance(kw.value, ast.Constant) and kw.value.value is False
                    for kw in value.keywords))


def _base_name(base: ast.expr) -> Optional[str]:
    if isinstance(base, ast.Subscript):
        base = base.value
    if isinstance(base, ast.Name):
        return base.id
    if isinstance(base, ast.Attribute):
        return base.attr
    return None


@lru_cache(maxsize=256)
def _parse(path: Path) -> Optional[ast.Module]:
    try:
        return ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None


def _resolve_class(root: Path, module: str, name: str, depth: int) -> Optional[tuple[str, ast.ClassDef]]:
    """Find class ``name`` as seen from ``module``: defined there, or imported (``from x import name`` / ``*``)."""
    if depth > 8:
        return None
    path = module_file(root, module)
    tree = _parse(path) if path else None
    if tree is None:
        return None
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return module, node
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom):
            continue
        source = _absolute(package, node.module, node.level)
        for alias in node.names:
            if alias.name == "*" or (alias.asname or alias.name) == name:
                wanted = name if alias.name == "*" else alias.name
                found = _resolve_class(root, source, wanted, depth + 1)
                if found is not None:
                    return found
    return None


@lru_cache(maxsize=256)
def _find_class(root: Path, name: str) -> Optional[tuple[str, ast.ClassDef]]:
    """The one top-level ``class name`` of the tree's ``verl`` package, when re-exports cannot be followed
    (a fetched release keeps only the files that define config classes, not every module re-exporting them)."""
    needles = (f"class {name}(", f"class {name}:")
    found = []
    for path in sorted((root / "verl").rglob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if not any(n in text for n in needles):
            continue
        tree = _parse(path)
        for node in tree.body if tree else ():
            if isinstance(node, ast.ClassDef) and node.name == name:
                module = ".".join(path.relative_to(root).with_suffix("").parts)
                found.append((module.removesuffix(".__init__"), node))
    return found[0] if len(found) == 1 else None


def _absolute(package: str, module: Optional[str], level: int) -> str:
    if level == 0:
        return module or ""
    parts = package.split(".") if package else []
    base = parts[: len(parts) - (level - 1)] if level > 1 else parts
    return ".".join([*base, module] if module else base)


__all__ = ["ClassFields", "DataclassIndex", "Verdict", "ancestors"]
