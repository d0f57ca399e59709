"""``plan --args-file``: what ``plan`` needs, read from the user's own launch (file or script).

Options given on the command line win; the launch fills the rest: the model (``actor_rollout_ref.model.path``,
also from the Hugging Face cache), the cluster (``trainer.nnodes``, ``trainer.n_gpus_per_node``), the tokens of
each phase (:mod:`..model.verl_options`: the update's, the old-log-prob pass's and the ref's, as verl 0.9.1 reads
them; a ``--seq-len`` or ``--micro-batch-size`` on the command line sets them all), the run options the memory
estimate depends on (offloads, the HybridDeviceOptimizer's ``optimizer_offload_fraction``,
``grad_reduce_in_fp32``, a ref model or not), and the launch's own layout, its stage split and recompute included,
which the report then places among the others.
"""

from __future__ import annotations

import argparse
import shlex
from dataclasses import replace
from typing import Any, Optional

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ..compose import compose_argv
from ..compose._script import read_launch_file
from ..i18n import tr
from ..model import Layout, ModelSpec, layout_from_role, stage_layer_counts
from ..model.hf import local_model_dir
from ..model.layouts import LayoutPlan, evaluate_layout, rank_plans
from ..model.memory import MemoryOptions
from ..model.verl_options import options_from_config
from ..overrides import split_override
from ..rules.verl_engine import batch_faults
from ..simulate import as_int

ACTOR = "actor_rollout_ref.actor"
REF = "actor_rollout_ref.ref"
#: The launch's batch sizes verl asserts against the actor's data-parallel size.
_BATCH = {"train": "data.train_batch_size", "n": "actor_rollout_ref.rollout.n",
          "mini": f"{ACTOR}.ppo_mini_batch_size", "micro": f"{ACTOR}.ppo_micro_batch_size_per_gpu",
          "dynamic": f"{ACTOR}.use_dynamic_bsz"}
#: The defaults of the options a launch can fill (applied when neither the command line nor the launch says).
DEFAULTS = {"seq_len": "4096", "micro_batch_size": "1"}
#: MemoryOptions fields only a launch sets (no plan option); the token fields give way to --seq-len/--micro-batch-size.
LAUNCH_ONLY = ("dynamic_batch", "ref_model", "param_offload", "optimizer_offload", "hybrid_optimizer",
               "precision_aware_optimizer")
TOKENS = ("log_prob_tokens", "ref_log_prob_tokens", "ref_dynamic_batch")


class LaunchProblem(ValueError):
    """The launch cannot give what plan needs (the message says what is missing)."""


def _select(cfg: Any, key: str) -> Any:
    try:
        return OmegaConf.select(cfg, key, default=None)
    except OmegaConfBaseException:
        return None


