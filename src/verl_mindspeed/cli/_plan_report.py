"""What ``plan`` prints: the text report (the table, its memory bars, the override blocks), the JSON object, the
chart (SVG or HTML)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..i18n import render, tr, trp
from ..model import ModelSpec, active_parameters, total_parameters
from ..model.chart import component_names, render_html, render_svg, text_bar
from ..model.layouts import LayoutPlan
from ..model.memory import MemoryOptions

#: Override blocks printed without --top (the table then shows 10 rows).
DEFAULT_BLOCKS = 3


def label(plan: LayoutPlan) -> str:
    lay = plan.layout
    text = f"TP{lay.tp} PP{lay.pp}" + (f" VPP{lay.vpp}" if lay.vpp else "") + f" CP{lay.cp}"
    if lay.cp > 1:
        text += "/" + lay.cp_algo.replace("_cp_algo", "") + (f"{lay.ulysses_degree}" if lay.ulysses_degree else "")
    return text + (f" EP{lay.ep} ETP{lay.etp}" if lay.ep > 1 or lay.etp > 1 else "")


def _row(rank: int, plan: LayoutPlan, limit: float, lang: str) -> tuple[str, ...]:
    lay = plan.layout
    split = "-" if lay.first_stage_layers is None and lay.last_stage_layers is None else \
        f"{lay.first_stage_layers or '-'}/{lay.last_stage_layers or '-'}"
    algo = lay.cp_algo.replace("_cp_algo", "") + (f"({lay.ulysses_degree})" if lay.ulysses_degree else "") \
        if lay.cp > 1 else "-"
    fits = (tr("yes") if plan.fits else tr("no")).render(lang)
    return (str(rank), str(lay.tp), str(lay.pp), str(lay.vpp or "-"), str(lay.cp), algo, str(lay.ep), str(lay.etp),
            split, lay.recompute.label(), f"{plan.memory.peak_gib:.1f}", f"{plan.relative_time:.2f}", fits,
            text_bar(plan.memory.breakdown(), limit))


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.rjust(w) if i < len(row) - 1 else c for i, (c, w) in enumerate(zip(row, widths)))
                     for row in rows)


def _why(plan: LayoutPlan, limit: float, lang: str) -> str:
    shares = plan.time.shares()
    comm = sum(shares[k] for k in ("tp", "cp", "ep", "pp", "dp"))
    pct = {k: round(100 * v) for k, v in shares.items()}
    return tr("step time {relative:.2f}x the fastest (compute {compute}%, recompute {recompute}%, bubble {bubble}%, "
              "communication {comm}%: TP {tp}%, CP {cp}%, EP {ep}%, PP {pp}%, DP {dp}%); peak {peak:.1f} GiB on "
              "stage {stage} in the {phase} phase, {headroom:.1f} GiB left",
              relative=plan.relative_time, comm=round(100 * comm), peak=plan.memory.peak_gib,
              stage=plan.memory.stage, phase=plan.memory.phase, headroom=limit - plan.memory.peak_gib,
              **pct).render(lang)


def print_text(spec: ModelSpec, args: argparse.Namespace, world: int, memory: float, options: MemoryOptions,
               plans: list[LayoutPlan], shown: list[LayoutPlan], seconds: float, lang: str,
               mine: Any = None) -> None:
    """The text report; ``mine``: the line placing the launch's own layout (``--args-file``), shown first."""
    say = lambda msg: print(msg.render(lang))  # noqa: E731
    say(tr("{arch}: {total:.2f}B parameters ({active:.2f}B active per token), {world} devices of {device:g} GiB "
           "({memory:.1f} usable: --headroom {headroom:g}), {tokens} tokens per micro-batch ({seq} x {micro}), "
           "MindSpeed {release}", arch=spec.architecture, device=float(args.device_memory_gib),
           headroom=float(args.headroom),
           total=total_parameters(spec) / 1e9, active=active_parameters(spec) / 1e9, world=world, memory=memory,
           tokens=options.seq_len * options.micro_batch_size, seq=options.seq_len, micro=options.micro_batch_size,
           release=args.mindspeed_release))
    fitting = sum(p.fits for p in plans)
    say(tr("{valid} valid layouts, {fit} fit ({seconds:.2f}s)", valid=len(plans), fit=fitting, seconds=seconds))
    if mine is not None:
        say(mine)
    if not shown:
        say(tr("no layout passes the layout rules on this cluster"))
        return
    if args.sort == "memory":
        say(tr("ranked by peak memory per device; 'step' is the step-time proxy relative to the fastest fitting "
               "layout"))
    else:
        say(tr("ranked by a step-time proxy (compute, recompute, pipeline bubble, communication volume; not a "
               "measurement), then peak memory; 'step' is relative to the fastest fitting layout"))
    heads = ("#", "TP", "PP", "VPP", "CP", trp("column", "CP algorithm"), "EP", "ETP", trp("column", "first/last"),
             trp("column", "recompute"), trp("column", "GiB/device"), trp("column", "step"), trp("column", "fits"),
             trp("column", "memory"))
    heads = tuple(render(h, lang) for h in heads)
    print()
    print(_table([heads] + [_row(i, p, memory, lang) for i, p in enumerate(shown, 1)]))
    names = component_names(lang)
    say(tr("memory bar: W {w}, G {g}, O {o}, R {r}, A {a}, L {l}, S {s}, . {rest}; | is the device limit",
           w=names["weights"], g=names["gradients"], o=names["optimizer"], r=names["ref_weights"],
           a=names["activations"], l=names["logits"], s=names["optimizer_step"],
           rest=tr("runtime, buffers, allocator slack")))
    # The overrides of every fitting layout shown with --top K; of the first 3 by default, saying so.
    usable = [(row, p) for row, p in enumerate(shown, 1) if p.fits]
    limit = len(usable) if args.top is not None else DEFAULT_BLOCKS
    for row, plan in usable[:limit]:
        heading = trp("heading", "layout {row}", row=row).render(lang)
        print(f"\n# {heading}: {label(plan)}, {plan.layout.recompute.label()}")
        print("#   " + _why(plan, memory, lang))
        print(" \\\n".join(f"    {line}" for line in plan.overrides))
    if len(usable) > limit:
        print()
        say(tr("overrides shown for the first {n} fitting layouts of the table; --top K shows them for each of the "
               "first K rows", n=limit))
    if not fitting:
        lowest = min(p.memory.peak_gib for p in plans)
        print()
        say(tr("nothing fits in {memory:g} GiB (lowest estimate {lowest:.1f} GiB), so no overrides are shown; more "
               "devices, --optimizer-offload-fraction, --ref-param-offload, --use-fused-kernels or a shorter "
               "--seq-len may help", memory=memory, lowest=lowest))
    print()
    say(tr("estimates, not measurements: see docs/model-checks.md for every term and its calibration"))


