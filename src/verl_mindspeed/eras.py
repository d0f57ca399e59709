"""verl's eras of worker code: which role builds first, who owns the parallel state, who calls ``repatch``.

All roles of a verl PPO run are colocated: one process per device holds the actor, the ref and the
critic (``create_colocated_worker_cls``). Megatron's parallel state and MindSpeed's patches are
process-wide, so the order in which the roles build their models decides what every role really runs
with. Read from each release's sources (the wheels on PyPI):

``pre-repatch`` (verl 0.4.x and 0.5.x, ``verl/workers/megatron_workers.py``)
    The workers are built as in ``legacy`` (actor, critic, ref; the actor's sizes initialize the parallel state),
    but no build calls ``repatch``: MindSpeed keeps the namespace its adaptor parsed at import (its defaults), and
    a role's dict reaches megatron's ``TransformerConfig`` only as keyword arguments.
``legacy`` (verl 0.6.0 to 0.7.x, ``verl/workers/megatron_workers.py``)
    The colocated worker class instantiates the roles in the order ``ray_trainer.init_workers`` adds
    them: actor (``ActorRolloutRefWorker``), critic, ref. ``ActorRolloutRefWorker.__init__`` calls
    ``repatch(config.actor.megatron.override_transformer_config)`` -- the ACTOR's dict, also in a ref
    worker -- as it is (no FA default, no CP copy), then initializes torch.distributed and Megatron's
    parallel state with the ACTOR's sizes. ``CriticWorker.__init__`` finds torch.distributed initialized
    and skips its own ``initialize_model_parallel``: the critic's and the ref's sizes are ignored.
``engine-0.7`` (verl 0.7.x with ``trainer.use_legacy_worker_impl=disable``, ``verl/workers/engine_workers.py``)
    Actor and ref are engines; ``MindspeedEngine._init_device_mesh`` sets ``use_flash_attn=True`` and
    copies the CP size into the engine's own dict, then calls ``repatch``. ``init_model`` builds the ref
    before the actor. A Megatron critic is not supported (``init_workers`` raises NotImplementedError).
``engine`` (verl 0.8.0 and later, ``verl/workers/engine/mindspeed/transformer_impl.py``)
    Every role is an engine. ``ray_trainer.init_workers`` builds the critic (``critic_wg.reset()``), then
    ``ActorRolloutRefWorker.init_model`` builds the ref and then the actor. Each engine's
    ``_init_device_mesh`` calls ``_mindspeed_repatch`` with its own dict (``use_flash_attn`` defaulted to
    True, False in batch-invariant mode; the CP size copied when > 1) and then returns early from
    ``initialize_model_parallel`` when Megatron's state is already initialized ("TODO: set different
    parallelism for actor, critic, ref" in ``verl/workers/engine/megatron/transformer_impl.py``): the
    first role built owns the parallel state.

In every era MindSpeed's ``repatch`` (``mindspeed/megatron_adaptor.py``) MERGES the dict into one
process-wide namespace: a key set by an earlier call sticks until a later call sets it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from omegaconf import DictConfig, OmegaConf

from ._version import release_tuple
from .i18n import tr

PRE_REPATCH = "pre-repatch"
LEGACY = "legacy"
ENGINE_07 = "engine-0.7"
ENGINE = "engine"

FIRST_REPATCH = (0, 6)
"""verl releases before 0.6 never call MindSpeed's ``repatch``."""
FIRST_ENGINE = (0, 8)

PARALLEL_SIZES = ("tensor_model_parallel_size", "pipeline_model_parallel_size",
                  "virtual_pipeline_model_parallel_size", "context_parallel_size",
                  "expert_model_parallel_size", "expert_tensor_parallel_size")
"""The sizes ``initialize_model_parallel`` takes from the engine config of the role that builds first."""


