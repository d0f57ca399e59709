"""verl's own checks, per era: what verl's Megatron engine asserts on a role's engine config when each worker
starts, before MindSpeed is ever called (``verl/workers/engine/megatron/transformer_impl.py``), and the batch
sizes its trainer asserts against the actor's data-parallel size."""

from __future__ import annotations

from math import gcd
from typing import Iterable, Optional

from .. import eras
from ..errors import Issue
from ..i18n import tr
from ..model.verl_options import select as _select
from ._base import SEARCH_CEILING, Context, RoleView, _int, error, issue, rule


@rule("verl-engine-mbridge", holds_for="verl 0.8.0 and later",
      cites="verl 0.8.0, 0.9.0, 0.9.1 verl/workers/engine/megatron/transformer_impl.py MegatronEngine.__init__ "
            "(assert self.engine_config.use_mbridge, 'use_mbridge must be True')")
def engine_mbridge(role: RoleView, ctx: Context) -> Iterable[Issue]:
    """verl 0.8+ builds every Megatron model through a bridge and asserts it in each worker's engine."""
    if ctx.era is None or ctx.era.id != eras.ENGINE or role.megatron.get("use_mbridge") is not False:
        return
    yield error(role.mkey("use_mbridge"), tr(
        "use_mbridge=False cannot run on {era}: verl's Megatron engine asserts 'use_mbridge must be True' when each "
        "worker starts", era=ctx.era.releases), "verl-engine-mbridge", override=role.mset_line("use_mbridge", True))


_VERL_BATCH = ("verl 0.9.1 verl/utils/config.py validate_config; verl/workers/config/actor.py ActorConfig.validate; "
               "verl/workers/engine_workers.py update (mini_batch_size % data-parallel size)")


