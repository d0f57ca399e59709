"""MindSpeed's features, read for the raise-site index: the switch each feature turns on, the file its class is
written in, and the modules its methods import (the code its patches bring in).

A feature is a class whose ``__init__`` calls ``super().__init__('moe-tp-extend-ep', 2)``: its switch is that name as
MindSpeed reads it (``moe_tp_extend_ep``: lower case, dashes to underscores, ``MindSpeedFeature.__init__``), the
argument ``is_need_apply`` tests. A feature of optimization level 0 applies its patches whatever the switch says
(``default_patches``): it is no switch's code, and is left out.

The doctor reads a traceback's frames against these: code of a feature the launch turns on, failing on what verl's
path hands it (``'TransformerConfig' object has no attribute 'num_experts'``), is that switch's.
"""

from __future__ import annotations

import ast
from typing import Iterator, Optional


def _switch(cls: ast.ClassDef) -> Optional[str]:
    """The name the class gives ``super().__init__`` in its own ``__init__``, as MindSpeed reads it; None for a
    level-0 feature or a class that gives none."""
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    for node in ast.walk(init) if init is not None else ():
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__" \
                and isinstance(node.func.value, ast.Call) and getattr(node.func.value.func, "id", "") == "super" \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            level = node.args[1] if len(node.args) > 1 else next(
                (k.value for k in node.keywords if k.arg == "optimization_level"), None)
            if isinstance(level, ast.Constant) and level.value == 0:
                return None
            return node.args[0].value.lower().strip().replace("-", "_")
    return None


def features_in(tree: ast.AST) -> Iterator[tuple[str, list[str]]]:
    """(switch, the ``mindspeed.*`` modules its methods import) for each feature class of a module."""
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        switch = _switch(cls)
        if switch is None:
            continue
        modules = sorted({n.module for n in ast.walk(cls) if isinstance(n, ast.ImportFrom) and n.module
                          and n.module.startswith("mindspeed.")
                          and not n.module.startswith("mindspeed.features_manager")})
        yield switch, modules


def add(features: dict, rel: str, tree: ast.AST) -> None:
    """Record a MindSpeed file's features into ``features`` (``files``: file -> switches; ``modules``: dotted module
    -> switches), the union over releases."""
    if not rel.startswith("mindspeed/features_manager/"):
        return
    for switch, modules in features_in(tree):
        features["files"].setdefault(rel, set()).add(switch)
        for module in modules:
            features["modules"].setdefault(module, set()).add(switch)


def written(features: dict) -> dict:
    """``features`` as the index stores it: sorted lists."""
    return {part: {name: sorted(switches) for name, switches in sorted(table.items())}
            for part, table in features.items()}
