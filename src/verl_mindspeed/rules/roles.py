"""Rules between roles, per verl era: who owns the parallel state, which dict MindSpeed really reads.

See :mod:`verl_mindspeed.eras` for what each era does; every rule here runs once per launch.
"""

from __future__ import annotations

from typing import Iterable

from .. import eras
from ..catalog import universe
from ..errors import Issue
from ..i18n import tr
from ._base import Context, RoleView, error, fmt, rule, warning

_SIZE_NAMES = {"tensor_model_parallel_size": "TP", "pipeline_model_parallel_size": "PP",
               "virtual_pipeline_model_parallel_size": "VPP", "context_parallel_size": "CP",
               "expert_model_parallel_size": "EP", "expert_tensor_parallel_size": "ETP"}


def _differences(view: RoleView, owner: RoleView) -> list[str]:
    return [k for k in eras.PARALLEL_SIZES if view.megatron.get(k) != owner.megatron.get(k)]


def _aligned(target: RoleView, name: str):
    """The size every role takes from ``target``: its own, but no VPP without a pipeline (vpp-requires-pp)."""
    if name == "virtual_pipeline_model_parallel_size" and target.pp == 1:
        return None
    return target.megatron.get(name)


@rule("role-sizes-agree", scope="run", holds_for="verl 0.6.0 and later",
      cites="verl 0.9.1 verl/workers/engine/megatron/transformer_impl.py _init_device_mesh (returns early when "
            "the parallel state exists); verl 0.7.1 verl/workers/megatron_workers.py CriticWorker.__init__")
def role_sizes_agree(roles: dict[str, RoleView], ctx: Context) -> Iterable[Issue]:
    """The first role built owns Megatron's parallel state; the others silently run with its sizes."""
    spec = ctx.era
    owner_name = spec.owner_of(list(roles)) if spec else None
    if owner_name is None or "actor" not in roles:
        return
    owner = roles[owner_name]
    actor = roles["actor"]
    for name in spec.builds(list(roles)):
        view = roles[name]
        if name == owner_name:
            continue
        diff = _differences(view, owner)
        if not diff:
            continue
        shown = ", ".join(f"{_SIZE_NAMES[k]} {fmt(view.megatron.get(k))} vs {fmt(owner.megatron.get(k))}" for k in diff)
        # align every role on the actor's layout: the layout the run was planned for
        target = actor if name != "actor" else view
        fixes = [f"++{roles[r].mkey(k)}={fmt(_aligned(target, k))}" for r in spec.builds(list(roles)) for k in diff
                 if (r != "actor" or _aligned(target, k) is None) and roles[r].megatron.get(k) != _aligned(target, k)]
        if spec.owner == "first":
            yield error(view.mkey(diff[0]), tr(
                "{role} would run with the parallel sizes of {owner} ({sizes}): in {era} the {owner} is built first "
                "and initializes Megatron's parallel state, and later roles reuse it without checking",
                role=name, owner=owner_name, sizes=shown, era=spec.releases), "role-sizes-agree",
                hint=tr("verl never asserts that the roles agree; give every role the same sizes"),
                override=" ".join(fixes) or None)
        else:
            yield warning(view.mkey(diff[0]), tr(
                "{role}'s parallel sizes are ignored ({sizes}): in {era} the actor's worker initializes Megatron's "
                "parallel state and {role} reuses it", role=name, sizes=shown, era=spec.releases),
                "role-sizes-agree", override=" ".join(fixes) or None)


@rule("legacy-critic-groups", scope="run", holds_for="verl 0.7.x legacy workers with vanilla_mbridge=False",
      cites="verl 0.7.1 verl/workers/megatron_workers.py CriticWorker (Megatron-Bridge provider takes the "
            "critic's own sizes)")
def legacy_critic_groups(roles: dict[str, RoleView], ctx: Context) -> Iterable[Issue]:
    """Where the critic's config (not the groups) sizes its model, ignored sizes break the build."""
    critic, actor = roles.get("critic"), roles.get("actor")
    if not (ctx.era and ctx.era.id == eras.LEGACY and critic and actor):
        return
    if critic.megatron.get("vanilla_mbridge") is False and critic.tp != actor.tp:
        yield error(critic.mkey("tensor_model_parallel_size"), tr(
            "critic tensor_model_parallel_size={tp} disagrees with the actor's process groups (TP={actor_tp}); "
            "with vanilla_mbridge=False the critic's model is sized from its own config", tp=critic.tp,
            actor_tp=actor.tp), "legacy-critic-groups",
            override=critic.mset_line("tensor_model_parallel_size", actor.tp))


@rule("role-switches-differ", scope="run", holds_for="verl 0.6.0 and later; MindSpeed 2.2.0+ (repatch merges)",
      cites="mindspeed/megatron_adaptor.py repatch; verl eras (see eras.py)")