def as_json(spec: ModelSpec, args: argparse.Namespace, nnodes: int, per_node: int, memory: float,
            options: MemoryOptions, plans: list[LayoutPlan], shown: list[LayoutPlan], launch: Any = None) -> str:
    return json.dumps({
        "launch": launch,
        "layouts": [p.to_json() for p in shown],
        "model": {"architecture": spec.architecture, "family": spec.family, "layers": spec.num_layers,
                  "parameters_total": total_parameters(spec), "parameters_active": active_parameters(spec)},
        "cluster": {"nnodes": nnodes, "n_gpus_per_node": per_node, "world_size": nnodes * per_node,
                    "device_memory_gib": memory},
        "assumptions": {"seq_len": options.seq_len, "micro_batch_size": options.micro_batch_size,
                        "full_recompute": options.full_recompute, "ref_param_offload": options.ref_param_offload,
                        "distributed_optimizer": options.distributed_optimizer,
                        "optimizer_offload_fraction": options.optimizer_offload_fraction,
                        "use_fused_kernels": options.use_fused_kernels, "entropy_in_update": options.entropy_in_update,
                        "moe_imbalance": options.moe_imbalance, "mindspeed_release": args.mindspeed_release,
                        "device": options.device},
        "ranking": "step_time_proxy" if args.sort == "throughput" else "peak_memory",
        "valid_layouts": len(plans),
        "fitting_layouts": sum(p.fits for p in plans),
    }, indent=2)


def write_chart(path: str, spec: ModelSpec, world: int, memory: float, shown: list[LayoutPlan], lang: str) -> str:
    """The memory of ``shown`` (24 at most) as an SVG, or an HTML page when ``path`` ends in .html/.htm."""
    rows = [(label(p) + (f" {p.layout.recompute.label()}" if p.layout.recompute.granularity else ""),
             p.memory.breakdown(), p.fits) for p in shown[:24]]
    title = tr("{arch} on {world} devices: peak memory per device by layout", arch=spec.architecture,
               world=world).render(lang)
    draw = render_html if path.lower().endswith((".html", ".htm")) else render_svg
    Path(path).write_text(draw(rows, memory, title=title, lang=lang), encoding="utf-8")
    return path


__all__ = ["DEFAULT_BLOCKS", "as_json", "label", "print_text", "write_chart"]
