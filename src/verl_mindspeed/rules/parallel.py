"""Rules on parallel sizes: SP, CP sizes, device count, mbridge with VPP."""

from __future__ import annotations

from typing import Iterable

from ..errors import Issue
from ._base import Context, RoleView, error, rule, warning

@rule("sp-requires-tp", cites="megatron-core 0.12.1 megatron/core/model_parallel_config.py __post_init__")
def sp_requires_tp(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """verl turns its own megatron.sequence_parallel off at TP=1, but the dict's value goes to megatron as is."""
    if role.on("sequence_parallel") and role.tp == 1:
        yield error(
            role.key("sequence_parallel"),
            "sequence_parallel=True requires tensor_model_parallel_size > 1 (got 1)",
            "sp-requires-tp", hint="megatron raises 'Can not use sequence parallelism without tensor parallelism'; "
            "raise TP or drop the key", override=role.mset_line("tensor_model_parallel_size", 2),
        )


@rule("ep-tp-requires-sp", cites="megatron-core 0.12.1 megatron/core/model_parallel_config.py __post_init__")
def ep_tp_requires_sp(role: RoleView, ctx: Context) -> Iterable[Issue]:
    if role.ep > 1 and role.tp > 1 and role.sequence_parallel is False:
        yield error(
            role.key("sequence_parallel"),
            f"expert_model_parallel_size={role.ep} with tensor_model_parallel_size={role.tp} requires "
            "sequence_parallel=True",
            "ep-tp-requires-sp", override=role.set_line("sequence_parallel", True),
        )


@rule("cp-sizes-agree", cites="verl/workers/engine/mindspeed/transformer_impl.py _mindspeed_repatch; "
      "mindspeed/megatron_adaptor.py repatch")
def cp_sizes_agree(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """CP is listed twice in the guide: verl's size and the size MindSpeed reads must be equal."""
    dict_cp = role.otc.get("context_parallel_size")
    if isinstance(dict_cp, int) and not isinstance(dict_cp, bool) and dict_cp != role.cp:
        yield error(
            role.key("context_parallel_size"),
            f"override_transformer_config.context_parallel_size={dict_cp} and "
            f"megatron.context_parallel_size={role.cp} must be equal",
            "cp-sizes-agree",
            hint="verl builds process groups from megatron.context_parallel_size, MindSpeed patches from the dict",
            override=role.set_line("context_parallel_size", role.cp),
        )


@rule("model-parallel-divides-world", cites="megatron/core/parallel_state.py initialize_model_parallel")
def model_parallel_divides_world(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """TP x PP x CP must divide the number of devices."""
    size = role.tp * role.pp * role.cp
    if ctx.world_size and ctx.world_size % size:
        yield error(
            role.mkey("tensor_model_parallel_size"),
            f"tensor_model_parallel_size x pipeline_model_parallel_size x context_parallel_size = "
            f"{role.tp} x {role.pp} x {role.cp} = {size} must divide the device count "
            f"trainer.nnodes x trainer.n_gpus_per_node = {ctx.world_size}",
            "model-parallel-divides-world",
            hint="change a parallel size or the number of devices",
        )


@rule("expert-parallel-divides-world", cites="megatron/core/parallel_state.py initialize_model_parallel "
      "(expert-data-parallel group)")
def expert_parallel_divides_world(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """ETP x EP x PP must divide the number of devices."""
    size = role.etp * role.ep * role.pp
    if ctx.world_size and ctx.world_size % size:
        yield error(
            role.mkey("expert_model_parallel_size"),
            f"expert_tensor_parallel_size x expert_model_parallel_size x pipeline_model_parallel_size = "
            f"{role.etp} x {role.ep} x {role.pp} = {size} must divide the device count {ctx.world_size}",
            "expert-parallel-divides-world",
        )


@rule("mbridge-vpp", cites="MindSpeed docs/zh/user-guide/verl.md (mbridge cannot be combined with VPP)")
def mbridge_vpp(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """mbridge and virtual pipeline parallelism cannot be combined on NPU."""
    if role.megatron.get("use_mbridge") is True and (role.vpp or 1) > 1:
        yield error(
            role.mkey("virtual_pipeline_model_parallel_size"),
            f"use_mbridge=True and virtual_pipeline_model_parallel_size={role.vpp} cannot be combined on NPU",
            "mbridge-vpp", hint="set the VPP size to null, or use_mbridge=False with a dist checkpoint",
            override=role.mset_line("virtual_pipeline_model_parallel_size", None),
        )


@rule("vpp-requires-pp", cites="megatron/core/parallel_state.py (virtual pipeline needs PP > 1)")
def vpp_requires_pp(role: RoleView, ctx: Context) -> Iterable[Issue]:
    if (role.vpp or 1) > 1 and role.pp == 1:
        yield error(
            role.mkey("virtual_pipeline_model_parallel_size"),
            f"virtual_pipeline_model_parallel_size={role.vpp} requires pipeline_model_parallel_size > 1",
            "vpp-requires-pp", override=role.mset_line("virtual_pipeline_model_parallel_size", None),
        )



@rule("uneven-pp-needs-middle", cites="megatron-core 0.12.1 megatron/core/transformer/transformer_config.py "
      "(remaining layers divided by PP minus the uneven stages)")
def uneven_pp_needs_middle(role: RoleView, ctx: Context) -> Iterable[Issue]:
    first = role.otc.get("num_layers_in_first_pipeline_stage")
    last = role.otc.get("num_layers_in_last_pipeline_stage")
    uneven = [n for n in ("num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage")
              if role.otc.get(n) is not None]
    if uneven and role.pp == 1:
        yield warning(role.key(uneven[0]), f"{uneven[0]} has no effect: pipeline_model_parallel_size is 1",
                      "uneven-pp-needs-middle")
    elif first is not None and last is not None and role.pp == 2:
        yield error(
            role.key("num_layers_in_last_pipeline_stage"),
            "num_layers_in_first_pipeline_stage and num_layers_in_last_pipeline_stage together require "
            "pipeline_model_parallel_size > 2 (got 2)",
            "uneven-pp-needs-middle", hint="megatron-core divides the remaining layers by PP - 2 and fails at PP=2; "
            "set only one of them",
        )
