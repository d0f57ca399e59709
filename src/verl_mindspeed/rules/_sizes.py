"""The nearest parallel size that satisfies every divisibility rule at once: the fix a divisibility error offers.

A fix line is a contract: pasted, it removes its error without creating another. So the size proposed for one
rule is checked against every rule on that size (heads, query groups, MLP widths, experts, layers, the device
count), not only the rule that fired, and it moves every role that shares the size (:func:`_base.size_fix`).
"""

from __future__ import annotations

from typing import Callable, Optional

from ..model._constraints import experts_split, ffn_split, heads_split
from ._base import SEARCH_CEILING, Context, RoleView, size_fix

TP, PP, CP, EP = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
                  "expert_model_parallel_size")
_LIMIT = 1024


def _nearest(current: int, ok: Callable[[int], bool], limit: int = _LIMIT) -> Optional[int]:
    """The size closest to ``current`` (the smaller on a tie) for which ``ok`` holds, or None."""
    found = [n for n in range(1, min(max(limit, current), SEARCH_CEILING) + 1) if n != current and ok(n)]
    return min(found, key=lambda n: (abs(n - current), n)) if found else None


def _divides_world(ctx: Context, product: int) -> bool:
    return not ctx.world_size or ctx.world_size % product == 0


def _etp_at(role: RoleView, tp: int) -> int:
    """The expert TP the role would run at TP ``tp``: its own when set, else megatron's default, TP."""
    return role.etp if role.megatron.get("expert_tensor_parallel_size") is not None else tp


def tp_ok(role: RoleView, ctx: Context, tp: int) -> bool:
    """Every rule on TP holds at ``tp``: heads, query groups (per megatron-core line), MLP widths, devices."""
    return _tp_model_ok(role, ctx, tp) and _divides_world(ctx, tp * role.pp * role.cp) and \
        _divides_world(ctx, _etp_at(role, tp) * role.ep * role.pp)


def _tp_model_ok(role: RoleView, ctx: Context, tp: int) -> bool:
    """The rules on TP that do not count devices: heads, query groups, MLP widths, SP and MC2 at TP 1."""
    spec = ctx.model
    if tp == 1 and (role.given.get("sequence_parallel") is True or role.on("use_ascend_mc2")):
        return False  # sp-requires-tp, mc2-requires-sp-tp
    if spec is not None:
        groups = spec.num_query_groups
        groups_ok = groups % tp == 0 or (ctx.core >= (0, 16) and tp % groups == 0)
        if not (heads_split(spec, tp) and groups_ok) or ffn_split(spec, tp, _etp_at(role, tp)):
            return False
    return True


def pp_ok(role: RoleView, ctx: Context, pp: int) -> bool:
    """Every rule on PP holds at ``pp``: the model's layers split evenly, devices."""
    spec = ctx.model
    if spec is not None and (pp > spec.num_layers or spec.num_layers % pp):
        return False
    return _divides_world(ctx, role.tp * pp * role.cp) and _divides_world(ctx, role.etp * role.ep * pp)


def cp_ok(role: RoleView, ctx: Context, cp: int) -> bool:
    return _divides_world(ctx, role.tp * role.pp * cp)


def ep_ok(role: RoleView, ctx: Context, ep: int) -> bool:
    """Every rule on EP holds at ``ep``: the model's experts split evenly, devices."""
    spec = ctx.model
    if spec is not None and (not spec.is_moe and ep > 1 or not experts_split(spec, ep)):
        return False
    return _divides_world(ctx, role.etp * ep * role.pp)


_CHECKS = {TP: tp_ok, PP: pp_ok, CP: cp_ok, EP: ep_ok}


def nearest_size(role: RoleView, ctx: Context, name: str,
                 also: Callable[[int], bool] = lambda n: True) -> Optional[int]:
    """The valid value of ``name`` nearest the role's, or None; ``also`` is a further condition of the rule that
    asks."""
    ok = _CHECKS[name]
    return _nearest(role.size(name), lambda n: ok(role, ctx, n) and also(n), ctx.world_size or _LIMIT)


def fix_size(role: RoleView, ctx: Context, name: str, also: Callable[[int], bool] = lambda n: True) -> Optional[str]:
    """The lines that move ``name`` to its nearest valid value for every role sharing it, or None."""
    value = nearest_size(role, ctx, name, also)
    return size_fix(role, ctx, name, value) if value is not None else None


def tp_above_one(role: RoleView, ctx: Context) -> Optional[int]:
    """The TP that SP and MC2 run at: the role's when above 1, else the nearest above 1 every rule accepts, else
    None (the layout leaves no room for TP)."""
    return role.tp if role.tp > 1 else nearest_size(role, ctx, TP, lambda n: n > 1)


def tp_fix(role: RoleView, ctx: Context, tp: int) -> str:
    """The lines that build the role's model at TP ``tp``. Where the role's engine already says ``tp`` but another
    role owns the process groups (mbridge and verl's converter build with the groups' sizes), the owner moves."""
    owner = next((b for b in (ctx.builds or {}).values() if b.owner), None)
    moves = owner if owner is not None and role.tp == tp and owner.tp != tp else role
    return size_fix(moves, ctx, TP, tp)


def fix_world(role: RoleView, ctx: Context, names: tuple[str, ...]) -> Optional[str]:
    """For a product of sizes that does not divide the devices: change the one size that moves least."""
    best: Optional[tuple[float, str, int]] = None
    for name in names:
        current = role.size(name)
        value = _nearest(current, lambda n, name=name: _CHECKS[name](role, ctx, n), ctx.world_size or _LIMIT)
        if value is not None:
            cost = max(value, current) / min(value, current)
            if best is None or cost < best[0]:
                best = (cost, name, value)
    if best is not None:
        return size_fix(role, ctx, best[1], best[2])
    return _shrink_to_world(role, ctx, names)


def _shrink_to_world(role: RoleView, ctx: Context, names: tuple[str, ...]) -> Optional[str]:
    """Where no one size can change enough (TP 4 x CP 4 on 2 devices): the other sizes go to 1 and TP to the
    largest value at most the role's that the devices and the model allow. None without TP among ``names``."""
    if TP not in names or not ctx.world_size:
        return None
    tp = next((n for n in range(min(role.tp, ctx.world_size), 0, -1)
               if ctx.world_size % n == 0 and _tp_model_ok(role, ctx, n)), None)
    if tp is None:
        return None
    lines = [size_fix(role, ctx, name, 1) for name in names if name != TP and role.size(name) != 1]
    lines += [size_fix(role, ctx, TP, tp)] if tp != role.tp else []
    return " ".join(line for line in lines if line) or None