def _container(cfg: Any, key: str) -> dict:
    try:
        node = OmegaConf.select(cfg, key, default=None)
        found = OmegaConf.to_container(node, resolve=True) if node is not None else None
    except (OmegaConfBaseException, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def fill(args: argparse.Namespace) -> Optional[dict[str, Any]]:
    """Fill ``args`` from ``--args-file`` (when given) and the defaults; the launch's layout as JSON, or ``None``.

    Sets ``args.launch_options`` (MemoryOptions fields only the launch gives), ``args.launch_layout`` (the
    launch's :class:`Layout`, or ``None``) and ``args.launch_otc`` (the actor's dict as the launch writes it)."""
    layout = None
    args.launch_options, args.launch_layout, args.launch_otc, args.launch_ref_otc = {}, None, None, None
    args.launch_batch, args.launch_source = None, None
    if getattr(args, "args_file", None):
        source = read_launch_file(args.args_file)
        composed = compose_argv(source.argv, entry=source.entry)
        cfg = composed.cfg
        layout = _fill(args, cfg)
        written = _container(cfg, f"{ACTOR}.megatron.override_transformer_config")
        defaults = composed.tree.otc_defaults or {}  # verl's own dict keys are not the launch's
        args.launch_otc = {k: v for k, v in written.items() if k not in defaults or defaults[k] != v}
        args.launch_batch = {name: _select(cfg, key) for name, key in _BATCH.items()}
        args.launch_source = source
        ref_otc = f"{REF}.megatron.override_transformer_config"
        if any(split_override(a)[1].startswith(ref_otc) for a in source.argv if "=" in a):  # the ref's own dict
            args.launch_ref_otc = {k: v for k, v in _container(cfg, ref_otc).items()
                                   if k not in defaults or defaults[k] != v}
    for name, value in DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.optimizer_offload_fraction is None:
        args.optimizer_offload_fraction = 0.0
    for name in ("model", "nnodes", "n_gpus_per_node"):
        if getattr(args, name) is None:
            raise LaunchProblem(tr("--{flag} is needed (or --args-file with a launch that sets it)",
                                   flag=name.replace("_", "-")))
    return layout


def _fill(args: argparse.Namespace, cfg: Any) -> dict[str, Any]:
    if args.model is None:
        path = _select(cfg, "actor_rollout_ref.model.path")
        if isinstance(path, str) and path:
            found = local_model_dir(path)
            if found is None:
                raise LaunchProblem(tr("the launch's model path {path} is not on this machine: give --model",
                                       path=path))
            args.model = found
    for name, key in (("nnodes", "trainer.nnodes"), ("n_gpus_per_node", "trainer.n_gpus_per_node")):
        if getattr(args, name) is None and _select(cfg, key) is not None:
            setattr(args, name, str(_select(cfg, key)))
    found = options_from_config(cfg)
    tokens_given = args.seq_len is not None or args.micro_batch_size is not None
    for name in ("seq_len", "micro_batch_size"):
        if getattr(args, name) is None and name in found:
            setattr(args, name, str(found[name]))
    args.ref_param_offload = args.ref_param_offload or found["ref_param_offload"]
    args.use_fused_kernels = args.use_fused_kernels or found["use_fused_kernels"]
    args.entropy = args.entropy or found["entropy_in_update"]
    args.no_distributed_optimizer = args.no_distributed_optimizer or found.get("distributed_optimizer") is False
    args.no_grad_reduce_in_fp32 = args.no_grad_reduce_in_fp32 or found["grad_reduce_in_fp32"] is False
    if args.optimizer_offload_fraction is None:
        args.optimizer_offload_fraction = found.get("optimizer_offload_fraction")
    else:  # the option decides: 0 is megatron's plain optimizer, more is the HybridDeviceOptimizer
        found["hybrid_optimizer"] = float(args.optimizer_offload_fraction) > 0
    args.launch_options = {k: v for k, v in found.items()
                           if k in LAUNCH_ONLY or (k in TOKENS and not tokens_given)}
    role = _container(cfg, f"{ACTOR}.megatron")
    role["override_transformer_config"] = _container(cfg, f"{ACTOR}.megatron.override_transformer_config")
    own = layout_from_role(role)
    args.launch_layout = own
    return {"tp": own.tp, "pp": own.pp, "cp": own.cp, "ep": own.ep, "etp": own.etp, "vpp": own.vpp,
            "num_layers_in_first_pipeline_stage": own.first_stage_layers,
            "num_layers_in_last_pipeline_stage": own.last_stage_layers,
            "context_parallel_algo": own.cp_algo if own.cp > 1 else None, "recompute": own.recompute.label()}


def place(spec: ModelSpec, own: Layout, plans: list[LayoutPlan], nnodes: int, per_node: int, memory: float,
          options: MemoryOptions, sort: str) -> tuple[list[LayoutPlan], Optional[int], Optional[LayoutPlan]]:
    """The plans with the launch's own layout among them (its split, CP algorithm and recompute, not plan's
    choice for its sizes), its row (1-based) and its plan. Placed only when plan lists its sizes (expert sizes only
    for a MoE model): otherwise the layout rules refused them, or a pin did."""
    if not spec.is_moe:
        own = replace(own, ep=1, etp=1)
    sizes = ("tp", "pp", "vpp", "cp", "ep", "etp")
    same = [p for p in plans if all(getattr(p.layout, name) == getattr(own, name) for name in sizes)]
    if not same:
        return plans, None, None
    counts = stage_layer_counts(spec.num_layers, own.pp, own.first_stage_layers, own.last_stage_layers)
    for plan in same:
        lay = plan.layout
        if lay.recompute == own.recompute and (own.cp == 1 or (lay.cp_algo, lay.ulysses_degree) == (
                own.cp_algo, own.ulysses_degree)) and \
                stage_layer_counts(spec.num_layers, lay.pp, lay.first_stage_layers, lay.last_stage_layers) == counts:
            return plans, plans.index(plan) + 1, plan
    try:
        mine = evaluate_layout(spec, own, nnodes, per_node, device_memory_gib=memory, options=options)
    except (ValueError, ZeroDivisionError, TypeError):  # odd recompute values in the launch: not placed
        mine = None
    if mine is None:
        return plans, None, None
    plans = rank_plans(spec, plans + [mine], sort)
    return plans, next(row for row, plan in enumerate(plans, 1) if plan is mine), mine


def describe(layout: dict[str, Any], moe: bool = True) -> str:
    names = ("tp", "pp", "cp", "ep", "etp") if moe else ("tp", "pp", "cp")
    text = " ".join(f"{name.upper()}{layout[name]}" for name in names if name in layout)
    text += f" VPP{layout['vpp']}" if layout.get("vpp") else ""
    first, last = layout.get("num_layers_in_first_pipeline_stage"), layout.get("num_layers_in_last_pipeline_stage")
    text += f" {first or '-'}/{last or '-'}" if first or last else ""
    return text + (f" {layout['recompute']}" if layout.get("recompute") else "")


def line(layout: str, row: Optional[int], plan: Any, total: int) -> Any:
    """Where the launch's own layout ranks, as the report's last line."""
    if plan is None:
        return tr("your launch's layout {layout} is not among the {n} layouts listed (pinned away, or refused by "
                  "the layout rules: 'verl-mindspeed check' says why)", layout=layout, n=total)
    return tr("your launch's layout {layout} is row {row} of {n}: {gib:.1f} GiB per device, step {step:.2f}x, "
              "{fits}", layout=layout, row=row, n=total, gib=plan.memory.peak_gib, step=plan.relative_time,
              fits=tr("fits") if plan.fits else tr("does not fit"))


def keeps(otc: Optional[dict]) -> list[str]:
    """The features a launch turns on that a layout can turn off: sequence parallelism and MC2 need TP >= 2."""
    return [name for name in ("sequence_parallel", "use_ascend_mc2") if (otc or {}).get(name) is True]


def keeping(plans: list, otc: Optional[dict], ref_otc: Optional[dict] = None) -> tuple[list, list, list[str]]:
    """(the plans that keep the launch's features, each carrying the launch's dicts for its block's companions;
    the plans left out; the features kept)."""
    kept = keeps(otc)
    stay = [replace(p, launch=otc, launch_ref=ref_otc) for p in plans if not kept or p.layout.tp >= 2]
    return stay, [p for p in plans if kept and p.layout.tp < 2], kept


def batch_fits(plans: list, batch: Optional[dict], world: int) -> tuple[list, list]:
    """(the plans whose data-parallel size the launch's batch sizes divide, the ones left out): a layout that would
    make verl refuse the launch's batch sizes at start is not proposed (the rule batch-divisibility)."""
    if not batch:
        return plans, []
    n = as_int(batch.get("n")) or 1
    train, mini, micro = (as_int(batch.get(k)) for k in ("train", "mini", "micro"))

    def fits(p: Any) -> bool:
        dp = world // (p.layout.tp * p.layout.pp * p.layout.cp)
        return not any(batch_faults(dp, train, n, mini, micro, batch.get("dynamic") is True))

    verdicts = [(p, fits(p)) for p in plans]
    return [p for p, ok in verdicts if ok], [p for p, ok in verdicts if not ok]


def complete(plans: list, source: Any, limit: int, **options: Any) -> list:
    """The plans with the blocks of the first ``limit`` fitting ones completed by ``check``: pasted at the end of the
    launch, an error the block brings (one the launch alone does not have) adds its fix line to the block, for two
    rounds; ``options`` go to :func:`~verl_mindspeed.launch.evaluate` (the model, the release)."""
    from ..errors import EvaluationError
    from ..launch import evaluate

    argv = list(source.argv)

    def errors(words: list[str]) -> list:
        try:
            return evaluate(words, entry=source.entry, follow=False, **options).errors
        except EvaluationError:
            return []

    base = {(i.rule, i.key) for i in errors(argv)}
    out = []
    for plan in plans:
        if limit <= 0 or not plan.fits:
            out.append(plan)
            continue
        limit -= 1
        extra: list[str] = []
        own = {split_override(word)[1] for word in plan.overrides}  # a companion never undoes the layout itself
        for _ in range(2):
            new = [i.override for i in errors(argv + list(plan.overrides) + extra)
                   if (i.rule, i.key) not in base and i.override]
            words = [word for line in new for word in shlex.split(line)
                     if word not in extra and split_override(word)[1] not in own]
            if not words:
                break
            extra += words
        out.append(replace(plan, companions=tuple(extra), checked=True))
    return out

