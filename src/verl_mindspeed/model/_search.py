"""The planner's choice for one set of sizes and CP algorithm: the stage split and the cheapest recompute that fits.

The recompute ladder is tried in order (none, cheap selective modules, selective MLP/MoE,
full/block with the fewest layers that fit, full/uniform/1); at each rung every (first, last)
split is estimated and the lowest peak kept, so the split is chosen for the CP size and the
recompute it ends up with, not once for all. Splits are visited from the lowest floor up
(:func:`floors`, a bound under the peak of any recompute choice and CP algorithm) and a split
whose floor is above the best peak found is not estimated: the result is the same as trying
them all.
"""

from __future__ import annotations

from typing import Optional

from . import _engine
from ._layout import Layout
from .memory import GIB, MemoryOptions
from .recompute import FULL_UNIFORM_1, Recompute

__all__ = ["choose", "floors", "lowest", "recompute_fits_stages", "split_groups", "stage_keys"]


def split_groups(spec, sized: Layout, world: int, options: MemoryOptions, pipes: list) -> list[list[tuple]]:
    """The pipelines of one set of sizes, grouped as the planner compares them: every plain (first, last) split in one
    group, each interleaved pipeline alone; each entry ``(first, last, vpp, stage terms, candidate stages)``. Plain
    splits come from the most even (the fewest layers on the largest stage, then the smallest gap to the smallest;
    the even split first) so that a tie goes to it."""
    plain, groups = [], []
    for first, last, vpp in pipes:
        terms = _engine.stage_terms(spec, Layout(tp=sized.tp, pp=sized.pp, vpp=vpp, ep=sized.ep, etp=sized.etp,
                                                 first_stage_layers=first, last_stage_layers=last), world, options)
        if terms is None:
            continue
        if vpp:
            groups.append([(first, last, vpp, terms)])
        else:
            plain.append((first, last, vpp, terms))

    def spread(entry: tuple) -> tuple[int, int]:
        layers = [stage.layers for stage in entry[3][0]]
        return max(layers), max(layers) - min(layers)

    plain.sort(key=spread)  # stable: the even split stays first
    groups = ([plain] if plain else []) + groups
    return [[(*entry, cands) for entry, cands in zip(group, stage_keys([entry[3] for entry in group]))]
            for group in groups]


def stage_keys(splits: list[tuple]) -> list[list[tuple]]:
    """Each split's candidate stages as (index, StageTerms, key), ``splits`` the (stages, candidates) of splits of one
    set of sizes; a key numbers a stage by its index and chunks' layers, the same in every split, so totals computed
    for one split serve the others. The first split's keys are those :class:`Profile` gives its own stages."""
    keys: dict = {}
    return [[(i, stages[i], keys.setdefault((i, stages[i].chunks), len(keys))) for i in candidates]
            for stages, candidates in splits]


def floors(prof, splits: list[list]) -> list[float]:
    """Per split (its candidate stages, :func:`stage_keys`), a bound under its peak for any recompute choice and any
    CP algorithm on ``prof``'s CP size: each phase's long-lived bytes with the short-lived bytes that no recompute
    and no CP algorithm removes (a layer input per micro-batch in flight, the logits, the optimizer step's
    buffers)."""
    ss, sd, fixed, last = 1 + prof.slack_s, 1 + prof.slack_d, prof.fixed, len(prof.stages) - 1
    lp = prof.logits_lp if prof.workload == "rl" else 0.0
    ref = prof.logits_ref if prof.ref_pass else 0.0
    out = []
    for cands in splits:
        best = 0.0
        for i, stage, _ in cands:
            update, held_lp, held_ref = stage.held
            lg = prof.logits_update if i == last else 0.0
            low = update * ss + max(stage.in_flight * prof.checkpoint + lg, stage.optimizer_step) * sd
            if i == last:
                low = max(low, held_lp * ss + lp * sd, held_ref * ss + ref * sd)
            if low > best:
                best = low
        out.append(best + fixed)
    return out


def lowest(prof, rc: Recompute, splits: list[list], order: list[int], floor: list[float]
           ) -> tuple[float, int, int]:
    """(peak, split, stage) of the split with the lowest peak under ``rc`` (ties: the earlier split). Splits are
    visited in ``order`` (by ``floor``, from :func:`floors`), and those whose floor is above the best peak found are
    not estimated: they cannot be lower."""
    best, best_j, best_stage = -1.0, -1, 0
    looked_up = _engine.entry(prof, rc)
    for j in order:
        if best_j >= 0 and floor[j] > best:
            break
        value, stage = _engine.peak(prof, rc, splits[j], looked_up)
        if best_j < 0 or value < best or (value == best and j < best_j):
            best, best_j, best_stage = value, j, stage
    return best, best_j, best_stage


def choose(prof, splits: list[list], limit: float, ladder: list[Recompute], chunk: int,
           floor: Optional[list[float]] = None) -> tuple[int, Recompute, list[tuple[str, float]], int]:
    """(split index, recompute, what was tried, peak stage): the first recompute choice some split fits ``limit``
    bytes with, on the split with the lowest peak under it (ties: the earlier split); when nothing fits, the lowest
    peak tried. ``prof`` gives the CP and algorithm, ``splits`` each split's candidate stages
    (:func:`stage_keys`), ``floor`` their :func:`floors` when already known (they hold for every CP
    algorithm of one CP size). ``tried`` holds (recompute choice, the lowest peak over the splits in GiB)."""
    if floor is None:
        floor = floors(prof, splits) if len(splits) > 1 else [0.0]
    order = sorted(range(len(splits)), key=floor.__getitem__)
    tried: list[tuple[str, float]] = []
    found: dict[Recompute, tuple[float, int, int]] = {}
    least: list[tuple[float, Recompute]] = []

    def attempt(rc: Recompute) -> bool:
        best = found[rc] = lowest(prof, rc, splits, order, floor)
        tried.append((rc.label(), best[0] / GIB))
        if not least or best[0] < least[0][0]:
            least[:] = [(best[0], rc)]
        return best[0] <= limit

    def result(rc: Recompute) -> tuple[int, Recompute, list[tuple[str, float]], int]:
        return found[rc][1], rc, tried, found[rc][2]

    if attempt(ladder[0]) or ladder == [FULL_UNIFORM_1]:
        return result(ladder[0] if found[ladder[0]][0] <= limit else least[0][1])
    if not attempt(FULL_UNIFORM_1):  # the least memory recompute can reach: nothing fits
        return result(least[0][1])
    for rc in ladder[1:]:
        if attempt(rc):
            return result(rc)
    lo, hi, fit = 1, chunk - 1, None
    while lo <= hi:  # the fewest block-recomputed layers that fit: memory falls as N grows, on every split
        mid = (lo + hi) // 2
        if attempt(Recompute("full", "block", mid)):
            fit, hi = Recompute("full", "block", mid), mid - 1
        else:
            lo = mid + 1
    return result(fit or FULL_UNIFORM_1)


def recompute_fits_stages(rc: Recompute, group: list, vpp: Optional[int]) -> bool:
    """A launch's full recompute of N layers can be kept on every split of ``group``: N at most the layers of each
    model chunk, and (uniform) a divisor of them, as megatron-core 0.12's checkpointed forward steps through them."""
    if not rc.full:
        return True
    n = rc.num_layers or 1
    counts = [stage.layers // (vpp or 1) for entry in group for stage in entry[3][0]]
    return all(n <= c and (rc.method != "uniform" or c % n == 0) for c in counts)
