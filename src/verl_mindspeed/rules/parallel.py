"""Rules on parallel sizes: SP, CP sizes, device count, VPP, uneven pipeline stages."""

from __future__ import annotations

from typing import Iterable, Optional

from ..errors import Issue
from ..i18n import tr
from ..model._constraints import experts_split, groups_split, heads_split
from ..model.spec import ModelSpec
from ._base import FIRST_STAGE as _FIRST
from ._base import LAST_STAGE as _LAST
from ._base import Context, RoleView, _int, error, fmt, rule, size_fix, warning
from ._sizes import fix_world, tp_above_one, tp_fix

_MCORE_MPC = "megatron/core/model_parallel_config.py ModelParallelConfig.__post_init__"
_MCORE_TC = "megatron/core/transformer/transformer_config.py TransformerConfig.__post_init__"


@rule("sp-requires-tp", cites=_MCORE_MPC, holds_for="megatron-core 0.12.1 and 0.16.1")
def sp_requires_tp(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """verl turns its own megatron.sequence_parallel off at TP=1, but the dict's value goes to megatron as is."""
    if role.given.get("sequence_parallel") is True and role.built_size("tensor_model_parallel_size") == 1:
        yield error(
            role.key("sequence_parallel"),
            tr("sequence_parallel=True requires tensor_model_parallel_size > 1 (got 1)"),
            "sp-requires-tp", hint=tr("megatron raises 'Can not use sequence parallelism without tensor "
                                      "parallelism'; raise TP or drop the key"),
            override=_sp_fix(role, ctx),
        )


def _sp_fix(role: RoleView, ctx: Context) -> str:
    """The engine's TP where only the dict, or the groups of the role that owns them, made it 1; else the nearest
    TP every rule accepts (devices, heads); else, where the layout leaves no room for TP, SP off."""
    tp = tp_above_one(role, ctx)
    if tp is None:
        return role.set_line("sequence_parallel", False)
    return tp_fix(role, ctx, tp)


@rule("ep-tp-requires-sp", cites=_MCORE_MPC,
      holds_for="megatron-core 0.12.1 raises; 0.16.1 only warns")
def ep_tp_requires_sp(role: RoleView, ctx: Context) -> Iterable[Issue]:
    if role.built_size("expert_model_parallel_size") > 1 and role.built_size("tensor_model_parallel_size") > 1 \
            and role.sequence_parallel is False:
        make = error if ctx.core < (0, 16) else warning
        yield make(
            role.key("sequence_parallel"),
            tr("expert_model_parallel_size={ep} with tensor_model_parallel_size={tp} requires sequence_parallel=True",
               ep=role.ep, tp=role.tp),
            "ep-tp-requires-sp", override=size_fix(role, ctx, "expert_model_parallel_size", 1)
            if ctx.model is not None and not ctx.model.is_moe else role.set_line("sequence_parallel", True),
        )  # on a dense model EP > 1 is the mistake (model-experts-ep proposes the same)


#: The engine's parallel sizes a dict may repeat: verl copies the dict over them on the model's config, while the
#: process groups are built from the engine's.
_DICT_SIZES = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "virtual_pipeline_model_parallel_size",
               "context_parallel_size", "expert_model_parallel_size", "expert_tensor_parallel_size")


def _planned_size(role: RoleView, ctx: Context, name: str) -> tuple[bool, Optional[int]]:
    """Where the role reuses process groups another role built first (verl 0.8.0 and later: role-sizes-agree is an
    error whose line aligns every role on the actor's layout), (True, the actor's size), that size None for a VPP
    the actor leaves unset; else (False, None)."""
    actor = ctx.builds.get("actor")
    if role.owner or actor is None or not ctx.era or ctx.era.owner != "first":
        return False, None
    return True, _own_size(actor, name)


def _own_size(role: RoleView, name: str) -> Optional[int]:
    """The role's own engine size (``megatron.*``), ETP being TP when unset and VPP None when unset."""
    return role.etp if name == "expert_tensor_parallel_size" else (
        role.vpp if name == "virtual_pipeline_model_parallel_size" else role.size(name))


def _engine_size(role: RoleView, name: str) -> Optional[int]:
    """The size the model's config gets without the dict: the bridge's (Megatron-Bridge takes the role's engine
    sizes; mbridge and verl's converter the process groups'), ETP being TP when unset and VPP None when unset."""
    if not role.bridge:  # no bridge view (a bare view): the engine's own sizes
        return _own_size(role, name)
    value = _int(role.bridge.get(name))
    if value is None and name == "expert_tensor_parallel_size":
        return _int(role.bridge.get("tensor_model_parallel_size")) or 1
    if value is None and name != "virtual_pipeline_model_parallel_size":
        return 1
    return value


