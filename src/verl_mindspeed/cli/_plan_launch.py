"""``plan --args-file``: what ``plan`` needs, read from the user's own launch (file or script).

Options given on the command line win; the launch fills the rest: the model (``actor_rollout_ref.model.path``,
also from the Hugging Face cache), the cluster (``trainer.nnodes``, ``trainer.n_gpus_per_node``), the sequence
(prompt + response, or ``ppo_max_token_len_per_gpu`` with dynamic batch size), the micro-batch, the run options
the memory estimate depends on, and the launch's own layout, which the report then places among the others.
"""

from __future__ import annotations

import argparse
from typing import Any, Optional

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ..compose import compose_argv
from ..compose._script import read_launch_file
from ..i18n import tr
from ..model.hf import local_model_dir

ACTOR = "actor_rollout_ref.actor"
SIZES = {"tp": "tensor_model_parallel_size", "pp": "pipeline_model_parallel_size", "cp": "context_parallel_size",
         "ep": "expert_model_parallel_size", "etp": "expert_tensor_parallel_size",
         "vpp": "virtual_pipeline_model_parallel_size"}
#: The defaults of the options a launch can fill (applied when neither the command line nor the launch says).
DEFAULTS = {"seq_len": "4096", "micro_batch_size": "1"}


class LaunchProblem(ValueError):
    """The launch cannot give what plan needs (the message says what is missing)."""


def _select(cfg: Any, key: str) -> Any:
    try:
        return OmegaConf.select(cfg, key, default=None)
    except OmegaConfBaseException:
        return None


def fill(args: argparse.Namespace) -> Optional[dict[str, Any]]:
    """Fill ``args`` from ``--args-file`` (when given) and the defaults; the launch's layout, or ``None``."""
    layout = None
    if getattr(args, "args_file", None):
        source = read_launch_file(args.args_file)
        cfg = compose_argv(source.argv, entry=source.entry).cfg
        layout = _fill(args, cfg)
    for name, value in DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
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
    dynamic = _select(cfg, f"{ACTOR}.use_dynamic_bsz") is True
    if args.seq_len is None:
        if dynamic:
            args.seq_len = str(_select(cfg, f"{ACTOR}.ppo_max_token_len_per_gpu"))
        else:
            prompt, response = _select(cfg, "data.max_prompt_length"), _select(cfg, "data.max_response_length")
            if isinstance(prompt, int) and isinstance(response, int):
                args.seq_len = str(prompt + response)
    if args.micro_batch_size is None and not dynamic:
        micro = _select(cfg, f"{ACTOR}.ppo_micro_batch_size_per_gpu")
        if isinstance(micro, int):
            args.micro_batch_size = str(micro)
    args.ref_param_offload = (args.ref_param_offload
                              or _select(cfg, "actor_rollout_ref.ref.megatron.param_offload") is True)
    args.use_fused_kernels = (args.use_fused_kernels
                              or _select(cfg, "actor_rollout_ref.model.use_fused_kernels") is True)
    args.entropy = args.entropy or _select(cfg, f"{ACTOR}.entropy_coeff") not in (None, 0, 0.0)
    args.no_distributed_optimizer = args.no_distributed_optimizer or \
        _select(cfg, f"{ACTOR}.megatron.use_distributed_optimizer") is False
    sizes = {name: _select(cfg, f"{ACTOR}.megatron.{key}") for name, key in SIZES.items()}
    if sizes["etp"] is None:
        sizes["etp"] = sizes["tp"]
    return {k: v for k, v in sizes.items() if v is not None or k == "vpp"}


def place(layout: dict[str, Any], plans: list, moe: bool = True) -> tuple[Optional[int], Any]:
    """The row (1-based) of the first planned layout with the launch's sizes (expert sizes only for a MoE model,
    where they mean something), and that plan."""
    wanted = {k: v for k, v in layout.items() if moe or k not in ("ep", "etp")}
    for row, plan in enumerate(plans, 1):
        if all(getattr(plan.layout, name) == value for name, value in wanted.items()):
            return row, plan
    return None, None


def describe(layout: dict[str, Any], moe: bool = True) -> str:
    names = ("tp", "pp", "cp", "ep", "etp") if moe else ("tp", "pp", "cp")
    text = " ".join(f"{name.upper()}{layout[name]}" for name in names if name in layout)
    return text + (f" VPP{layout['vpp']}" if layout.get("vpp") else "")


def line(layout: str, row: Optional[int], plan: Any, total: int) -> Any:
    """Where the launch's own layout ranks, as the report's last line."""
    if plan is None:
        return tr("your launch's layout {layout} is not among the {n} layouts listed (pinned away, or refused by "
                  "the layout rules: 'verl-mindspeed check' says why)", layout=layout, n=total)
    return tr("your launch's layout {layout} is row {row} of {n}: {gib:.1f} GiB per device, step {step:.2f}x, "
              "{fits}", layout=layout, row=row, n=total, gib=plan.memory.peak_gib, step=plan.relative_time,
              fits=tr("fits") if plan.fits else tr("does not fit"))
