"""Launch cases shared by the era, dataclass, repatch and Ray tests, with the dicts each role must end up with.

Every expectation is written out from the inputs: the tree's own default dict
(``engine/megatron.yaml``), the keys the user sets (canonical spelling), the keys
the resolver must add (mindspeed/megatron_adaptor.py repatch decides from the dict alone),
and which of the actor's keys are process-wide MindSpeed switches the critic gets.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Any

from omegaconf import DictConfig, OmegaConf

from helpers import BASIC
from verl_mindspeed.catalog import OTC, ROLE_PREFIXES
from verl_mindspeed.compose import Composition, compose_argv, era_of_tree
from verl_mindspeed.resolver import Resolution, inject, resolve

A = ROLE_PREFIXES["actor"]
R = ROLE_PREFIXES["ref"]
C = ROLE_PREFIXES["critic"]
O = f"{A}.{OTC}"
ROLES = ("actor", "ref", "critic")

#: actor + ref (KL loss) + critic (GAE) on one 8-device node.
BASE = [
    "--config-name=ppo_megatron_trainer",
    "actor_rollout_ref.actor.use_kl_loss=True",
    "algorithm.adv_estimator=gae",
    "trainer.nnodes=1",
    "trainer.n_gpus_per_node=8",
    *BASIC,
]


@dataclass(frozen=True)
class Case:
    name: str
    overrides: tuple[str, ...]
    user: dict[str, Any]
    """What the user's overrides put in the actor's dict, in canonical spelling."""
    added: dict[str, Any]
    """What injection must add to the actor's (and ref's) dict."""
    critic_shared: tuple[str, ...]
    """Actor keys the critic gets (process-wide MindSpeed switches)."""
    critic_added: dict[str, Any] = field(default_factory=dict)
    critic_user: dict[str, Any] = field(default_factory=dict)
    """What the overrides put in the critic's own dict."""
    megatron: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Expected values under ``<role>.megatron`` after composition."""
    warnings: tuple[str, ...] = ()
    """Rules that must warn (and nothing may be an error)."""

    def expected(self, role: str, defaults: dict[str, Any], era: str = "engine") -> dict[str, Any]:
        if role == "critic" and era == "legacy":
            return {**defaults, **self.critic_user}  # never handed to MindSpeed by legacy workers: left as written
        if role == "critic":
            shared = {k: self.user[k] for k in self.critic_shared}
            return {**defaults, **shared, **self.critic_user, **self.critic_added}
        return {**defaults, **self.user, **self.added}


FA = {"use_flash_attn": True}
CASES = (
    Case(
        "dense",
        (f"+{O}.use_flash_attn=True", f"+{O}.normalization=RMSNorm", f"+{O}.use_fused_rmsnorm=True",
         f"+{O}.swiglu=True", f"+{O}.use_fused_swiglu=True", f"+{O}.bias_activation_fusion=True",
         f"+{O}.position_embedding_type=rope", f"+{O}.use_fused_rotary_pos_emb=True",
         f"+{O}.use_distributed_optimizer=True", f"+{C}.override_transformer_config.position_embedding_type=rope",
         f"+{C}.override_transformer_config.bias_activation_fusion=True"),
        user={"use_flash_attn": True, "normalization": "RMSNorm", "use_fused_rmsnorm": True, "swiglu": True,
              "use_fused_swiglu": True, "bias_activation_fusion": True, "position_embedding_type": "rope",
              "use_fused_rotary_pos_emb": True, "use_distributed_optimizer": True},
        added={},
        # the dict's use_distributed_optimizer only feeds MindSpeed's checks: the critic keeps its own
        critic_shared=("use_flash_attn", "use_fused_rmsnorm", "swiglu", "use_fused_swiglu", "use_fused_rotary_pos_emb"),
        # fused RoPE and SwiGLU reach the critic: so must their companions
        critic_user={"position_embedding_type": "rope", "bias_activation_fusion": True},
    ),
    Case(
        "moe",  # the seed table's misspelling of the permute flag, as users type it
        (f"+{O}.moe_token_dispatcher_type=alltoall", f"+{O}.moe_grouped_gemm=True",
         f"+{O}.fused_permute_and_unpermute=True", f"{A}.expert_model_parallel_size=2",
         f"{R}.expert_model_parallel_size=2", f"{C}.expert_model_parallel_size=2"),
        user={"moe_token_dispatcher_type": "alltoall", "moe_grouped_gemm": True,
              "use_fused_moe_token_permute_and_unpermute": True, "moe_permute_fusion": True},
        added=FA,
        critic_shared=("use_fused_moe_token_permute_and_unpermute", "moe_permute_fusion"),
        # MindSpeed registers part of the permute patches only with the dispatcher in the dict
        critic_added={**FA, "moe_token_dispatcher_type": "alltoall"},
        megatron={r: {"expert_model_parallel_size": 2} for r in ROLES},
        warnings=("alias",),
    ),
    Case(
        "memory_saving",
        (f"{O}.recompute_granularity=full", f"{O}.recompute_method=uniform", f"{O}.recompute_num_layers=1",
         f"+{O}.swap_optimizer=True"),
        user={"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1,
              "swap_optimizer": True},
        added={**FA, "use_distributed_optimizer": True},
        critic_shared=("swap_optimizer",),
        critic_added={**FA, "use_distributed_optimizer": True},
    ),
    Case(
        "long_context",
        (f"{A}.context_parallel_size=2", f"{R}.context_parallel_size=2", f"{C}.context_parallel_size=2",
         f"+{O}.context_parallel_algo=megatron_cp_algo",
         f"+{O}.use_flash_attn=True", f"+{O}.seq_length=4096"),
        user={"context_parallel_algo": "megatron_cp_algo", "use_flash_attn": True, "seq_length": 4096},
        added={"context_parallel_size": 2},
        critic_shared=("context_parallel_algo", "use_flash_attn"),
        critic_added={"context_parallel_size": 2},
        megatron={r: {"context_parallel_size": 2} for r in ROLES},
    ),
    Case(
        "mc2",
        (f"{A}.tensor_model_parallel_size=2", f"{R}.tensor_model_parallel_size=2", f"{C}.tensor_model_parallel_size=2",
         f"+{O}.use_ascend_mc2=True"),
        user={"use_ascend_mc2": True},
        added={**FA, "tensor_model_parallel_size": 2, "sequence_parallel": True},
        critic_shared=("use_ascend_mc2",),
        critic_added={**FA, "tensor_model_parallel_size": 2, "sequence_parallel": True},
        megatron={r: {"tensor_model_parallel_size": 2, "sequence_parallel": True} for r in ROLES},
    ),
)
CASE_IDS = [c.name for c in CASES]


@dataclass
class Run:
    comp: Composition
    res: Resolution
    defaults: dict[str, Any]

    @property
    def cfg(self) -> DictConfig:
        return self.comp.cfg


_COMPOSED: dict[tuple, Composition] = {}


def run(argv: list[str], config_dir: str | None, *, do_inject: bool = True) -> Run:
    """Compose for ``config_dir`` (None: the installed verl), resolve against that tree, inject.

    Hydra's composition of verl's tree is the slow step (about a second): it is done once per
    argv and tree in a session, and every caller gets its own deep copy.
    """
    key = (tuple(argv), config_dir)
    if key not in _COMPOSED:
        _COMPOSED[key] = compose_argv(argv, config_dir)
    cached = _COMPOSED[key]
    comp = replace(cached, cfg=copy.deepcopy(cached.cfg))
    res = resolve(comp.cfg, known_megatron_keys=comp.tree.known_megatron_keys, otc_defaults=comp.tree.otc_defaults,
                  era=era_of_tree(comp.tree.config_dir), injected=True)
    if do_inject:
        inject(comp.cfg, res, force=True)  # cases with errors are injected too, to look at what verl would get
    return Run(comp, res, dict(comp.tree.otc_defaults))


def otc(cfg: DictConfig, role: str) -> dict[str, Any]:
    """The role's dict as verl's worker reads it (interpolations resolved)."""
    return OmegaConf.to_container(OmegaConf.select(cfg, f"{ROLE_PREFIXES[role]}.{OTC}"), resolve=True)


def section(cfg: DictConfig, role: str) -> DictConfig:
    return OmegaConf.select(cfg, ROLE_PREFIXES[role])
