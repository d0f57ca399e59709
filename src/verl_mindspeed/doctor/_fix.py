"""The value a setting takes for a raise site's own condition to pass, run on the values its message printed.

- A number moves to the nearest value that passes; a size the world size is a multiple of, to its largest divisor
  that passes (never a value that needs devices the run may not have), unless the check wants one value.
- A switch takes its other state, where the condition tests it for truth.
- A setting the message does not print: the values for which the condition passes whatever the rest of it reads
  (:func:`passing_values`; ``self.cpu_offloading and self.pipeline_model_parallel_size > 1``: ``False``, or a size
  of 0 or 1), read by the settings' alternatives.
- A setting no value of which passes is not at fault (:func:`helpless`).
- A check that sits under a feature's switch (``if args.use_fused_rmsnorm:``) is skipped with the switch the other
  way (:func:`switched_off`).
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from typing import Any, Optional

from .. import eras
from ..catalog.universe import arguments, stack_facts
from ._sites import Match, Site
from ._solve import divisor_passing, nearest_passing, raises, value_of

#: The sizes the world size is a multiple of: a fix may only divide them (VPP splits layers, not devices).
WORLD_DIVISORS = frozenset(eras.PARALLEL_SIZES) - {"virtual_pipeline_model_parallel_size"}


def solve(found: Match, leaf: str) -> Optional[Any]:
    """The value of the setting ``leaf`` for which the site's own condition does not raise: the nearest integer to
    the printed one, or the switch's other state when the condition reads it alone (``self.sequence_parallel is
    False``, which the message does not print)."""
    site = found.site
    if not site.condition:
        return None
    values, expr = _printed(found, leaf)
    if expr is not None and isinstance(values[expr], bool):  # a printed switch: its other state, if that passes
        flipped = {**values, expr: not values[expr]}
        passes = raises(site.condition, site.raises_when_false, values) is True and \
            raises(site.condition, site.raises_when_false, flipped) is False
        return (not values[expr]) if passes else None
    if expr is not None:
        divides_world = leaf in WORLD_DIVISORS or leaf in ("infer_tp", "tensor_parallel_size")
        if not divides_world:
            return nearest_passing(site.condition, site.raises_when_false, values, expr)
        smaller = divisor_passing(site.condition, site.raises_when_false, values, expr)
        if smaller is None and _equated(site.condition, expr):  # the check wants one value (a checkpoint's): that one
            return nearest_passing(site.condition, site.raises_when_false, values, expr)
        return smaller
    chain = read_as(site, leaf)
    if chain is None or not switch_in(site.condition, chain):
        return None
    states = {state: raises(site.condition, site.raises_when_false, {**values, chain: state})
              for state in (True, False)}
    passing = [state for state, raised in states.items() if raised is False]
    return passing[0] if len(passing) == 1 and states[not passing[0]] is True else None


#: The integers a setting the message did not print is tried with: small ones, and powers of two beyond them (so
#: ``x % 256 == 0`` is not read as "only 0 passes").
_INTEGERS = (*range(0, 65), 96, 128, 256, 512, 1024, 4096, 1 << 16)


def passing_values(found: Match, leaf: str) -> Optional[list[Any]]:
    """The values of a setting the message did not print for which the condition passes whatever else it reads (the
    site did raise, so the setting held another): a switch's states, or integers, and None where the setting may be
    unset. None where the setting's type is not known to be a switch or an integer, or the condition does not read
    it by name."""
    _values, expr = _printed(found, leaf)
    chain = read_as(found.site, leaf)
    kind, optional = _kinds().get(leaf, (None, False))
    if expr is not None or chain is None or kind is None or (kind is bool and not switch_in(found.site.condition,
                                                                                              chain)):
        return None
    values = {e: value_of(t) for e, t in found.bound.items()}
    probes = ((True, False) if kind is bool else _INTEGERS) + ((None,) if optional else ())
    return [probe for probe in probes
            if raises(found.site.condition, found.site.raises_when_false, {**values, chain: probe}) is False]


def switched_off(found: Match) -> list[str]:
    """The switches the check sits under (``if args.use_fused_rmsnorm:``) that, off, skip the check whatever else
    those tests read: only a setting every source types as a switch, tested for its truth, and turned off (``if not
    config.fp16:`` is skipped by fp16 on, not a way out; an integer's off value may be 0 or unset, which the
    sources do not say)."""
    def off(leaf: str, chain: str, reached) -> bool:
        if _kinds().get(leaf, (None, False))[0] is not bool or not switch_in(found.site.enclosing, chain):
            return False
        return reached(False) is False and reached(True) is not False

    return _skipping(found, off)


def unset_off(found: Match) -> list[str]:
    """The options the check sits under that, unset (their default None), skip it whatever else those tests read
    (``if args.context_parallel_kv_cache_policy:``, ``if args.moe_zero_memory_num_layers is not None:``): every
    source gives the argument no default, and it is no switch (:func:`switched_off` takes those)."""
    def unset(leaf: str, _chain: str, reached) -> bool:
        spec = arguments().get(leaf)
        if spec is None or "default" not in spec or spec["default"] is not None or spec.get("action"):
            return False
        return reached(None) is False

    return _skipping(found, unset)


def _skipping(found: Match, skips) -> list[str]:
    """The settings of the tests the check sits under for which ``skips(leaf, chain, reached)`` holds, where
    ``reached(value)`` is whether those tests pass with the setting at ``value`` (and the message's values bound)."""
    enclosing = found.site.enclosing
    if not enclosing:
        return []
    values = {e: value_of(t) for e, t in found.bound.items()}
    out: list[str] = []
    for chain in found.site.enclosing_chains:
        leaf = chain.rsplit(".", 1)[-1]

        def reached(value, chain=chain):
            return raises(enclosing, False, {**values, chain: value})

        if leaf not in out and skips(leaf, chain, reached):
            out.append(leaf)
    return out


@lru_cache(maxsize=None)
def _kinds() -> dict[str, tuple[Optional[type], bool]]:
    """Setting -> (``bool`` or ``int``, whether it may be unset), as megatron-core's config defaults (every line
    here) and MindSpeed's and Megatron-LM's arguments (``store_true``, ``type=int``) type it: no type where any
    of them says another (a float, a string, a list of values)."""
    seen: dict[str, set] = {}
    for line in stack_facts()["megatron_core"].values():
        for name, default in {**line["fields"], **line["mla_fields"]}.items():
            seen.setdefault(name, set()).add(type(default))
    for dest, spec in arguments().items():
        kind = bool if spec.get("action") in ("store_true", "store_false") else \
            int if spec.get("type") == "int" and not spec.get("nargs") else object
        seen.setdefault(dest, set()).add(kind)
        if "default" in spec:
            seen[dest].add(type(spec["default"]))
    out = {}
    for name, kinds in seen.items():
        typed = kinds - {type(None)}
        out[name] = (next(iter(typed)) if len(typed) == 1 and typed <= {bool, int} else None, type(None) in kinds)
    return out


def _printed(found: Match, leaf: str) -> tuple[dict[str, Any], Optional[str]]:
    """(the values the message printed, by the expression each binds; the one of them that is ``leaf`` or one of
    its aliases, None when the message printed none)."""
    values = {expr: value_of(text) for expr, text in found.bound.items()}
    return values, next((e for e in values if e.rsplit(".", 1)[-1] in found.site.names(leaf)), None)


def _equated(condition: str, expr: str) -> bool:
    """``expr`` is compared for equality in ``condition`` (``checkpoint_value == args_value``)."""
    try:
        tree = ast.parse(condition, mode="eval")
    except SyntaxError:
        return False
    return any(isinstance(node, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops)
               and expr in {ast.unparse(n) for n in (node.left, *node.comparators)} for node in ast.walk(tree))


def read_as(site: Site, leaf: str) -> Optional[str]:
    """The expression the site's condition reads the setting ``leaf`` by: the attribute chain ending in it
    (``args.use_fused_rmsnorm``), else a local the function assigned it to once (``reset_bucket_group_order =
    getattr(args, "reset_bucket_group_order", False)``), where the condition reads that local."""
    chain = next((c for c in site.chains if c.rsplit(".", 1)[-1] == leaf), None)
    if chain is not None or not site.condition:
        return chain
    return next((local for local, field in site.aliases if field == leaf
                 and re.search(rf"(?<![\w.]){re.escape(local)}(?!\w)", site.condition)), None)


def switch_in(condition: str, chain: str) -> bool:
    """``chain`` is a switch in ``condition``: tested for truth or compared with True or False, never counted nor
    compared with a number or None (``pipeline_model_parallel_size > 0`` is a number: True passes it only as 1
    would; ``hybrid_layer_pattern is None`` is a value that may be unset, not a switch)."""
    try:
        tree = ast.parse(condition, mode="eval")
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and chain in {ast.unparse(n) for n in (node.left, node.right)}:
            return False
        if isinstance(node, ast.Compare) and chain in {ast.unparse(n) for n in (node.left, *node.comparators)}:
            others = [n for n in (node.left, *node.comparators) if ast.unparse(n) != chain]
            if any(isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in node.ops) or any(
                    isinstance(n, ast.Constant) and not isinstance(n.value, bool) for n in others):
                return False
    return True


def helpless(found: Match, leaf: str) -> bool:
    """No value of the setting ``leaf`` makes the site's condition pass with the values its message printed (the
    range those values leave is empty: ``PP=2 <= x <= M=1``): moving it cannot help, the printed values are at
    fault. False when the condition cannot be run on them."""
    site = found.site
    if not site.condition:
        return False
    values, expr = _printed(found, leaf)
    expr = expr or read_as(site, leaf)
    numbers = [v for v in values.values() if isinstance(v, int) and not isinstance(v, bool)]
    if expr is None or not numbers or not re.search(rf"(?<![\w.]){re.escape(expr)}(?![\w])", site.condition):
        return False  # the condition reads the setting through a local name (``infer_tp = ...``): it cannot be run
    top = min(4096, max(64, 4 * max(abs(n) for n in numbers)))
    probes = [True, False, *range(0, top + 1)]
    return all(raises(site.condition, site.raises_when_false, {**values, expr: v}) is True for v in probes)


__all__ = ["WORLD_DIVISORS", "helpless", "passing_values", "read_as", "solve", "switch_in", "switched_off",
           "unset_off"]
