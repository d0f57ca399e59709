"""Find the roles that use the Megatron backend and read each one's settings out of the composed config."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from omegaconf import DictConfig, OmegaConf

from ..catalog import OTC, ROLE_PREFIXES


@dataclass
class RawRole:
    name: str
    prefix: str
    megatron: dict[str, Any]
    otc: dict[str, Any]
    inherits_actor_otc: bool
    """True when the role's dict is verl's interpolation of the actor's (ref's default)."""
    strategy: Optional[str]


def _select(cfg: DictConfig, path: str) -> Any:
    return OmegaConf.select(cfg, path, default=None, throw_on_missing=False)


def _container(node: Any) -> Any:
    """``node`` as plain data, resolved; a value whose interpolation does not resolve is kept as written, and
    only that value: the others still resolve (the interpolation check reports the one that fails)."""
    if not OmegaConf.is_config(node):
        return node
    try:
        return OmegaConf.to_container(node, resolve=True)
    except Exception:  # noqa: BLE001 - an unresolvable interpolation somewhere below: resolve value by value
        pass
    keys = list(node.keys()) if isinstance(node, DictConfig) else range(len(node))
    out = {key: _child(node, key) for key in keys}
    return out if isinstance(node, DictConfig) else list(out.values())


def _child(node: Any, key: Any) -> Any:
    raw = node._get_node(key)
    if OmegaConf.is_config(raw) and not OmegaConf.is_interpolation(node, key):
        return _container(raw)
    try:
        return _container(node[key])
    except Exception:  # noqa: BLE001 - this value's interpolation does not resolve: keep it as written
        return raw._value()


def _truthy(cfg: DictConfig, path: str) -> bool:
    value = _select(cfg, path)
    return value is True or (isinstance(value, str) and value.lower() == "true")


def active_roles(cfg: DictConfig) -> list[str]:
    """Roles verl will build, mirroring ``need_reference_policy`` and ``need_critic`` (verl/trainer/ppo/utils.py)."""
    roles = ["actor"]
    if _truthy(cfg, "actor_rollout_ref.actor.use_kl_loss") or _truthy(cfg, "algorithm.use_kl_in_reward"):
        roles.append("ref")
    enable = _select(cfg, "critic.enable")
    if enable is True or (enable is None and _select(cfg, "algorithm.adv_estimator") == "gae"):
        roles.append("critic")
    return roles


def inherits_actor_otc(cfg: DictConfig, name: str) -> bool:
    """Whether the role's dict is still verl's interpolation of the actor's (ref's default)."""
    node = _select(cfg, ROLE_PREFIXES[name])
    return isinstance(node, DictConfig) and OTC in node and OmegaConf.is_interpolation(node, OTC)


def read_role(cfg: DictConfig, name: str) -> Optional[RawRole]:
    """The role's megatron section as plain data, or ``None`` when the config has no such section."""
    prefix = ROLE_PREFIXES[name]
    node = _select(cfg, prefix)
    if not isinstance(node, DictConfig):
        return None
    inherits = inherits_actor_otc(cfg, name)
    data = _container(node)
    if not isinstance(data, dict):
        return None
    otc = data.pop(OTC, None)
    if not isinstance(otc, dict):
        otc = {}
    strategy = _select(cfg, prefix.rsplit(".", 1)[0] + ".strategy")
    return RawRole(name, prefix, data, dict(otc), inherits, strategy if isinstance(strategy, str) else None)


def world_size(cfg: DictConfig) -> Optional[int]:
    nnodes, per_node = _select(cfg, "trainer.nnodes"), _select(cfg, "trainer.n_gpus_per_node")
    if isinstance(nnodes, int) and isinstance(per_node, int) and nnodes > 0 and per_node > 0:
        return nnodes * per_node
    return None
