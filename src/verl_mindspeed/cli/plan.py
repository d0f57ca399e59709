"""``verl-mindspeed plan``: the parallel layouts that work for a model on a cluster.

Imports neither torch, megatron nor verl, so it answers in about a second.
Exit status: 0 when at least one layout fits, 1 when none fits (or none passes the
layout rules), 2 when the command or the model config cannot be evaluated.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any, Optional

from .. import eras
from ..catalog.universe import DEFAULT_RELEASE, releases
from ..errors import EvaluationError
from ..i18n import LANGS, default_lang, render, tr, trp
from ..model import ModelSpec, active_parameters, load_model_spec, total_parameters
from ..model.chart import component_names, render_html, render_svg, text_bar
from ..model.layouts import MAX_LAYERS, MAX_WORLD, LayoutPlan, plan_layouts
from ..model.memory import HEADROOM, MemoryOptions
from . import _plan_launch

__all__ = ["add_parser", "run"]

PINS = {"--tp": "tp", "--pp": "pp", "--cp": "cp", "--ep": "ep", "--etp": "etp"}
"""The sizes a user may pin (option -> Layout field)."""
PLAN_VERL = "0.9.1"
"""The verl release layouts are planned for unless --verl-version says otherwise."""
NO_FIT = 1
"""Exit status when no layout fits the device memory."""
MAX_SEQ = 1 << 24


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``plan`` subcommand."""
    parser = subparsers.add_parser(
        "plan",
        help="list the parallel layouts that fit a model on a cluster, with overrides for actor and ref",
        description="Enumerate every layout (TP, PP and its stage split, VPP, CP and its algorithm, EP, ETP, "
        "recompute) that passes the layout rules for a model and cluster, estimate the peak memory per device and a "
        "step-time proxy of each, and print the best with ready-to-paste overrides. Exit status: 0 some layout fits, "
        "1 none fits, 2 bad input.",
    )
    add = parser.add_argument
    add("--args-file", metavar="FILE", help="start from your own launch (an args file or a launch script): the "
        "model, cluster, sequence, micro-batch and run options it sets fill the options not given here, and the "
        "report places its layout among the others")
    add("--model", default=None, metavar="PATH", help="HF config.json, or a directory holding one")
    add("--nnodes", default=None, metavar="N", help="trainer.nnodes")
    add("--n-gpus-per-node", default=None, metavar="G", help="trainer.n_gpus_per_node")
    add("--seq-len", default=None, metavar="L",
        help="tokens of one sequence, prompt + response (with dynamic batch size: ppo_max_token_len_per_gpu); "
             "default 4096")
    add("--micro-batch-size", default=None, metavar="B", help="sequences per micro-batch (default 1)")
    add("--device-memory-gib", default="64", metavar="GIB", help="memory of one device (default 64, Atlas 800T A2)")
    add("--headroom", default=str(HEADROOM), metavar="F",
        help=f"share of the device a layout may use to fit (default {HEADROOM:g}: above it check warns)")
    add("--top", default=None, metavar="K", help="show the K best layouts (text default 10; JSON default all)")
    add("--sort", choices=("throughput", "memory"), default="throughput",
        help="rank fitting layouts by the step-time proxy (default) or by peak memory")
    add("--full-recompute", action="store_true", help="only full recompute, uniform, 1 layer per unit")
    add("--ref-param-offload", action="store_true",
        help="the ref model's weights are offloaded (actor_rollout_ref.ref.megatron.param_offload)")
    add("--no-distributed-optimizer", action="store_true",
        help="megatron.use_distributed_optimizer=False: Adam states are not sharded over data parallel")
    add("--optimizer-offload-fraction", default="0", metavar="F",
        help="share of Adam states megatron keeps on the host (optimizer_cpu_offload), 0 to 1")
    add("--use-fused-kernels", action="store_true",
        help="actor_rollout_ref.model.use_fused_kernels=True: log-probs and entropy without full logits")
    add("--entropy", action="store_true", help="the update computes entropy (entropy_coeff != 0)")
    add("--moe-imbalance", default="1.0", metavar="X",
        help="routed tokens on the busiest expert rank over the balanced share (default 1.0)")
    add("--mindspeed-release", default=DEFAULT_RELEASE, choices=releases(), metavar="RELEASE",
        help=f"MindSpeed release branch: which CP algorithms exist (default {DEFAULT_RELEASE})")
    add("--verl-version", default=PLAN_VERL, metavar="VERSION",
        help=f"the verl release the layouts are for (default {PLAN_VERL}): VPP layouts only where it runs them on "
             "NPU (verl 0.6/0.7 with use_mbridge=False; 0.8+ asserts use_mbridge)")
    for flag, size in (("--tp", "TP"), ("--pp", "PP"), ("--cp", "CP"), ("--ep", "EP"), ("--etp", "ETP")):
        add(flag, default=None, metavar="N", help=f"keep {size} at N: only layouts with it")
    add("--chart", metavar="PATH",
        help="write an SVG of the shown layouts' memory (an HTML page if PATH ends in .html)")
    add("--lang", choices=LANGS, default=None, help="language of the text output (default from LANG/LC_ALL)")
    add("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(run=run, func=run)
    return parser


class _Bad(Exception):
    """A bad input: its message is the one line printed."""


def _whole(args: argparse.Namespace, name: str, minimum: int = 1, maximum: Optional[int] = None) -> int:
    raw = getattr(args, name.lstrip("-").replace("-", "_"))
    try:
        value = int(str(raw), 10)
    except ValueError:
        raise _Bad(tr("{flag} must be a whole number >= {minimum} (got {value})", flag=name, minimum=minimum,
                      value=raw)) from None
    if value < minimum:
        raise _Bad(tr("{flag} must be a whole number >= {minimum} (got {value})", flag=name, minimum=minimum,
                      value=raw))
    if maximum is not None and value > maximum:
        raise _Bad(tr("{flag} must be at most {maximum} (got {value})", flag=name, maximum=maximum, value=raw))
    return value


def _real(args: argparse.Namespace, name: str, low: float, high: float, low_open: bool) -> float:
    raw = getattr(args, name.lstrip("-").replace("-", "_"))
    try:
        value = float(str(raw))
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value > high or value < low or (low_open and value == low):
        interval = ("(" if low_open else "[") + f"{low:g}, {high:g}]"
        raise _Bad(tr("{flag} must be a number in {interval} (got {value})", flag=name, value=raw, interval=interval))
    return value


def _inputs(args: argparse.Namespace) -> tuple[ModelSpec, int, int, MemoryOptions, float, Optional[int]]:
    nnodes = _whole(args, "--nnodes", maximum=MAX_WORLD)
    per_node = _whole(args, "--n-gpus-per-node", maximum=MAX_WORLD)
    if nnodes * per_node > MAX_WORLD:
        raise _Bad(tr("{devices} devices: plan handles at most {maximum}", devices=nnodes * per_node,
                      maximum=MAX_WORLD))
    seq = _whole(args, "--seq-len", maximum=MAX_SEQ)
    micro = _whole(args, "--micro-batch-size", maximum=4096)
    memory = _real(args, "--device-memory-gib", 0.0, 1e6, True) * _real(args, "--headroom", 0.0, 1.0, True)
    top = None if args.top is None else _whole(args, "--top")
    options = MemoryOptions(
        seq_len=seq, micro_batch_size=micro, full_recompute=args.full_recompute,
        ref_param_offload=args.ref_param_offload, distributed_optimizer=not args.no_distributed_optimizer,
        optimizer_offload_fraction=_real(args, "--optimizer-offload-fraction", 0.0, 1.0, False),
        use_fused_kernels=args.use_fused_kernels, entropy_in_update=args.entropy,
        moe_imbalance=_real(args, "--moe-imbalance", 1.0, 64.0, False))
    spec, note = load_model_spec(args.model)
    if spec is None:
        raise _Bad(note)
    if spec.num_layers > MAX_LAYERS:
        raise _Bad(tr("the model has {layers} layers: plan handles at most {maximum}", layers=spec.num_layers,
                      maximum=MAX_LAYERS))
    return spec, nnodes, per_node, options, memory, top


def _label(plan: LayoutPlan) -> str:
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


#: Override blocks printed without --top (the table then shows 10 rows).
DEFAULT_BLOCKS = 3


def _print_text(spec: ModelSpec, args: argparse.Namespace, world: int, memory: float, options: MemoryOptions,
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
        print(f"\n# {heading}: {_label(plan)}, {plan.layout.recompute.label()}")
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


def _json(spec: ModelSpec, args: argparse.Namespace, nnodes: int, per_node: int, memory: float,
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


def _write_chart(path: str, spec: ModelSpec, world: int, memory: float, shown: list[LayoutPlan], lang: str) -> str:
    rows = [(_label(p) + (f" {p.layout.recompute.label()}" if p.layout.recompute.granularity else ""),
             p.memory.breakdown(), p.fits) for p in shown[:24]]
    title = tr("{arch} on {world} devices: peak memory per device by layout", arch=spec.architecture,
               world=world).render(lang)
    render = render_html if path.lower().endswith((".html", ".htm")) else render_svg
    Path(path).write_text(render(rows, memory, title=title, lang=lang), encoding="utf-8")
    return path


def run(args: argparse.Namespace) -> int:
    """Run ``plan``: 0 when a layout fits, 1 when none does, 2 when the input cannot be evaluated."""
    lang = getattr(args, "lang", None) or default_lang()
    try:
        launch = _plan_launch.fill(args)
        spec, nnodes, per_node, options, memory, top = _inputs(args)
        pinned = {name: _whole(args, flag) for flag, name in PINS.items() if getattr(args, flag[2:]) is not None}
    except (_Bad, _plan_launch.LaunchProblem, EvaluationError) as bad:
        message = bad.args[0]
        print(f"verl-mindspeed plan: {message.render(lang) if hasattr(message, 'render') else message}",
              file=sys.stderr)
        return 2
    try:
        interleave = eras.era_of(str(args.verl_version)) == eras.LEGACY
    except ValueError as exc:
        print(f"verl-mindspeed plan: --verl-version: {exc}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    try:
        plans = plan_layouts(spec, nnodes, per_node, device_memory_gib=memory, options=options,
                             release=args.mindspeed_release, sort=args.sort, interleave=interleave)
    except Exception as exc:  # noqa: BLE001 - plan prints one line, never a traceback
        print("verl-mindspeed plan: " + tr("cannot plan this model: {error}", error=exc).render(lang), file=sys.stderr)
        return 2
    plans = [p for p in plans if all(getattr(p.layout, name) == value for name, value in pinned.items())]
    seconds = time.perf_counter() - started
    top = top if top is not None else (None if args.json else 10)
    shown = plans if top is None else plans[:top]
    row, mine = _plan_launch.place(launch, plans, spec.is_moe) if launch is not None else (None, None)
    if args.json:
        print(_json(spec, args, nnodes, per_node, memory, options, plans, shown,
                    launch={"layout": launch, "row": row} if launch is not None else None))
    else:
        placed = _plan_launch.line(_plan_launch.describe(launch, spec.is_moe), row, mine, len(plans)) \
            if launch is not None else None
        _print_text(spec, args, nnodes * per_node, memory, options, plans, shown, seconds, lang, placed)
    if args.chart:
        try:
            written = _write_chart(args.chart, spec, nnodes * per_node, memory, shown or plans[:10], lang)
        except OSError as exc:
            print("verl-mindspeed plan: " + tr("cannot write the chart: {error}", error=exc).render(lang),
                  file=sys.stderr)
            return 2
        print(tr("chart written to {path}", path=written).render(lang), file=sys.stderr if args.json else sys.stdout)
    return 0 if any(p.fits for p in plans) else NO_FIT


def main(argv: list[str] | None = None) -> int:
    """Standalone entry, for ``python -m verl_mindspeed.cli.plan``."""
    parser = argparse.ArgumentParser(prog="verl-mindspeed")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["plan", *(sys.argv[1:] if argv is None else argv)])
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
