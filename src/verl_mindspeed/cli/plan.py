"""``verl-mindspeed plan``: the parallel layouts that work for a model on a cluster.

Imports neither torch, megatron nor verl, so it answers in well under a second.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from ..model import (
    LayoutPlan,
    MemoryOptions,
    ModelSpec,
    active_parameters,
    load_model_spec,
    plan_layouts,
    total_parameters,
)

__all__ = ["add_parser", "run"]

_COLUMNS = ("TP", "PP", "VPP", "CP", "EP", "ETP", "first/last", "GiB/device", "fits")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``plan`` subcommand."""
    parser = subparsers.add_parser(
        "plan",
        help="list the parallel layouts that fit a model on a cluster, with overrides for actor and ref",
        description="Enumerate every (TP, PP, VPP, CP, EP, ETP) layout that passes the layout rules for a model "
        "and cluster, estimate the memory per device of each, and print the best with ready-to-paste overrides.",
    )
    parser.add_argument("--model", required=True, metavar="PATH", help="HF config.json, or a directory holding one")
    parser.add_argument("--nnodes", type=int, required=True, metavar="N", help="trainer.nnodes")
    parser.add_argument("--n-gpus-per-node", type=int, required=True, metavar="G", help="trainer.n_gpus_per_node")
    parser.add_argument("--seq-len", type=int, default=4096, metavar="L",
                        help="tokens per micro-batch on one device (prompt + response; default 4096)")
    parser.add_argument("--device-memory-gib", type=float, default=64.0, metavar="GIB",
                        help="memory of one device (default 64, the Atlas 800T A2)")
    parser.add_argument("--top", type=int, default=None, metavar="K",
                        help="show the K best layouts (text default 10; JSON default all)")
    parser.add_argument("--full-recompute", action="store_true",
                        help="estimate with recompute_granularity=full (uniform, 1 layer)")
    parser.add_argument("--ref-param-offload", action="store_true",
                        help="the ref model's weights are offloaded (actor_rollout_ref.ref.megatron.param_offload)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(run=run, func=run)
    return parser


def _row(plan: LayoutPlan) -> tuple[str, ...]:
    lay = plan.layout
    split = "-" if lay.first_stage_layers is None else f"{lay.first_stage_layers}/{lay.last_stage_layers or '-'}"
    return (str(lay.tp), str(lay.pp), str(lay.vpp or "-"), str(lay.cp), str(lay.ep), str(lay.etp), split,
            f"{plan.memory.peak_gib:.1f}", "yes" if plan.fits else "no")


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.rjust(w) for cell, w in zip(row, widths)) for row in rows)


def _model_json(spec: ModelSpec) -> dict:
    return {
        "architecture": spec.architecture,
        "family": spec.family,
        "parameters_total": total_parameters(spec),
        "parameters_active": active_parameters(spec),
    }


def _print_text(spec: ModelSpec, args: argparse.Namespace, plans: list[LayoutPlan], shown: list[LayoutPlan],
                seconds: float) -> None:
    world = args.nnodes * args.n_gpus_per_node
    total, active = total_parameters(spec), active_parameters(spec)
    fitting = sum(p.fits for p in plans)
    print(f"{spec.architecture}: {total / 1e9:.2f}B parameters ({active / 1e9:.2f}B active per token), "
          f"{world} devices of {args.device_memory_gib:g} GiB, {args.seq_len} tokens per micro-batch")
    print(f"{len(plans)} valid layouts, {fitting} fit ({seconds:.2f}s)")
    if not shown:
        print("no layout passes the layout rules on this cluster")
        return
    print()
    print(_table([_COLUMNS] + [_row(p) for p in shown]))
    for rank, plan in enumerate(shown[:3], 1):
        print(f"\n# layout {rank}: " + " ".join(_row(plan)[:6]))
        print(" \\\n".join(f"    {line}" for line in plan.overrides))
    if not fitting:
        print("\nnothing fits: more devices, --full-recompute, --ref-param-offload or a shorter --seq-len may help")
    print("\nestimates only (weights, fp32 grads, Adam states, activations, ref weights): see docs/model-checks.md")


def run(args: argparse.Namespace) -> int:
    """Run ``plan``: 0 on success, 2 when the model config cannot be read or mapped."""
    spec, note = load_model_spec(args.model)
    if spec is None:
        print(f"verl-mindspeed plan: {note}", file=sys.stderr)
        return 2
    if args.nnodes < 1 or args.n_gpus_per_node < 1:
        print("verl-mindspeed plan: --nnodes and --n-gpus-per-node must be at least 1", file=sys.stderr)
        return 2
    options = MemoryOptions(seq_len=args.seq_len, full_recompute=getattr(args, "full_recompute", False),
                            ref_param_offload=getattr(args, "ref_param_offload", False))
    started = time.perf_counter()
    plans = plan_layouts(spec, args.nnodes, args.n_gpus_per_node,
                         device_memory_gib=args.device_memory_gib, options=options)
    seconds = time.perf_counter() - started
    top = args.top if args.top is not None else (None if args.json else 10)
    shown = plans if top is None else plans[:top]
    if args.json:
        print(json.dumps({
            "layouts": [p.to_json() for p in shown],
            "model": _model_json(spec),
            "cluster": {"nnodes": args.nnodes, "n_gpus_per_node": args.n_gpus_per_node,
                        "world_size": args.nnodes * args.n_gpus_per_node,
                        "device_memory_gib": args.device_memory_gib},
            "assumptions": {"seq_len": args.seq_len, "full_recompute": options.full_recompute,
                            "ref_param_offload": options.ref_param_offload,
                            "distributed_optimizer": options.distributed_optimizer,
                            "reserve_gib": options.reserve_gib},
            "valid_layouts": len(plans),
            "fitting_layouts": sum(p.fits for p in plans),
        }, indent=2))
    else:
        _print_text(spec, args, plans, shown, seconds)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Standalone entry, for ``python -m verl_mindspeed.cli.plan``."""
    parser = argparse.ArgumentParser(prog="verl-mindspeed")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["plan", *(sys.argv[1:] if argv is None else argv)])
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