@dataclass(frozen=True)
class Era:
    """What one era of verl's worker code does with the roles' Megatron settings."""

    id: str
    releases: str
    build_order: tuple[str, ...]
    """Roles in the order their workers/engines are built in the shared process."""
    repatch_roles: tuple[str, ...]
    """Roles whose build calls MindSpeed's ``repatch``."""
    repatch_dict: str
    """``own``: each role passes its own dict; ``actor``: every call passes the actor's dict."""
    adds: str
    """What verl adds to the dict: ``nothing``, ``fa_on`` (FA forced on + CP size) or ``fa_default``
    (``setdefault`` FA + CP size)."""
    owner: str
    """``first``: the first role built owns the parallel state; ``actor``: always the actor's sizes."""
    cites: str

    def builds(self, roles: list[str]) -> list[str]:
        """The active roles in build order."""
        return [r for r in self.build_order if r in roles]

    def owner_of(self, roles: list[str]) -> Optional[str]:
        """The role whose sizes Megatron's parallel state is initialized with."""
        order = self.builds(roles)
        if self.owner == "actor":
            return "actor" if "actor" in roles else (order[0] if order else None)
        return order[0] if order else None

    def repatches(self, role: str) -> bool:
        return role in self.repatch_roles

    def dict_source(self, role: str) -> str:
        return "actor" if self.repatch_dict == "actor" else role


ERAS = {
    PRE_REPATCH: Era(
        id=PRE_REPATCH, releases=tr("verl 0.4.x and 0.5.x"), build_order=("actor", "critic", "ref"),
        repatch_roles=(), repatch_dict="actor", adds="nothing", owner="actor",
        cites="verl 0.5.0 verl/workers/megatron_workers.py ActorRolloutRefWorker.__init__ (no repatch; verl 0.6.0 "
              "added it), CriticWorker.__init__; verl/trainer/ppo/ray_trainer.py init_workers",
    ),
    LEGACY: Era(
        id=LEGACY, releases=tr("verl 0.6.0 to 0.7.x"), build_order=("actor", "critic", "ref"),
        repatch_roles=("actor", "ref"), repatch_dict="actor", adds="nothing", owner="actor",
        cites="verl 0.6.1/0.7.1 verl/workers/megatron_workers.py ActorRolloutRefWorker.__init__, "
              "CriticWorker.__init__; verl/trainer/ppo/ray_trainer.py init_workers",
    ),
    ENGINE_07: Era(
        id=ENGINE_07, releases=tr("verl 0.7.x with trainer.use_legacy_worker_impl=disable"),
        build_order=("ref", "actor"), repatch_roles=("ref", "actor"), repatch_dict="own", adds="fa_on",
        owner="first",
        cites="verl 0.7.1 verl/workers/engine_workers.py ActorRolloutRefWorker.init_model; "
              "verl/workers/engine/mindspeed/transformer_impl.py _init_device_mesh",
    ),
    ENGINE: Era(
        id=ENGINE, releases=tr("verl 0.8.0 and later"), build_order=("critic", "ref", "actor"),
        repatch_roles=("critic", "ref", "actor"), repatch_dict="own", adds="fa_default", owner="first",
        cites="verl 0.9.1 verl/trainer/ppo/ray_trainer.py init_workers; verl/workers/engine_workers.py "
              "init_model; verl/workers/engine/mindspeed/transformer_impl.py _mindspeed_repatch; "
              "verl/workers/engine/megatron/transformer_impl.py _init_device_mesh",
    ),
}


def parse_version(text: str) -> tuple[int, ...]:
    """``"0.7.1"`` -> ``(0, 7, 1)``; ``"0.8.0.dev0"``/``"0.9.1+npu"`` -> the leading numbers."""
    parts = release_tuple(text)
    if parts is None:
        raise ValueError(f"not a verl version: {text!r}")
    return parts


def era_of(version: str) -> str:
    """:data:`PRE_REPATCH` before verl 0.6, :data:`LEGACY` for 0.6.x/0.7.x, :data:`ENGINE` for 0.8 and later."""
    parts = parse_version(version)
    if parts[:2] < FIRST_REPATCH:
        return PRE_REPATCH
    return LEGACY if parts[:2] < FIRST_ENGINE else ENGINE


def worker_mode(cfg: DictConfig, era: str) -> str:
    """Refine :data:`LEGACY` to :data:`ENGINE_07` when a 0.7 config opts into the new engine workers."""
    if era != LEGACY:
        return era
    choice = OmegaConf.select(cfg, "trainer.use_legacy_worker_impl", default=None)
    return ENGINE_07 if choice == "disable" else LEGACY


__all__ = ["ENGINE", "ENGINE_07", "ERAS", "Era", "LEGACY", "PARALLEL_SIZES", "PRE_REPATCH", "era_of", "parse_version",
           "worker_mode"]