@rule("batch-divisibility", cites=_VERL_BATCH, holds_for="verl 0.6.0 and later", scope="run")
def batch_divisibility(roles: dict[str, RoleView], ctx: Context) -> Iterable[Issue]:
    """The batch sizes verl asserts at start (and at the first update) against the actor's data-parallel size."""
    actor, cfg, world = roles.get("actor"), ctx.config, ctx.world_size
    if actor is None or cfg is None or not world:
        return
    model_parallel = actor.tp * actor.pp * actor.cp
    if world % model_parallel:
        return  # the world-size rule reports it
    dp = world // model_parallel
    train, n = _int(_select(cfg, "data.train_batch_size")), _int(_select(cfg, "actor_rollout_ref.rollout.n")) or 1
    mini = _int(_select(cfg, "actor_rollout_ref.actor.ppo_mini_batch_size"))
    micro = _int(_select(cfg, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"))
    dynamic = _select(cfg, "actor_rollout_ref.actor.use_dynamic_bsz") is True
    sizes = tr("data-parallel size {dp} = {world} devices / (TP x PP x CP = {tp} x {pp} x {cp})", dp=dp, world=world,
               tp=actor.tp, pp=actor.pp, cp=actor.cp)
    # the nearest sizes that satisfy every assertion at once: the mini batch first (it bounds the train batch)
    # (m x n) % dp == 0: m a multiple of dp / gcd(n, dp); within the train batch unless dynamic (else train moves up)
    mini_unit, cap = dp // gcd(n, dp), train if train and not dynamic else None
    new_mini = mini if not mini or (mini % mini_unit == 0 and (cap is None or mini <= cap)) else (
        _nearest_multiple(mini, mini_unit, high=cap) or _nearest_multiple(mini, mini_unit))
    train_unit = 1 if dynamic or not micro else (dp * micro) // gcd(n, dp * micro)
    new_train = train if not train or (train % train_unit == 0 and train >= (new_mini or 1)) else \
        _nearest_multiple(train, train_unit, low=new_mini or 1)
    train_fault, mini_fault = batch_faults(dp, train, n, mini, micro, dynamic)
    if train_fault:
        yield error("data.train_batch_size", tr(
            "data.train_batch_size x actor_rollout_ref.rollout.n = {train} x {n} = {total} requires a multiple of "
            "data-parallel size x actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu = {dp} x {micro} = {unit}",
            train=train, n=n, total=train * n, dp=dp, micro=micro, unit=dp * micro), "batch-divisibility", hint=sizes,
            override=f"data.train_batch_size={new_train}" if new_train else None)
    if not dynamic and train and mini and train < mini:
        yield error("actor_rollout_ref.actor.ppo_mini_batch_size", tr(
            "actor_rollout_ref.actor.ppo_mini_batch_size={mini} requires data.train_batch_size >= {mini} (got {train})",
            mini=mini, train=train), "batch-divisibility", override=_mini_fix(new_mini, new_train, train))
    if mini_fault:
        yield error("actor_rollout_ref.actor.ppo_mini_batch_size", tr(
            "actor_rollout_ref.actor.ppo_mini_batch_size x actor_rollout_ref.rollout.n = {mini} x {n} = {total} "
            "requires a multiple of the actor's data-parallel size {dp}", mini=mini, n=n, total=mini * n, dp=dp),
            "batch-divisibility", hint=sizes, override=_mini_fix(new_mini, new_train, train))


def batch_faults(dp: int, train: Optional[int], n: int, mini: Optional[int], micro: Optional[int],
                 dynamic: bool) -> tuple[bool, bool]:
    """(the train batch, the mini batch) that verl refuses at the actor's data-parallel size ``dp``: ``train x n`` a
    multiple of ``dp x micro`` (without dynamic batch size), ``mini x n`` a multiple of ``dp``."""
    return (not dynamic and bool(train and micro) and (train * n) % (dp * micro) != 0,
            bool(mini) and (mini * n) % dp != 0)


def _nearest_multiple(value: int, unit: int, low: int = 1, high: Optional[int] = None) -> Optional[int]:
    """The multiple of ``unit`` from ``low`` to ``high`` nearest ``value`` (the smaller one on a tie), or None: found
    by arithmetic, so a value of forty digits costs what 8 does."""
    lo = -(-max(low, 1) // unit) * unit
    hi = None if high is None else (high // unit) * unit
    if hi is not None and hi < lo:
        return None
    clamped = max(lo, value if hi is None else min(value, hi))
    down = (clamped // unit) * unit
    found = [c for c in (down, down + unit) if c >= lo and (hi is None or c <= hi)]
    return min(found, key=lambda c: (abs(c - value), c)) if found else None


def _mini_fix(new_mini, new_train, train) -> str | None:
    """The mini batch's line, with the train batch's when that has to move for it."""
    if not new_mini:
        return None
    lines = [f"actor_rollout_ref.actor.ppo_mini_batch_size={new_mini}"]
    if new_train and new_train != train:
        lines.append(f"data.train_batch_size={new_train}")
    return " ".join(lines)


_VERL_MICRO = ("verl 0.9.1 verl/utils/config.py validate_config (minimal_bsz = dp x "
               "ppo_micro_batch_size_per_gpu; check_mutually_exclusive); verl/workers/config/critic.py "
               "CriticConfig.__post_init__; verl 0.4.1 to 0.9.0 check the actor the same way")
#: The micro batch sizes verl's driver requires without dynamic batching, per role: (section, old key, per-GPU key).
_MICRO = {"actor": ("actor_rollout_ref.actor", "ppo_micro_batch_size", "ppo_micro_batch_size_per_gpu"),
          "rollout": ("actor_rollout_ref.rollout", "log_prob_micro_batch_size", "log_prob_micro_batch_size_per_gpu"),
          "ref": ("actor_rollout_ref.ref", "log_prob_micro_batch_size", "log_prob_micro_batch_size_per_gpu"),
          "critic": ("critic", "ppo_micro_batch_size", "ppo_micro_batch_size_per_gpu")}


@rule("verl-micro-batch", cites=_VERL_MICRO, holds_for="verl 0.4.1 and later", scope="run")
def micro_batch_sizes(roles: dict[str, RoleView], ctx: Context) -> Iterable[Issue]:
    """verl's driver (``validate_config``, the first thing ``main_ppo`` runs) requires one micro batch size per pass
    without dynamic batching: none is a ValueError (the actor's, in 0.9.1, a TypeError), both is a ValueError."""
    cfg = ctx.config
    if cfg is None or "actor" not in roles or not ctx.driver_validates:
        return  # the fully-async entry never calls validate_config
    for part, (section, old, per_gpu) in _MICRO.items():
        if part in ("ref", "critic") and part not in roles:
            continue
        dynamic = ("critic" if part == "critic" else "actor_rollout_ref.actor") + ".use_dynamic_bsz"
        if _select(cfg, dynamic) is True:
            continue
        old_key, new_key = ".".join((section, old)), ".".join((section, per_gpu))
        given = [k for k in (old_key, new_key) if _select(cfg, k) is not None]
        if not given:
            yield error(new_key, tr(
                "{key} is not set: without dynamic batching ({dynamic}=False) verl's driver requires a micro batch "
                "size and stops in validate_config, before any worker starts", key=new_key, dynamic=dynamic),
                "verl-micro-batch", override=new_key + "=1",
                hint=tr("1 is the smallest size; a larger value is faster where the memory allows"))
        elif len(given) == 2:
            yield error(old_key, tr(
                "{old} and {new} are both set: verl's driver accepts only {new} (the former is deprecated)",
                old=old_key, new=new_key), "verl-micro-batch", override=old_key + "=null")


_ROLLOUT = "actor_rollout_ref.rollout."


@rule("rollout-world-divides", scope="run", holds_for="verl 0.5.0 and later (colocated rollout)",
      cites="verl 0.9.1 verl/workers/engine_workers.py ActorRolloutRefWorker.init_model (assert self.world_size % "
            "infer_world_size == 0, 'rollout world_size: ... is not divisible by infer_world_size: ...'); verl 0.6.1/"
            "0.7.1 verl/workers/megatron_workers.py _build_rollout; verl 0.5.0 (infer_tp)")
def rollout_world_divides(roles: dict[str, RoleView], ctx: Context) -> Iterable[Issue]:
    """The colocated rollout splits the actor's devices into rollout groups of TP x DP x PP: found by the doctor
    in a public failure (a one-device run with the default rollout TP 2) that no check caught before the launch."""
    cfg, world = ctx.config, ctx.world_size
    if cfg is None or not world or "actor" not in roles or _select(cfg, "actor_rollout_ref.hybrid_engine") is False:
        return
    tp = _int(_select(cfg, _ROLLOUT + "tensor_model_parallel_size")) or 1
    dp = _int(_select(cfg, _ROLLOUT + "data_parallel_size")) or 1
    pp = _int(_select(cfg, _ROLLOUT + "pipeline_model_parallel_size")) or 1
    if world % (tp * dp * pp) == 0:
        return
    # the sizes that divide are at most the world: picked among them, not searched for outward from a size of
    # any length
    fits = [t for t in range(1, min(world, SEARCH_CEILING) + 1) if world % (t * dp * pp) == 0]
    fixed = min(fits, key=lambda t: (abs(t - tp), t)) if fits else None
    yield error(_ROLLOUT + "tensor_model_parallel_size", tr(
        "the rollout's groups of TP x DP x PP = {tp} x {dp} x {pp} devices do not divide the {world} devices it runs "
        "on (trainer.nnodes x trainer.n_gpus_per_node): verl asserts 'rollout world_size: {world} is not divisible "
        "by infer_world_size: {size}' when the workers build the rollout", tp=tp, dp=dp, pp=pp, world=world,
        size=tp * dp * pp), "rollout-world-divides",
        override=f"{_ROLLOUT}tensor_model_parallel_size={fixed}" if fixed else None)


_MODEL = "actor_rollout_ref.model."


@rule("megatron-lora-key", scope="run", holds_for="verl 0.8.0 and later (the Megatron engine)",
      cites="verl 0.8.0, 0.9.0, 0.9.1 verl/workers/config/megatron_peft.py get_peft_cls (model.lora.rank <= 0: no "
            "adapter); verl/trainer/ppo/ray_trainer.py (ref_in_actor from lora.rank, else lora_rank); "
            "verl/workers/engine/megatron/transformer_impl.py disable_adapter (self.peft_cls.disable_adapter)")
def megatron_lora_key(roles: dict[str, RoleView], ctx: Context) -> Iterable[Issue]:
    """verl's Megatron engine builds LoRA from ``model.lora.rank`` only; ``model.lora_rank`` (the FSDP engine's key)
    still makes the trainer take the reference from the actor with its adapter off, and there is no adapter: found
    by the doctor in a public thread (a Megatron launch with ``model.lora_rank``) that no check caught."""
    cfg = ctx.config
    if cfg is None or "actor" not in roles or ctx.era is None or ctx.era.id != eras.ENGINE:
        return
    rank = _int(_select(cfg, _MODEL + "lora_rank")) or 0
    if rank <= 0 or (_int(_select(cfg, _MODEL + "lora.rank")) or 0) > 0:
        return
    fix = " ".join([f"{_MODEL}lora.rank={rank}"] + (
        ["actor_rollout_ref.actor.megatron.vanilla_mbridge=False"]  # the adapter needs Megatron-Bridge's provider
        if roles["actor"].megatron.get("vanilla_mbridge") is True else []))
    if ctx.stack is not None and not ctx.stack.bridge_usable():
        fix = None  # get_peft_cls asserts Megatron-Bridge's provider, which this stack cannot import: no line helps
    uses_ref = _select(cfg, "actor_rollout_ref.actor.use_kl_loss") is True or \
        _select(cfg, "algorithm.use_kl_in_reward") is True
    text = tr("{key}={rank} builds no adapter on verl's Megatron engine, which reads LoRA from {lora}: every "
              "parameter trains", key=_MODEL + "lora_rank", rank=rank, lora=_MODEL + "lora.rank")
    if fix is None:
        text = tr("{text}; and LoRA there needs Megatron-Bridge's provider (get_peft_cls asserts it), which this "
                  "stack cannot import with megatron-core {core}: LoRA on the Megatron engine needs a stack with "
                  "Megatron-Bridge", text=text, core=ctx.stack.megatron_core)
    if uses_ref:
        yield error(_MODEL + "lora_rank", tr(
            "{text}; and the trainer takes the reference from the actor with its adapter off (the KL loss needs it), "
            "which fails at the first reference pass (AttributeError: 'NoneType' object has no attribute "
            "'disable_adapter')", text=text), "megatron-lora-key", override=fix)
    else:
        yield issue("warning", _MODEL + "lora_rank", text, "megatron-lora-key", override=fix)


@rule("verl-mandatory-value", scope="run", holds_for="verl 0.6.0 and later (rollout.name is '???' in rollout.yaml)",
      cites="verl 0.6.0 to 0.9.1 verl/trainer/config/rollout/rollout.yaml (name: ???); OmegaConf raises "
            "MissingMandatoryValue when verl's TaskRunner reads the key")
def mandatory_values(roles: dict[str, RoleView], ctx: Context) -> Iterable[Issue]:
    """A key verl's config leaves '???' (mandatory) that the launch does not set: the first read of it in the
    TaskRunner stops the run (a section switched off, ``enable: False``, is never read). Found by the doctor in a
    public thread (a quickstart command without ``rollout.name``)."""
    from omegaconf import DictConfig, OmegaConf

    def missing(node, path: str, live: bool):
        if not isinstance(node, DictConfig) or node._is_none() or node._is_missing() or node._is_interpolation():
            return
        if "enable" in node and node.get("enable") is False:
            live = False  # a section switched off: nothing under it is read
        for key in node.keys():
            where = f"{path}.{key}" if path else str(key)
            if where == "hydra":  # Hydra's own node (a config composed as its app runs): not verl's
                continue
            if OmegaConf.is_missing(node, key):
                if live:
                    yield where
            elif not OmegaConf.is_interpolation(node, key):
                yield from missing(node._get_node(key), where, live)

    if ctx.config is None or "actor" not in roles:
        return
    for key in missing(ctx.config, "", True):
        engine = key.endswith("rollout.name")  # every release's rollout registry has vllm and sglang
        yield error(key, tr("{key} has no value ('???' in verl's config) and the launch does not set it: verl stops "
                            "with MissingMandatoryValue when it reads it", key=key), "verl-mandatory-value",
                    override=f"{key}=vllm" if engine else None,
                    hint=tr("the rollout engines every verl release builds: vllm (vllm-ascend on Ascend) and sglang")
                    if engine else "")
