"""The raise site's own condition, run on the values its message printed: which value of a launch setting would not
have raised.

A site's condition (``self.num_attention_heads % self.tensor_model_parallel_size != 0``) reads the same expressions
its message formats; with each bound to the number the log shows, the condition is evaluated as the upstream code
evaluates it (arithmetic, comparisons, ``and``/``or``/``not`` only), and the setting the launch controls is moved to
the nearest value for which it no longer raises. Nothing is evaluated that is not a plain expression of bound
numbers; an ``and`` one of whose operands is false is false whatever the others read (``or`` with a true one, true),
so a condition is decided where what it leaves unread does not matter.
"""

from __future__ import annotations

import ast
import operator
import re
from typing import Any, Callable, Iterator, Optional

_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_CMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
        ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not}


class Unbound(Exception):
    """The condition reads something the message did not print."""


_REMARK = re.compile(r"^(-?\d+(?:\.\d+)?)\s+\([^()]*\)$")


def value_of(text: str) -> Any:
    """A printed value as Python reads it: ``32`` -> 32, ``0.5`` -> 0.5, ``True``/``None``; else the text. A number a
    poster annotated after the message (``4 (two recipes)``) is the number."""
    stripped = text.strip().strip("'\"")
    remark = _REMARK.match(stripped)
    stripped = remark.group(1) if remark else stripped
    for kind in (int, float):
        try:
            return kind(stripped)
        except ValueError:
            pass
    return {"True": True, "False": False, "None": None, "true": True, "false": False}.get(stripped, stripped)


def evaluate(condition: str, values: dict[str, Any]) -> Any:
    """``condition`` with each expression of ``values`` (by its source text) replaced by its value."""
    return _eval(ast.parse(condition, mode="eval").body, values)


def _eval(node: ast.expr, values: dict[str, Any]) -> Any:
    text = ast.unparse(node)
    if text in values:
        return values[text]
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
        left, right = _eval(node.left, values), _eval(node.right, values)
        if isinstance(node.op, (ast.Mod, ast.Div, ast.FloorDiv)) and right == 0:
            raise ZeroDivisionError
        return _BIN[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand, values)
        return (not operand) if isinstance(node.op, ast.Not) else (-operand if isinstance(node.op, ast.USub)
                                                                    else operand)
    if isinstance(node, ast.BoolOp):  # Kleene's: one false operand decides ``and`` (one true ``or``), read or not
        deciding, unknown = not isinstance(node.op, ast.And), None
        for operand in node.values:
            try:
                if bool(_eval(operand, values)) is deciding:
                    return deciding
            except Unbound as exc:
                unknown = exc
        if unknown is not None:
            raise unknown
        return not deciding
    if isinstance(node, ast.Compare) and all(type(op) in _CMP for op in node.ops):
        left = _eval(node.left, values)
        for op, comparator in zip(node.ops, node.comparators):
            right = _eval(comparator, values)
            if not _CMP[type(op)](left, right):
                return False
            left = right
        return True
    raise Unbound(text)


def raises(condition: str, when_false: bool, values: dict[str, Any]) -> Optional[bool]:
    """Whether the site raises with ``values`` (None: the condition reads something unbound, or fails)."""
    try:
        result = bool(evaluate(condition, values))
    except (Unbound, ZeroDivisionError, TypeError, ValueError, SyntaxError):
        return None
    return not result if when_false else result


def nearest_passing(condition: str, when_false: bool, values: dict[str, Any], expr: str) -> Optional[int]:
    """The integer nearest the value of ``expr`` (at least 1; the smaller first on a tie) for which the site does
    not raise, when the printed values make it raise; None when the condition cannot be run or nothing near does."""
    return _first_passing(condition, when_false, values, expr, lambda current: (
        candidate for distance in range(1, max(2 * current, 64) + 1)
        for candidate in (current - distance, current + distance) if candidate >= 1))


def divisor_passing(condition: str, when_false: bool, values: dict[str, Any], expr: str) -> Optional[int]:
    """The largest divisor of the value of ``expr``, below it, for which the site does not raise: for a size the
    world size must be a multiple of, the only values that cannot raise that check in turn (TP 8 with 28 heads is
    4, not 7; one that grows needs devices the run may not have)."""
    return _first_passing(condition, when_false, values, expr, lambda current: (
        candidate for candidate in range(current - 1, 0, -1) if current % candidate == 0))


def _first_passing(condition: str, when_false: bool, values: dict[str, Any], expr: str,
                   candidates: Callable[[int], Iterator[int]]) -> Optional[int]:
    """The first of ``candidates(current)`` for which the site does not raise, when the printed values (``expr`` an
    integer among them) make it raise."""
    current = values.get(expr)
    if not isinstance(current, int) or isinstance(current, bool) or raises(condition, when_false, values) is not True:
        return None
    return next((c for c in candidates(current) if raises(condition, when_false, {**values, expr: c}) is False), None)


def int_of(text: Any) -> Optional[int]:
    """A printed integer (``" 8"`` -> 8), or None for anything else (a float, a word, None)."""
    try:
        return int(str(text).strip())
    except (TypeError, ValueError):
        return None


__all__ = ["divisor_passing", "evaluate", "int_of", "nearest_passing", "raises", "value_of"]
