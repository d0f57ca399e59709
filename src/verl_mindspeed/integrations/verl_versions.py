"""Which era of verl's worker code a config tree or version belongs to, and what MindSpeed's ``repatch`` gets.

verl hands ``override_transformer_config`` to ``mindspeed.megatron_adaptor.repatch`` in two ways
(read from each release's sources):

* ``LEGACY`` (verl 0.6.x and 0.7.x): ``verl/workers/megatron_workers.py``,
  ``ActorRolloutRefWorker.__init__`` calls ``repatch(config.actor.megatron.get("override_transformer_config", {}))``
  once per worker process, with the ACTOR's dict (a DictConfig, passed as is) also when the worker
  is the ref. Nothing is added: no ``use_flash_attn`` default, no CP size. Critic workers never call it.
  verl 0.7.x with ``trainer.use_legacy_worker_impl=disable`` takes the new engine workers instead,
  whose engine forces ``use_flash_attn=True`` and copies the CP size (mode ``ENGINE_07``); its
  megatron critic still never calls ``repatch``.
* ``ENGINE`` (verl 0.8 and later): ``verl/workers/engine/mindspeed/transformer_impl.py``,
  ``_mindspeed_repatch(engine_config)`` in every engine's ``_init_device_mesh``, critic included, with
  that engine's own dict: ``use_flash_attn`` defaults to True (False in batch-invariant mode) and
  ``context_parallel_size`` is copied when CP > 1 (``attention_backend`` becomes megatron's enum).

:func:`repatch_calls` predicts, from a composed (and usually injected) config, each dict MindSpeed
receives. It imports neither verl nor MindSpeed; the integration tests hold it against verl's real code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

from omegaconf import DictConfig, OmegaConf

from ..catalog import OTC, ROLE_PREFIXES
from ..compose import tree_version

LEGACY = "legacy"
ENGINE_07 = "engine-0.7"
ENGINE = "engine"

FIRST_REPATCH = (0, 6)
"""verl releases before 0.6 never call MindSpeed's ``repatch``."""
FIRST_ENGINE = (0, 8)


def parse_version(text: str) -> tuple[int, ...]:
    """``"0.7.1"`` -> ``(0, 7, 1)``; ``"0.8.0.dev0"``/``"0.9.1+npu"`` -> the leading numbers."""
    match = re.match(r"\s*v?(\d+(?:\.\d+)*)", str(text))
    if not match:
        raise ValueError(f"not a verl version: {text!r}")
    return tuple(int(p) for p in match.group(1).split("."))


def era_of(version: str) -> str:
    """:data:`LEGACY` for verl 0.6.x/0.7.x, :data:`ENGINE` for 0.8 and later; ValueError before 0.6."""
    parts = parse_version(version)
    if parts[:2] < FIRST_REPATCH:
        raise ValueError(f"verl {version} predates MindSpeed support (repatch arrived in verl 0.6.0)")
    return LEGACY if parts[:2] < FIRST_ENGINE else ENGINE


def era_of_tree(config_dir: Union[str, Path]) -> str:
    """The era of a config tree: from ``verl/version/version`` if present, else from its layout.

    Layout markers (verified on 0.6.1, 0.7.1, 0.8.0, 0.9.1): ``model_engine/megatron.yaml``
    appears in 0.8.0 together with the per-engine repatch.
    """
    version = tree_version(config_dir)
    if version is not None:
        return era_of(version)
    return ENGINE if (Path(config_dir) / "model_engine" / "megatron.yaml").is_file() else LEGACY


def worker_mode(cfg: DictConfig, era: str) -> str:
    """Refine :data:`LEGACY` to :data:`ENGINE_07` when a 0.7 config opts into the new engine workers."""
    if era != LEGACY:
        return era
    choice = OmegaConf.select(cfg, "trainer.use_legacy_worker_impl", default=None)
    return ENGINE_07 if choice == "disable" else LEGACY


@dataclass(frozen=True)
class RepatchCall:
    """One ``repatch(...)`` call: the roles it serves and the dict MindSpeed receives."""

    roles: tuple[str, ...]
    source: str
    """The config path the dict is read from."""
    args: dict[str, Any]


def repatch_calls(cfg: DictConfig, era: str, roles: Optional[list[str]] = None) -> list[RepatchCall]:
    """What MindSpeed receives per worker in ``era`` for the composed ``cfg`` (plain data, resolved).

    ``roles`` defaults to the roles verl builds (``need_reference_policy``/``need_critic``) that use
    the megatron strategy.
    """
    from ..resolve._roles import active_roles

    mode = worker_mode(cfg, era)
    if roles is None:
        roles = [r for r in active_roles(cfg) if _strategy(cfg, r) == "megatron"]
    if mode == LEGACY:
        served = tuple(r for r in roles if r in ("actor", "ref"))
        if not served:
            return []
        source = f"{ROLE_PREFIXES['actor']}.{OTC}"
        return [RepatchCall((role,), source, _otc(cfg, "actor")) for role in served]
    calls = []
    for role in roles:
        if mode == ENGINE_07 and role == "critic":
            continue  # 0.7's critic stays on megatron_workers.CriticWorker, which never repatches
        calls.append(RepatchCall((role,), f"{ROLE_PREFIXES[role]}.{OTC}", _engine_args(cfg, role, mode)))
    return calls


def _engine_args(cfg: DictConfig, role: str, mode: str) -> dict[str, Any]:
    args = _otc(cfg, role)
    if mode == ENGINE_07:
        args["use_flash_attn"] = True
    elif args.get("use_flash_attn_npu_batch_invariant"):
        args["use_flash_attn"] = False
    else:
        args.setdefault("use_flash_attn", True)
    cp = OmegaConf.select(cfg, f"{ROLE_PREFIXES[role]}.context_parallel_size", default=1)
    if isinstance(cp, int) and cp > 1:
        args["context_parallel_size"] = cp
    return args


def _otc(cfg: DictConfig, role: str) -> dict[str, Any]:
    node = OmegaConf.select(cfg, f"{ROLE_PREFIXES[role]}.{OTC}", default=None)
    if node is None:
        return {}
    data = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
    return dict(data) if isinstance(data, dict) else {}


def _strategy(cfg: DictConfig, role: str) -> Optional[str]:
    return OmegaConf.select(cfg, ROLE_PREFIXES[role].rsplit(".", 1)[0] + ".strategy", default=None)


__all__ = [
    "ENGINE", "ENGINE_07", "LEGACY", "RepatchCall", "era_of", "era_of_tree", "parse_version",
    "repatch_calls", "tree_version", "worker_mode",
]
