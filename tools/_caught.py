"""The calls a function makes inside ``try`` blocks that catch a named exception type: read for the raise-site index.

A release whose ``get_full_args`` calls ``get_args()`` inside ``try: ... except AssertionError:`` stops there an
``AssertionError`` that an older release lets through. The doctor reads a traceback's frames as (caller, callee)
pairs: where every release that catches the raised type around that call is not the one that ran (the frame's line
is none of theirs), the failure is that release's, fixed by a newer one.

Only named types count (``except Exception`` or a bare ``except`` is no fix of one failure), and only a handler
that does not end by raising again; one that keeps only messages with a given text (``if 'args is not initialized.'
in str(e)``, else raise) records that text.
"""

from __future__ import annotations

import ast
from typing import Iterator, Optional

#: Handlers that catch anything: no evidence a release meant to stop this failure there.
_ANY = {"Exception", "BaseException"}


def _types(handler: ast.ExceptHandler) -> list[str]:
    node = handler.type
    if node is None:
        return []
    items = node.elts if isinstance(node, ast.Tuple) else [node]
    names = [item.attr if isinstance(item, ast.Attribute) else getattr(item, "id", None) for item in items]
    return [n for n in names if n and n not in _ANY]


def _reraises(handler: ast.ExceptHandler) -> bool:
    return bool(handler.body) and isinstance(handler.body[-1], ast.Raise)


def _needs(handler: ast.ExceptHandler) -> Optional[str]:
    """The text a handler that tests its exception's message needs to keep it (``if 'args is not initialized.' in
    str(e): ... else: raise``); None when it keeps every exception of its types."""
    first = handler.body[0] if handler.body else None
    if not isinstance(first, ast.If) or not first.orelse or not isinstance(first.orelse[-1], ast.Raise):
        return None
    test = first.test
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.In) and \
            isinstance(test.left, ast.Constant) and isinstance(test.left.value, str):
        return test.left.value
    return ""  # a test of another kind: which messages it keeps is not read here


def _callee(call: ast.Call) -> Optional[str]:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def _calls(body: list[ast.stmt]) -> Iterator[ast.Call]:
    """The calls a try body makes itself: not inside a function or class it defines."""
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Call):
            yield node
        todo.extend(ast.iter_child_nodes(node))


class _Caught(ast.NodeVisitor):
    def __init__(self) -> None:
        self.stack: list[str] = []
        self.found: list[dict] = []

    def visit_FunctionDef(self, node: ast.AST) -> None:  # noqa: N802 - ast's names
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815
    visit_ClassDef = visit_FunctionDef  # noqa: N815

    def visit_Try(self, node: ast.Try) -> None:  # noqa: N802
        kept = [(sorted(_types(h)), _needs(h)) for h in node.handlers if not _reraises(h)]
        kept = [(types, need) for types, need in kept if types and need != ""]
        if kept and self.stack:
            for call in _calls(node.body):
                callee = _callee(call)
                for types, need in kept if callee else ():
                    entry = {"fn": ".".join(self.stack), "call": callee, "x": types, "line": call.lineno}
                    if need:
                        entry["m"] = need
                    self.found.append(entry)
        self.generic_visit(node)

    visit_TryStar = visit_Try  # noqa: N815


def caught_of(text: str) -> list[dict]:
    """Each call made inside a try block of a function that catches named types, one entry per handler: ``fn``
    (qualified), ``call`` (the callee's name), ``x`` (the types the handler keeps), ``m`` (the text the exception's
    message needs for it to be kept, where the handler tests it), ``line``."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    reader = _Caught()
    reader.visit(tree)
    return reader.found