@rule("dict-sizes-agree", holds_for="verl 0.6.0 and later",
      cites="verl 0.9.1 verl/workers/engine/megatron/transformer_impl.py _build_tf_config (provider_overrides[key] = "
            "value, after the engine's sizes); mbridge set_extra_args; "
            "verl/workers/engine/mindspeed/transformer_impl.py _mindspeed_repatch")
def dict_sizes_agree(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """A parallel size in the dict replaces the one the model's config would get (the engine's, or on the legacy
    paths the process groups'), while Megatron's process groups keep theirs: the model is split for one size and
    run on another. The fix gives the dict the engine's size, or, where the model cannot be split by the engine's
    size but can by the dict's (EP 4 on a dense model, say), the engine the dict's; so does a role whose dict is
    the actor's, inherited (a line under its dict would replace what it inherits)."""
    for name in _DICT_SIZES:
        value, engine = _int(role.given.get(name)), _engine_size(role, name)
        planning, planned = _planned_size(role, ctx, name)
        if planning and engine != planned:
            # the process groups are those of the role built first, and role-sizes-agree's line aligns every role
            # on the actor's layout: the dict is measured against the size that line makes live, or the two lines
            # would undo each other
            engine = planned
        if value is None or value == engine:
            continue
        fix = role.set_line(name, engine)
        if (not _model_splits(ctx, name, engine) and _model_splits(ctx, name, value)) or \
                (role.inherits_actor and role.name != "actor"):
            # a dict inherited from the actor is fixed by the engine: a line under the role's dict would replace it
            # and the role would lose every key it inherits
            fix = role.mset_line(name, value)
        yield error(
            role.key(name),
            tr("override_transformer_config.{name}={value} and megatron.{name}={engine} must be equal: verl copies the "
               "dict over the engine's size in the model's config, while the process groups use the engine's",
               name=name, value=value, engine=fmt(engine)),
            "dict-sizes-agree", override=fix,
        )
    written = role.given.get("sequence_parallel")
    engine_sp = role.megatron.get("sequence_parallel") is not False and role.tp > 1
    if isinstance(written, bool) and written != engine_sp and not (written and role.tp == 1):
        yield warning(
            role.key("sequence_parallel"),
            tr("override_transformer_config.sequence_parallel={value} overrides the engine's "
               "sequence_parallel={engine}: the model is built with the dict's value",
               value=fmt(written), engine=fmt(engine_sp)),
            "dict-sizes-agree", override=role.mset_line("sequence_parallel", written),
        )


def _model_splits(ctx: Context, name: str, size: Optional[int]) -> bool:
    """Whether the model (when known) can be split by ``size`` for ``name``: heads and query groups over TP,
    experts over EP (a dense model over EP 1 only)."""
    spec = ctx.model if isinstance(ctx.model, ModelSpec) else None
    if spec is None or not size:
        return True
    if name == "tensor_model_parallel_size":
        return heads_split(spec, size) and groups_split(spec, size)
    if name == "expert_model_parallel_size":
        return experts_split(spec, size)
    return True


@rule("model-parallel-divides-world", holds_for="megatron-core 0.12.1 and 0.16.1",
      cites="megatron/core/parallel_state.py initialize_model_parallel; verl 0.9.1 verl/utils/config.py "
            "validate_config (n_gpus, the same product, in verl's driver first)")
def model_parallel_divides_world(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """TP x PP x CP must divide the number of devices."""
    size = role.tp * role.pp * role.cp
    if ctx.world_size and ctx.world_size % size:
        yield error(
            role.mkey("tensor_model_parallel_size"),
            tr("tensor_model_parallel_size x pipeline_model_parallel_size x context_parallel_size = "
               "{tp} x {pp} x {cp} = {size} must divide the device count trainer.nnodes x trainer.n_gpus_per_node = "
               "{world}", tp=role.tp, pp=role.pp, cp=role.cp, size=size, world=ctx.world_size),
            "model-parallel-divides-world",
            hint=tr("change a parallel size or the number of devices"),
            override=fix_world(role, ctx, ("pipeline_model_parallel_size", "tensor_model_parallel_size",
                                           "context_parallel_size")),
        )


@rule("expert-parallel-divides-world", holds_for="megatron-core 0.12.1 and 0.16.1",
      cites="megatron/core/parallel_state.py initialize_model_parallel (expert-data-parallel group)")
def expert_parallel_divides_world(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """ETP x EP x PP must divide the number of devices (ETP is TP when unset)."""
    size = role.etp * role.ep * role.pp
    if not ctx.world_size or ctx.world_size % size == 0:
        return
    assumed = role.megatron.get("expert_tensor_parallel_size") is None
    if assumed and role.ep == 1 and ctx.world_size % (role.tp * role.pp * role.cp):
        return  # the same product as TP x PP x CP: model-parallel-divides-world reports it, and its fix fixes both
    yield error(
        role.mkey("expert_model_parallel_size"),
        tr("expert_tensor_parallel_size x expert_model_parallel_size x pipeline_model_parallel_size = "
           "{etp} x {ep} x {pp} = {size} must divide the device count {world}{assumed}",
           etp=role.etp, ep=role.ep, pp=role.pp, size=size, world=ctx.world_size,
           assumed=tr(" (expert_tensor_parallel_size is unset: megatron takes TP)") if assumed else ""),
        "expert-parallel-divides-world",
        override=fix_world(role, ctx, ("expert_model_parallel_size",))
        or size_fix(role, ctx, "expert_tensor_parallel_size", 1),
    )


@rule("mbridge-vpp", holds_for="verl on NPU", cites="MindSpeed docs/zh/user-guide/verl.md (mbridge cannot be "
                                                      "combined with VPP)")
def mbridge_vpp(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """MindSpeed's verl guide says mbridge does not support VPP yet; no code refuses the pair, and verl's own
    Ascend CI runs it (Qwen3-0.6B, PP 2, VPP 2, mbridge): a warning, not an error."""
    if role.megatron.get("use_mbridge") is True and (role.vpp or 1) > 1:
        yield warning(
            role.mkey("virtual_pipeline_model_parallel_size"),
            tr("use_mbridge=True with virtual_pipeline_model_parallel_size={vpp}: MindSpeed's verl guide says mbridge "
               "does not support VPP yet, though no code refuses it and verl's Ascend CI runs the pair",
               vpp=role.vpp),
            "mbridge-vpp", hint=tr("try a short run first; if loading or saving weights fails, set the VPP size to "
                                   "null"),
            override=role.mset_line("virtual_pipeline_model_parallel_size", None),
        )


@rule("vpp-requires-pp", holds_for="megatron-core 0.12.1 and 0.16.1",
      cites="megatron/core/parallel_state.py initialize_model_parallel (RuntimeError: virtual pipeline without "
            "pipeline parallelism)")
def vpp_requires_pp(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """Any VPP size, even 1, with PP=1 fails when Megatron's parallel state is initialized: by the role that owns
    it (a later role's sizes never reach ``initialize_model_parallel``; role-sizes-agree reports them)."""
    groups_pp = _int(role.groups.get("pipeline_model_parallel_size")) or 1
    if role.vpp is not None and role.vpp == role.groups.get("virtual_pipeline_model_parallel_size") and groups_pp == 1:
        yield error(
            role.mkey("virtual_pipeline_model_parallel_size"),
            tr("virtual_pipeline_model_parallel_size={vpp} requires pipeline_model_parallel_size > 1", vpp=role.vpp),
            "vpp-requires-pp", override=role.mset_line("virtual_pipeline_model_parallel_size", None),
        )


@rule("uneven-pp-needs-middle", cites=_MCORE_TC,
      holds_for="one uneven stage size at PP=1: megatron-core 0.12.1 (ZeroDivisionError) and 0.16.1 (ValueError); "
                "both stages at PP=2: 0.12.1 only")
def uneven_pp_needs_middle(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """At PP=2 megatron-core 0.12.1 reads both stage sizes from the config as built, where MindSpeed's namespace
    fills what the role's dict does not set: a size another role's dict handed to repatch counts too."""
    first, last = role.get(_FIRST), role.get(_LAST)
    uneven = [n for n in (_FIRST, _LAST) if role.given.get(n) is not None]
    if len(uneven) == 2 and role.pp == 1:
        return  # model-layers-pp: megatron-core raises nothing there (0.16.1: unless they add up to num_layers)
    if uneven and role.pp == 1:
        yield error(
            role.key(uneven[0]),
            tr("{key} requires pipeline_model_parallel_size > 1 (got 1)", key=uneven[0]),
            "uneven-pp-needs-middle", override=role.set_line(uneven[0], None),
        )
    elif first is not None and last is not None and role.pp == 2 and ctx.core < (0, 16):
        yield error(
            role.key("num_layers_in_last_pipeline_stage"),
            tr("num_layers_in_first_pipeline_stage and num_layers_in_last_pipeline_stage together require "
               "pipeline_model_parallel_size > 2 (got 2)"),
            "uneven-pp-needs-middle", hint=tr("megatron-core 0.12.1 divides the remaining layers by PP - 2 and fails "
                                              "at PP=2; set only one of them"),
            # a size only the namespace holds (another role's dict): null in this role's dict wins over it
            override=" ".join(role.set_line(n, None) for n in (_FIRST, _LAST) if role.given.get(n) is None) or None,
        )
