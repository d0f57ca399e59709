"""The ``mindspeed`` preset group as data: which presets exist, what each says about itself, what it sets.

The presets are the YAML files of ``verl_mindspeed.conf`` (the repository's top-level ``conf/``);
this module reads them through Hydra, with the preset's ``defaults`` (``moe`` includes ``dense``...).
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from omegaconf import DictConfig, OmegaConf

from .i18n import render

GROUP = "mindspeed"
PACKAGE = "verl_mindspeed.conf"


def names() -> list[str]:
    """Every preset name, sorted."""
    group = resources.files(PACKAGE).joinpath(GROUP)
    return sorted(p.name[: -len(".yaml")] for p in group.iterdir() if p.name.endswith(".yaml"))


def description(name: str, lang: str = "en") -> str:
    """The preset's header comment (what it is for, the MindSpeed release it needs), without ``#``, in ``lang``
    (translated through the message catalogue, like every text)."""
    text = resources.files(PACKAGE).joinpath(GROUP, f"{name}.yaml").read_text(encoding="utf-8")
    english = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        if not line.startswith("# @package"):
            english.append(line[1:].strip())
    return render("\n".join(english), lang)


def compose(name: str, with_hydra: bool = False) -> DictConfig:
    """The preset alone, composed by Hydra with its defaults (``hydra`` node removed unless ``with_hydra``)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    if name not in names():
        raise KeyError(f"no preset {name!r} in group {GROUP!r}; available: {', '.join(names())}")
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(config_module=PACKAGE, version_base=None):
            return hydra_compose(overrides=[f"+{GROUP}={name}"], return_hydra_config=with_hydra)
    finally:
        GlobalHydra.instance().clear()


def settings(name: str) -> dict[str, Any]:
    """Every key the preset sets, as dotted paths (``actor_rollout_ref.actor.megatron....``) -> value."""
    flat: dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict) and (node or not prefix):
            for key, value in node.items():
                walk(value, f"{prefix}.{key}" if prefix else str(key))
        else:
            flat[prefix] = node

    walk(OmegaConf.to_container(compose(name), resolve=True), "")
    return flat


def installs_callback(name: str) -> bool:
    """Whether the preset puts verl-mindspeed's callback under ``hydra.callbacks``."""
    target = OmegaConf.select(compose(name, with_hydra=True), "hydra.callbacks.verl_mindspeed._target_")
    return target == "verl_mindspeed.integrations.hydra_callback.MindSpeedCallback"


__all__ = ["GROUP", "PACKAGE", "compose", "description", "installs_callback", "names", "settings"]
