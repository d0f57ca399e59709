"""A launch of an entry or config this verl tree does not have, judged against the verl config it extends.

Recipes (``recipe.dapo.main_dapo``, ``recipe.fully_async_policy.fully_async_main``, GKD, transfer-queue DAPO),
entries of a patched verl (``verl.trainer.main_dapo``, ``verl.trainer.main_ppo_npu``) and config names added by a
pull request are not in verl's wheel. Their Megatron configs extend verl's Megatron trainer config (a recipe's
``*_megatron_trainer.yaml`` lists ``ppo_megatron_trainer`` first in its defaults) and add keys of their own. Without
their sources the launch is composed against that base: every key under a ``megatron`` section and every
``override_transformer_config`` key is judged as usual, and a key the base lacks elsewhere is the recipe's to define,
so it is named in a note (a warning when it is a near miss of a base key) instead of refused. ``--verl-source DIR``
gives the real entry and config instead.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional, Sequence

from ..catalog import OTC
from ..errors import Issue
from ..i18n import tr

MEGATRON_BASE = "ppo_megatron_trainer"
FSDP_BASE = "ppo_trainer"

#: Each recipe entry's own ``config_name`` (what composes without ``--config-name``), read from the recipes of verl
#: 0.5.0 to 0.7.0 (``recipe/``), of the verl-recipe repository that replaced them (pinned by verl 0.7.1 to 0.9.0),
#: and of the patched verl that copies DAPO into ``verl/trainer``. Their Megatron variants
#: (``dapo_megatron_trainer``, ``fully_async_ppo_megatron_trainer``...) list ``ppo_megatron_trainer`` first in their
#: defaults; GKD's ``on_policy_distill_trainer`` is a standalone Megatron config of the same shape.
RECIPES: dict[str, str] = {
    "recipe.dapo.main_dapo": "dapo_trainer",
    "recipe.dapo.dapo_transfer_queue.main_dapo": "dapo_transfer_queue_trainer",
    "recipe.fully_async_policy.fully_async_main": "fully_async_ppo_trainer",
    "recipe.one_step_off_policy.main_ppo": "one_step_off_ppo_trainer",
    "recipe.gkd.main_gkd": "on_policy_distill_trainer",
    "recipe.gkd.megatron.main_gkd": "on_policy_distill_trainer",
    "recipe.transfer_queue.main_ppo": "ppo_trainer",
    "recipe.fault_recover.main_ppo": "ppo_trainer",
    "verl.experimental.one_step_off_policy.main_ppo": "one_step_off_ppo_trainer",
    "verl.experimental.fully_async_policy.fully_async_main": "fully_async_ppo_trainer",
    "verl.trainer.main_dapo": "dapo_trainer",
    "verl.trainer.main_ppo_npu": "ppo_trainer",
}

#: Composition failures a recipe's own config may answer: a key the base lacks, or one another verl config has.
_RECIPE_MAY_DEFINE = frozenset({"unknown-key", "hydra-missing-plus", "verl-key-other-config", "verl-entry-config",
                                "verl-engine-not-selected", "verl-key-added"})


@dataclass(frozen=True)
class StandIn:
    """The entry and config a launch asked for, and the verl config composed in their place."""

    module: str
    """The entry module the launch runs."""
    config_name: Optional[str]
    """The config the launch (or its entry) composes, when known."""
    base: str
    """The verl config composed instead."""
    missing: str
    """``"entry"``: the module is not in the tree; ``"config"``: the config name is not."""

    def note(self, version: str) -> Issue:
        """What was checked against what, what was not, and how to check it."""
        asked = self.config_name or tr("its own config")
        if self.missing == "entry":
            text = tr("{module} is not part of verl {version} (a recipe, a patched verl or a newer entry): its "
                      "config {config} is checked as the verl config it extends, {base}; every megatron and "
                      "override_transformer_config key is judged, the keys the recipe adds are not",
                      module=self.module, version=version, config=asked, base=self.base)
        else:
            text = tr("config {config} is not part of verl {version} (a recipe's or a pull request's): checked as "
                      "the verl config it extends, {base}; every megatron and override_transformer_config key is "
                      "judged, the keys it adds are not", config=asked, version=version, base=self.base)
        return Issue("note", "--entry" if self.missing == "entry" else "--config-name", text,
                     tr("to check those too, give --verl-source DIR: a verl or recipe checkout that has {what}",
                        what=self.module if self.missing == "entry" else asked), rule="entry-standin")


def judged(key: str) -> bool:
    """Whether a key is judged in full under a stand-in: what MindSpeed and megatron read."""
    parts = key.lstrip("+~").split(".")
    return "megatron" in parts or OTC in parts


def base_of(config_name: Optional[str], module: Optional[str], overrides: Sequence[str],
            available: Sequence[str]) -> str:
    """The verl config a missing entry's or config's launch extends: the Megatron trainer's, unless the launch
    names no Megatron config and sets an FSDP strategy for the actor (a Megatron launch is what is judged here)."""
    name = config_name or RECIPES.get(module or "", "")
    settings = dict(o.lstrip("+~").split("=", 1) for o in overrides if "=" in o)
    megatron = "megatron" in name or any(k.endswith("strategy") and v == "megatron" for k, v in settings.items())
    fsdp = not megatron and settings.get("actor_rollout_ref.actor.strategy", "").startswith("fsdp")
    base = FSDP_BASE if fsdp else MEGATRON_BASE
    return base if base in available or not available else available[0]


def unchecked(issue: Issue, standin: Optional[StandIn]) -> Issue:
    """A composition failure under a stand-in: a key the base lacks outside what is judged is the recipe's to
    define. A near miss of a base key stays visible as a warning with its suggestion; any other is a note."""
    if standin is None or issue.severity != "error" or judged(issue.key) or \
            issue.rule not in _RECIPE_MAY_DEFINE:
        return issue
    what = standin.module if standin.missing == "entry" else (standin.config_name or standin.module)
    if issue.suggestion:
        return replace(issue, severity="warning", message=tr(
            "{message} ({base} has no such key; {what} may define it: not checked)", message=issue.message,
            base=standin.base, what=what), rule="standin-key-near-miss")
    return replace(issue, severity="note", message=tr(
        "{key} is not in {base}: a key {what} adds, not checked here", key=issue.key, base=standin.base,
        what=what), hint=tr("give --verl-source DIR (a checkout that has {what}) to check it", what=what),
        override=None, replaces=None, rule="standin-key")


def source_root(path: str) -> tuple[Optional[Path], Optional[Path]]:
    """``--verl-source DIR``: (the folder holding ``verl/``, the folder the ``recipe`` package maps to). A verl
    checkout gives both (its ``recipe/`` when present); a verl-recipe checkout gives only the second."""
    base = Path(path).expanduser().absolute()
    verl = base if (base / "verl" / "trainer" / "config").is_dir() else None
    if verl is not None:
        recipe = base / "recipe"
        return verl, recipe if recipe.is_dir() else None
    if base.name == "recipe" or any(base.glob("*/main_*.py")) or any(base.glob("*/*/main_*.py")):
        return None, base
    if (base / "recipe").is_dir():
        return None, base / "recipe"
    return None, None


__all__ = ["FSDP_BASE", "MEGATRON_BASE", "RECIPES", "StandIn", "base_of", "judged", "source_root", "unchecked"]