def role_switches_differ(roles: dict[str, RoleView], ctx: Context) -> Iterable[Issue]:
    """MindSpeed switches are process-wide: a switch one role sets reaches every role of the process."""
    spec = ctx.era
    if spec is None or "actor" not in roles:
        return
    actor = roles["actor"]
    order = " -> ".join(spec.builds(list(roles)))
    for name, view in roles.items():
        if name == "actor":
            continue
        own = {k for k in view.explicit if universe.is_process_wide(k)}
        if spec.repatch_dict == "actor":
            for key in sorted(own):
                if view.otc.get(key) != actor.otc.get(key):
                    yield warning(view.key(key), tr(
                        "{role} sets {key}={value}, which has no effect: in {era} MindSpeed only ever receives the "
                        "actor's dict (actor: {actor_value})", role=name, key=key, value=fmt(view.otc[key]),
                        era=spec.releases, actor_value=fmt(actor.otc.get(key))), "role-switches-differ",
                        override=actor.set_line(key, view.otc[key]))
            continue
        for key in sorted(own | {k for k in actor.explicit if universe.is_process_wide(k)}):
            if key in view.otc and key in actor.otc and view.otc[key] != actor.otc[key]:
                yield warning(view.key(key), tr(
                    "{role} sets {key}={value} but the actor sets {actor_value}; MindSpeed's repatch merges every "
                    "build's dict into one process-wide namespace in the order {order}, so the last value wins for "
                    "every role at run time", role=name, key=key, value=fmt(view.otc[key]),
                    actor_value=fmt(actor.otc[key]), order=order), "role-switches-differ",
                    override=view.set_line(key, actor.otc[key]))


@rule("ref-lost-inherited", scope="run", holds_for="verl 0.6.0 and later",
      cites="verl trainer/config/ref/megatron_ref.yaml (${oc.select:actor_rollout_ref.actor.megatron."
            "override_transformer_config,{}})")
def ref_lost_inherited(roles: dict[str, RoleView], ctx: Context) -> Iterable[Issue]:
    """A write under ref's dict replaces the dict ref inherits from the actor."""
    ref, actor = roles.get("ref"), roles.get("actor")
    if ref is None or actor is None:
        return
    if ref.inherits_actor:
        return
    lost = sorted(k for k in actor.explicit if k not in ref.otc)
    if lost:
        yield warning(ref.otc_path, tr(
            "writing under ref's override_transformer_config replaced the dict ref inherits from the actor; "
            "ref lost: {keys}", keys=", ".join(lost)), "ref-lost-inherited",
            hint=tr("set them for ref too, or drop the ref line (ref inherits the actor's dict)"))


@rule("critic-engine-07", scope="run", holds_for="verl 0.7.x with trainer.use_legacy_worker_impl=disable",
      cites="verl 0.7.1 verl/trainer/ppo/ray_trainer.py init_workers (NotImplementedError for a megatron critic)")
def critic_engine_07(roles: dict[str, RoleView], ctx: Context) -> Iterable[Issue]:
    if ctx.era and ctx.era.id == eras.ENGINE_07 and "critic" in roles:
        yield error("trainer.use_legacy_worker_impl", tr(
            "trainer.use_legacy_worker_impl=disable and a Megatron critic cannot be combined in verl 0.7 "
            "(init_workers raises NotImplementedError)"), "critic-engine-07",
            override="trainer.use_legacy_worker_impl=auto")


@rule("no-repatch", scope="run", holds_for="MindSpeed 2.1.0 (repatch and a verl-compatible config wrapper arrived "
      "in 2.2.0)", cites="MindSpeed 2.1.0 mindspeed/megatron_adaptor.py (no repatch); "
      "mindspeed/core/transformer/transformer_config.py transformer_config_post_init_wrapper (get_args())")
def no_repatch(roles: dict[str, RoleView], ctx: Context) -> Iterable[Issue]:
    """MindSpeed 2.1.0 cannot run under verl: its config wrapper needs megatron.training's global args."""
    if universe.has_repatch(ctx.release):
        return
    switches = sorted({k for v in roles.values() for k in v.given if universe.is_process_wide(k) and v.given[k] not in
                       (None, False)})
    yield error("--mindspeed-release", tr(
        "MindSpeed {release} cannot build verl's model config: its TransformerConfig.__post_init__ wrapper calls "
        "megatron.training's get_args(), which verl never initializes (AssertionError: args is not initialized); "
        "it also has no repatch, so verl would ignore the switches {keys}", release=ctx.release,
        keys=", ".join(switches) or "-"), "no-repatch", hint=tr("use MindSpeed 2.2.0 or later"))


@rule("verl-no-repatch", scope="run", holds_for="verl 0.4.x and 0.5.x",
      cites="verl 0.5.0 verl/workers/megatron_workers.py (no repatch: verl 0.6.0 added it); "
            "mindspeed/megatron_adaptor.py (the namespace parsed at import)")
def verl_no_repatch(roles: dict[str, RoleView], ctx: Context) -> Iterable[Issue]:
    """Before verl 0.6 no build hands the dict to MindSpeed: its switches there reach megatron's config only."""
    if ctx.era is None or any(ctx.era.repatches(name) for name in roles):
        return
    switches = sorted({k for v in roles.values() for k in v.given if universe.is_process_wide(k) and v.given[k] not in
                       (None, False)})
    if switches:
        yield warning("actor_rollout_ref.actor.megatron.override_transformer_config", tr(
            "{era} never hand override_transformer_config to MindSpeed (repatch arrived in verl 0.6.0): its MindSpeed "
            "switches {keys} keep MindSpeed's defaults and have no effect, and MindSpeed's own checks of them do not "
            "run", era=ctx.era.releases, keys=", ".join(switches)), "verl-no-repatch",
            hint=tr("run on verl 0.6.0 or later for MindSpeed to read them"))
