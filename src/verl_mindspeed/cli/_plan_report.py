"""What ``plan`` prints: the text report (the table, its memory bars, the override blocks), the JSON object, the
chart (SVG or HTML)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..i18n import Msg, joined, render, tr, trp
from ..model import ModelSpec, active_parameters, total_parameters
from ..model.chart import component_names, render_html, render_svg, text_bar
from ..model.layouts import LayoutPlan
from ..model.memory import MemoryOptions
from ..model.throughput import Reason, layout_reasons
from ..report import width as display_width

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
            split, lay.recompute.label(), f"{plan.memory.peak_gib:.1f}", f"{plan.relative_time:.2f}",
            largest_term(plan, lang), fits, text_bar(plan.memory.breakdown(), limit))


#: The step-time terms by their name in a row (communication by its dimension).
_TERMS = {"compute": tr("compute"), "recompute": tr("recompute"), "bubble": tr("bubble"), "tp": "TP", "cp": "CP",
          "ep": "EP", "etp": "ETP", "pp": "PP", "dp": "DP"}


def largest_term(plan: LayoutPlan, lang: str) -> str:
    """The term of the step-time proxy that dominates the row, with its share: ``EP 41%``, ``compute 80%``."""
    term, share = max(plan.time.shares().items(), key=lambda kv: kv[1])
    return f"{render(_TERMS[term], lang)} {100 * share:.0f}%"


def pad(cell: str, width: int) -> str:
    """``cell`` right-aligned in ``width`` display columns (a CJK character takes two)."""
    return " " * (width - display_width(cell)) + cell


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(display_width(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(pad(c, w) if i < len(row) - 1 else c for i, (c, w) in enumerate(zip(row, widths)))
                     for row in rows)


def _why(plan: LayoutPlan, limit: float, lang: str) -> str:
    shares = plan.time.shares()
    comm = sum(shares[k] for k in ("tp", "cp", "ep", "etp", "pp", "dp"))
    pct = {k: round(100 * v) for k, v in shares.items()}
    return tr("step time {relative:.2f}x the fastest (compute {compute}%, recompute {recompute}%, bubble {bubble}%, "
              "communication {comm}%: TP {tp}%, CP {cp}%, EP {ep}%, ETP {etp}%, PP {pp}%, DP {dp}%); peak {peak:.1f} "
              "GiB on stage {stage} in the {phase} phase, {headroom:.1f} GiB left",
              relative=plan.relative_time, comm=round(100 * comm), peak=plan.memory.peak_gib,
              stage=plan.memory.stage, phase=plan.memory.phase, headroom=limit - plan.memory.peak_gib,
              **pct).render(lang)


#: Where a group's collective runs (a message renders in the reader's language when printed).
_WHERE = {"intra": tr("inside a node"), "inter": tr("across nodes")}


def _where(span: str) -> Msg:
    return _WHERE[span]


def _reason(r: Reason) -> Msg:
    """One dimension's reason, in the proxy's terms (``model.throughput.layout_reasons``)."""
    f, n, share = r.facts, r.size, 100 * r.share
    if r.dimension == "ep":
        return tr("EP {n}: experts ÷{n} ({per_rank} per rank), all-to-all over {n} {where}, {share:.0f}% of the step",
                  n=n, per_rank=f["experts_per_rank"], where=_where(f["span"]), share=share)
    if r.dimension == "etp":
        if f["gathers_tokens"]:
            return tr("ETP {n}: expert weights ÷{n}, routed tokens all-gathered over {n} {where}, {share:.0f}% of the "
                      "step", n=n, where=_where(f["span"]), share=share)
        return tr("ETP {n}: expert weights ÷{n}", n=n)
    if r.dimension == "tp":
        return tr("TP {n}: weights ÷{n}, {count} all-gather/reduce-scatter per layer {where}, {share:.0f}% of the "
                  "step", n=n, count=f["collectives_per_layer"], where=_where(f["span"]), share=share)
    if r.dimension == "cp":
        tokens, where = f["tokens_per_rank"], _where(f["span"])
        if f["algorithm"] == "ulysses_cp_algo":
            return tr("CP {n}: attention ÷{n} ({tokens} tokens per rank), all-to-all of Q/K/V/O over {n} {where}, "
                      "{share:.0f}% of the step", n=n, tokens=tokens, where=where, share=share)
        if f["algorithm"] == "kvallgather_cp_algo":
            return tr("CP {n}: attention ÷{n} ({tokens} tokens per rank), K/V all-gathered over {n} {where}, "
                      "{share:.0f}% of the step", n=n, tokens=tokens, where=where, share=share)
        if "ulysses" in f:
            return tr("CP {n}: attention ÷{n} ({tokens} tokens per rank), all-to-all over {ulysses} and a K/V ring "
                      "of {ring} {where}, {share:.0f}% of the step", n=n, tokens=tokens, ulysses=f["ulysses"],
                      ring=f["ring"], where=where, share=share)
        return tr("CP {n}: attention ÷{n} ({tokens} tokens per rank), K/V passed around a ring of {n} {where}, "
                  "{share:.0f}% of the step", n=n, tokens=tokens, where=where, share=share)
    if r.dimension == "pp":
        low, high = f["layers_min"], f["layers_max"]
        layers = str(low) if low == high else f"{low}-{high}"
        return tr("PP {n}: layers ÷{n} ({layers} per stage), bubble {bubble:.0f}% and stage-to-stage sends "
                  "{sends:.0f}% of the step", n=n, layers=layers, bubble=100 * f["bubble"], sends=100 * f["sends"])
    if r.dimension == "vpp":
        return tr("VPP {n}: bubble ÷{n}", n=n)
    return tr("DP {n}: gradient reduce-scatter and parameter all-gather over {group} {where}, {share:.0f}% of the "
              "step", n=n, group=f["group"], where=_where(f["span"]), share=share)


def reasons(spec: ModelSpec, plan: LayoutPlan, world: int, per_node: int, options: MemoryOptions
            ) -> list[tuple[Reason, Msg]]:
    """Each parallel dimension above 1 of ``plan`` with its one-clause reason."""
    found = layout_reasons(spec, plan.layout, world, per_node, options.seq_len, options.micro_batch_size,
                           plan.time)
    return [(r, _reason(r)) for r in found]


def reasons_line(spec: ModelSpec, plan: LayoutPlan, world: int, per_node: int, options: MemoryOptions) -> Msg:
    """The reasons of one layout as one line: ``EP 8: ...; TP 2: ...``."""
    parts = [msg for _, msg in reasons(spec, plan, world, per_node, options)]
    return joined(parts) if parts else tr("no parallel dimension above 1: one device runs the whole model")


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
        say(mine[0] if isinstance(mine, tuple) else mine)
        if isinstance(mine, tuple) and mine[1] is not None:  # the launch's own row explains itself as the others do
            print("#   " + _why(mine[1], memory, lang))
            print("#   " + reasons_line(spec, mine[1], world, args.n_gpus_per_node, options).render(lang))
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
             trp("column", "recompute"), trp("column", "GiB/device"), trp("column", "step"),
             trp("column", "largest term"), trp("column", "fits"), trp("column", "memory"))
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
        print("#   " + reasons_line(spec, plan, world, args.n_gpus_per_node, options).render(lang))
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
    world = nnodes * per_node

    def layout(p: LayoutPlan) -> dict:
        data = p.to_json()
        data["reasons"] = [dict(r.to_json(), text=str(msg)) for r, msg in reasons(spec, p, world, per_node, options)]
        return data

    return json.dumps({
        "launch": launch,
        "layouts": [layout(p) for p in shown],
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
                        "device": options.device, "dynamic_batch": options.dynamic_batch,
                        "log_prob_tokens": options.log_prob_tokens, "ref_log_prob_tokens": options.ref_log_prob_tokens,
                        "ref_dynamic_batch": options.ref_dynamic_batch, "ref_model": options.ref_model,
                        "param_offload": options.param_offload, "optimizer_offload": options.optimizer_offload,
                        "grad_reduce_in_fp32": options.grad_reduce_in_fp32},
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


__all__ = ["DEFAULT_BLOCKS", "as_json", "label", "print_text", "reasons", "reasons_line", "write_chart"]
