"""The calls a function makes inside ``try`` blocks that keep a named exception type: read for the raise-site index.

A release whose ``get_full_args`` calls ``get_args()`` inside ``try: ... except AssertionError:`` stops there an
``AssertionError`` that an older build lets through. The doctor reads a traceback's frames as (caller, callee)
pairs: where releases keep the raised type around that call and the others that make the call do not, and the ones
that keep it are the newer, the release that ran is not one of them and a newer one fixes it.

A call counts only when every call of that callee in the function is inside a try with the same handlers; which
handler takes an exception is Python's first match, so an earlier handler that raises it again shadows a later one.
Only named types count (``except Exception`` or a bare ``except`` is no fix of one failure). A handler keeps what
it does not raise again: one with no ``raise`` keeps every exception of its types; one that tests the message
(``if 'args is not initialized.' in str(e): ... else: raise``, or ``if '...' not in str(e): raise``) keeps those
with that text; any other shape that may raise again keeps nothing that can be told from the source.
"""

from __future__ import annotations

import ast
from typing import Iterator, Optional

#: Handlers that catch anything: no evidence a release meant to stop this failure there.
_ANY = {"Exception", "BaseException"}
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _walk(nodes: list) -> Iterator[ast.AST]:
    """The nodes under ``nodes``, not inside a function or class they define."""
    todo: list[ast.AST] = list(nodes)
    while todo:
        node = todo.pop()
        if isinstance(node, _DEFS):
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))


def _types(handler: ast.ExceptHandler) -> list[str]:
    node = handler.type
    if node is None:
        return []
    items = node.elts if isinstance(node, ast.Tuple) else [node]
    names = [item.attr if isinstance(item, ast.Attribute) else getattr(item, "id", None) for item in items]
    return sorted(n for n in names if n and n not in _ANY)


#: Calls that end the process: a handler that makes one does not keep the failure.
_EXITS = {"exit", "quit", "_exit", "abort"}


def _raises(nodes: list) -> bool:
    """A raise, or a call that ends the process (``sys.exit(1)``), under ``nodes``."""
    return any(isinstance(n, ast.Raise) or (isinstance(n, ast.Call) and (
        getattr(n.func, "attr", None) or getattr(n.func, "id", None)) in _EXITS) for n in _walk(nodes))


def _message_test(test: ast.expr, name: Optional[str]) -> Optional[tuple[str, bool]]:
    """(text, negated) for ``'text' in str(e)`` / ``'text' not in str(e)`` on the handler's exception ``name``."""
    if not (name and isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Constant)
            and isinstance(test.left.value, str) and isinstance(test.ops[0], (ast.In, ast.NotIn))):
        return None
    if not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(test.comparators[0])):
        return None
    return test.left.value, isinstance(test.ops[0], ast.NotIn)


def _keeps(handler: ast.ExceptHandler) -> Optional[str]:
    """What a handler keeps: ``""`` every exception of its types, a text those whose message holds it, None
    nothing that can be told (it may raise again)."""
    body = handler.body
    if not _raises(body):
        return ""
    first, rest = body[0], body[1:]
    tested = _message_test(first.test, handler.name) if isinstance(first, ast.If) else None
    if tested is None:
        return None
    text, negated = tested
    if negated:  # if 'text' not in str(e): raise  -> the rest keeps those with the text
        return text if _raises(first.body) and not _raises(first.orelse) and not _raises(rest) else None
    ends = bool(first.body) and isinstance(first.body[-1], ast.Return)
    if _raises(first.body) or (_raises(rest) and not ends):
        return None  # the kept branch raises, or falls through to a raise
    return text


def caught_of(text: str) -> list[dict]:
    """:func:`caught_in` of a source text (nothing when it does not parse)."""
    try:
        return caught_in(ast.parse(text))
    except (SyntaxError, ValueError):
        return []


def caught_in(tree: ast.AST) -> list[dict]:
    """Per function and callee: ``fn`` (qualified), ``call``, ``line`` (its first call), and ``handlers``: the
    handlers of the innermost try around every call of that callee, in order, each (types, what it keeps: ``""``
    all, a text those whose message holds it, None nothing), Python's first match deciding; empty when a call is
    outside any try, or the calls sit in tries with other handlers."""
    out: list[dict] = []

    def visit(node: ast.AST, stack: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.extend(_function(child, [*stack, child.name]))
                visit(child, [*stack, child.name])
            elif isinstance(child, ast.ClassDef):
                visit(child, [*stack, child.name])
            else:
                visit(child, stack)

    visit(tree, [])
    return out


def _handlers(node: ast.Try) -> tuple:
    return tuple((tuple(t), _keeps(h)) for h in node.handlers for t in [_types(h)] if t)


def _function(function: ast.AST, stack: list[str]) -> list[dict]:
    around: dict[int, tuple] = {}  # a call's id -> the handlers of the innermost try around it
    calls: dict[str, list[ast.Call]] = {}

    def walk(nodes: list, handlers: tuple) -> None:
        for node in nodes:
            if isinstance(node, _DEFS):
                continue
            if isinstance(node, ast.Call):
                callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
                if callee:
                    calls.setdefault(callee, []).append(node)
                    around[id(node)] = handlers
            if isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
                walk(node.body, _handlers(node))
                walk([*node.handlers, *node.orelse, *node.finalbody], handlers)
                continue
            walk(list(ast.iter_child_nodes(node)), handlers)

    walk(function.body, ())
    out = []
    for callee, sites in calls.items():
        seen = {around[id(c)] for c in sites}
        handlers = seen.pop() if len(seen) == 1 else ()
        out.append({"fn": ".".join(stack), "call": callee, "line": min(c.lineno for c in sites),
                    "handlers": [list(h) for h in handlers] if any(k is not None for _t, k in handlers) else []})
    return out
