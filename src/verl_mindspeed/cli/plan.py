"""``verl-mindspeed plan``: the parallel layouts that work for a model on a cluster.

Imports neither torch, megatron nor verl, so it answers in about a second.
Exit status: 0 when at least one layout fits, 1 when none fits (or none passes the layout rules),
2 when the command or the model config cannot be evaluated (:class:`UsageError`: one line, or one JSON
object with ``--json``). The report itself is :mod:`._plan_report`; ``--args-file`` is :mod:`._plan_launch`.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Optional

from .. import eras
from ..catalog.universe import DEFAULT_RELEASE, releases
from ..errors import EvaluationError
from ..i18n import render, tr
from ..model import ModelSpec, load_model_spec
from ..model.layouts import MAX_LAYERS, MAX_WORLD, plan_layouts, rank_plans
from ..model.memory import HEADROOM, MemoryOptions
from . import _plan_launch, _plan_report
from ._args import UsageError, add_common, choice, real, reason, whole

__all__ = ["add_parser", "run"]

PINS = ("tp", "pp", "cp", "ep", "etp")
"""The sizes a user may pin (``--tp`` ... ``--etp``, each a Layout field)."""
PLAN_VERL = "0.9.1"
"""The verl release layouts are planned for unless --verl-version says otherwise."""
NO_FIT = 1
"""Exit status when no layout fits the device memory."""
MAX_SEQ = 1 << 24
MAX_MICRO = 4096

#: Every number plan reads, by option: one check for the command line (the argparse ``type``) and for the values
#: ``--args-file`` or the defaults fill in after parsing (``FILLED``).
NUMBERS = {
    "--nnodes": whole("--nnodes", maximum=MAX_WORLD),
    "--n-gpus-per-node": whole("--n-gpus-per-node", maximum=MAX_WORLD),
    "--seq-len": whole("--seq-len", maximum=MAX_SEQ),
    "--micro-batch-size": whole("--micro-batch-size", maximum=MAX_MICRO),
    "--device-memory-gib": real("--device-memory-gib", 0.0, 1e6, low_open=True),
    "--headroom": real("--headroom", 0.0, 1.0, low_open=True),
    "--top": whole("--top"),
    "--optimizer-offload-fraction": real("--optimizer-offload-fraction", 0.0, 1.0),
    "--moe-imbalance": real("--moe-imbalance", 1.0, 64.0),
    **{f"--{size}": whole(f"--{size}") for size in PINS},
}
FILLED = ("--nnodes", "--n-gpus-per-node", "--seq-len", "--micro-batch-size")


def release_choice(lang: str):
    """A release branch, or its short name as ``check`` takes it (``26.1``, ``2.3``)."""
    from ..catalog.universe import canonical_release

    strict = choice(releases(), lang)
    return lambda text: canonical_release(text) or strict(text)


def add_parser(sub: argparse._SubParsersAction, lang: str = "en") -> argparse.ArgumentParser:
    """Register the ``plan`` subcommand, its help in ``lang``."""
    say = lambda text: render(text, lang)  # noqa: E731
    p = sub.add_parser(
        "plan",
        help=say(tr("list the parallel layouts that fit a model on a cluster, with overrides for actor and ref")),
        description=say(tr(
            "Enumerate every layout (TP, PP and its stage split, VPP, CP and its algorithm, EP, ETP, recompute) that "
            "passes the layout rules for a model and cluster, estimate the peak memory per device and a step-time "
            "proxy of each, and print the best with ready-to-paste overrides. Exit status: 0 some layout fits, 1 "
            "none fits, 2 bad input.")),
    )
    add = p.add_argument

    def number(flag: str, metavar: str, text: str, default: Optional[float] = None) -> None:
        add(flag, type=NUMBERS[flag], default=default, metavar=metavar, help=text)

    add("--args-file", metavar="FILE", help=say(tr(
        "start from your own launch (an args file or a launch script): the model, cluster, sequence, micro-batch "
        "and run options it sets fill the options not given here, and the report places its layout among the "
        "others")))
    add("--model", default=None, metavar="PATH", help=say(tr("HF config.json, or a directory holding one")))
    number("--nnodes", "N", say(tr("number of nodes (trainer.nnodes)")))
    number("--n-gpus-per-node", "G", say(tr("devices per node (trainer.n_gpus_per_node)")))
    number("--seq-len", "L", say(tr(
        "tokens of one sequence, prompt + response (with dynamic batch size: ppo_max_token_len_per_gpu); "
        "default 4096")))
    number("--micro-batch-size", "B", say(tr("sequences per micro-batch (default 1)")))
    number("--device-memory-gib", "GIB", say(tr("memory of one device in GiB (default 64, Atlas 800T A2)")), 64.0)
    number("--headroom", "F", say(tr("share of the device a layout may use to fit (default {headroom:g}: above it "
                                     "check warns)", headroom=HEADROOM)), HEADROOM)
    number("--top", "K", say(tr("show the K best layouts (text default 10; JSON default all)")))
    add("--sort", type=choice(("throughput", "memory"), lang), default="throughput", metavar="{throughput,memory}",
        help=say(tr("rank fitting layouts by the step-time proxy (default) or by peak memory")))
    add("--full-recompute", action="store_true", help=say(tr("only full recompute, uniform, 1 layer per unit")))
    add("--ref-param-offload", action="store_true",
        help=say(tr("the ref model's weights are offloaded (actor_rollout_ref.ref.megatron.param_offload)")))
    add("--no-distributed-optimizer", action="store_true",
        help=say(tr("megatron.use_distributed_optimizer=False: Adam states are not sharded over data parallel")))
    number("--optimizer-offload-fraction", "F", say(tr(
        "share of Adam states megatron keeps on the host (optimizer_cpu_offload), 0 to 1 (default 0)")))
    add("--no-grad-reduce-in-fp32", action="store_true", help=say(tr(
        "megatron.override_ddp_config.grad_reduce_in_fp32=False: bf16 gradients, 2 bytes per parameter instead "
        "of 4")))
    add("--use-fused-kernels", action="store_true", help=say(tr(
        "actor_rollout_ref.model.use_fused_kernels=True: log-probs and entropy without full logits")))
    add("--entropy", action="store_true", help=say(tr("the update computes entropy (entropy_coeff != 0)")))
    number("--moe-imbalance", "X", say(tr(
        "routed tokens on the busiest expert rank over the balanced share, 1 to 64 (default 1.0)")), 1.0)
    add("--mindspeed-release", type=release_choice(lang), default=DEFAULT_RELEASE, metavar="RELEASE",
        help=say(tr("MindSpeed release branch ({branches}): which CP algorithms exist (default {release})",
                    branches=", ".join(releases()), release=DEFAULT_RELEASE)))
    add("--verl-version", default=PLAN_VERL, metavar="VERSION", help=say(tr(
        "the verl release the layouts are for (default {version}): VPP layouts only where it runs them on NPU "
        "(verl 0.6/0.7 with use_mbridge=False; 0.8+ asserts use_mbridge)", version=PLAN_VERL)))
    for size in PINS:
        number(f"--{size}", "N", say(tr("keep {size} at N: only layouts with it", size=size.upper())))
    add("--chart", metavar="PATH", help=say(tr(
        "write an SVG of the shown layouts' memory (an HTML page if PATH ends in .html)")))
    add("--json", action="store_true", help=say(tr("print JSON instead of a table")))
    add_common(p, lang)
    p.set_defaults(run=run)
    return p


def _dest(flag: str) -> str:
    return flag[2:].replace("-", "_")


def _inputs(args: argparse.Namespace) -> tuple[ModelSpec, MemoryOptions, float]:
    """The model, the run options and the usable memory per device, from options already checked."""
    if args.nnodes * args.n_gpus_per_node > MAX_WORLD:
        raise UsageError(tr("{devices} devices: plan handles at most {maximum}",
                            devices=args.nnodes * args.n_gpus_per_node, maximum=MAX_WORLD))
    options = MemoryOptions(
        seq_len=args.seq_len, micro_batch_size=args.micro_batch_size, full_recompute=args.full_recompute,
        ref_param_offload=args.ref_param_offload, distributed_optimizer=not args.no_distributed_optimizer,
        optimizer_offload_fraction=args.optimizer_offload_fraction, use_fused_kernels=args.use_fused_kernels,
        entropy_in_update=args.entropy, moe_imbalance=args.moe_imbalance,
        grad_reduce_in_fp32=not args.no_grad_reduce_in_fp32, **(getattr(args, "launch_options", None) or {}))
    spec, note = load_model_spec(args.model)
    if spec is None:
        raise UsageError(note)
    if spec.num_layers > MAX_LAYERS:
        raise UsageError(tr("the model has {layers} layers: plan handles at most {maximum}", layers=spec.num_layers,
                            maximum=MAX_LAYERS))
    return spec, options, args.device_memory_gib * args.headroom


def run(args: argparse.Namespace) -> int:
    """Run ``plan``: 0 when a layout fits, 1 when none does; :class:`UsageError` when the input cannot be evaluated."""
    lang = args.lang
    try:
        launch = _plan_launch.fill(args)
    except (_plan_launch.LaunchProblem, EvaluationError) as bad:
        raise UsageError(reason(bad)) from None
    for flag in FILLED:  # filled in as text by --args-file or the defaults: the command line's check
        if isinstance(getattr(args, _dest(flag)), str):
            setattr(args, _dest(flag), NUMBERS[flag](getattr(args, _dest(flag))))
    spec, options, memory = _inputs(args)
    nnodes, per_node = args.nnodes, args.n_gpus_per_node
    pinned = {size: getattr(args, size) for size in PINS if getattr(args, size) is not None}
    try:
        interleave = eras.era_of(str(args.verl_version)) == eras.LEGACY
    except ValueError as exc:
        raise UsageError(f"--verl-version: {exc}") from None
    started = time.perf_counter()
    try:
        kept_recompute = args.launch_layout.recompute if launch is not None and args.launch_layout else None
        plans = plan_layouts(spec, nnodes, per_node, device_memory_gib=memory, options=options,
                             release=args.mindspeed_release, sort=args.sort, interleave=interleave,
                             keep_recompute=kept_recompute)
    except Exception as exc:  # noqa: BLE001 - plan prints one line, never a traceback
        raise UsageError(tr("cannot plan this model: {error}", error=exc)) from None
    plans = [p for p in plans if all(getattr(p.layout, name) == value for name, value in pinned.items())]
    row, mine = None, None
    dropped, kept, unbatched = [], [], []
    if launch is not None:  # the launch's own layout, its split and recompute as it sets them
        plans, dropped, kept = _plan_launch.keeping(plans, args.launch_otc, args.launch_ref_otc)
        plans, unbatched = _plan_launch.batch_fits(plans, args.launch_batch, nnodes * per_node)
        plans = rank_plans(spec, plans, args.sort) if dropped or unbatched else plans  # relative to the fastest kept
        plans, row, mine = _plan_launch.place(spec, args.launch_layout, plans, nnodes, per_node, memory, options,
                                              args.sort)
    seconds = time.perf_counter() - started
    top = args.top if args.top is not None else (None if args.json else 10)
    if launch is not None and args.launch_source is not None:  # the blocks printed carry what check asks of them
        blocks = args.top if args.top is not None else _plan_report.DEFAULT_BLOCKS
        plans = _plan_launch.complete(plans, args.launch_source, blocks, model_config=str(args.model),
                                      release=args.mindspeed_release, verl_version=str(args.verl_version))
    shown = plans if top is None else plans[:top]
    chart = None
    if args.chart:  # written before the report, so that a failure is the only output (one JSON object with --json)
        try:
            chart = _plan_report.write_chart(args.chart, spec, nnodes * per_node, memory, shown or plans[:10], lang)
        except OSError as exc:
            raise UsageError(tr("cannot write the chart: {error}", error=exc)) from None
    if args.json:
        print(_plan_report.as_json(spec, args, nnodes, per_node, memory, options, plans, shown,
                                   launch={"layout": launch, "row": row} if launch is not None else None))
    else:
        placed = (_plan_launch.line(_plan_launch.describe(launch, spec.is_moe), row, mine, len(plans)), mine) \
            if launch is not None else None
        _plan_report.print_text(spec, args, nnodes * per_node, memory, options, plans, shown, seconds, lang, placed)
        if dropped:
            print(tr("{n} layouts with TP 1 left out: they would turn off {features}, which the launch turns on",
                     n=len(dropped), features=", ".join(kept)).render(lang))
        if unbatched:
            print(tr("{n} layouts left out: their data-parallel size does not divide the launch's batch sizes "
                     "(data.train_batch_size, ppo_mini_batch_size, ppo_micro_batch_size_per_gpu)",
                     n=len(unbatched)).render(lang))
        if kept_recompute is not None and kept_recompute.granularity and not options.full_recompute:
            print(tr("the launch's recompute ({recompute}) is kept on every layout it fits (in memory, and in each "
                     "stage's layers); where it does not, the row names plan's own choice",
                     recompute=kept_recompute.label()).render(lang))
    if chart:
        print(tr("chart written to {path}", path=chart).render(lang), file=sys.stderr if args.json else sys.stdout)
    return 0 if any(p.fits for p in plans) else NO_FIT
