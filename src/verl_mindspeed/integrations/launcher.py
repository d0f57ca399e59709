"""The drop-in for ``python3 -m verl.trainer.main_ppo``: same argv, always validated and injected.

The launcher adds one override that installs :class:`~.hydra_callback.MindSpeedCallback` and then
calls verl's own ``@hydra.main`` entry, so Hydra parses the argv, composes the config and handles
``--config-path``, ``--cfg``, ``--help`` and the output directory exactly as for verl itself; the
callback validates and injects before verl's ``main`` body (and Ray) starts.

verl eras: from 0.6.x to 0.9.x the entry is ``verl.trainer.main_ppo.main``, decorated with
``@hydra.main(config_path="config", config_name="ppo_trainer")``. Called from another module, Hydra
takes ``config_path`` (and a command-line ``--config-path``) relative to the package of the module
that defines ``main``, i.e. ``verl/trainer/``, as ``python3 -m verl.trainer.main_ppo`` does. The body
differs by era (0.6: ``run_ppo(config)``; 0.7: device detection, legacy reward migration; 0.8+:
``validate_config`` and the v1 task runner) and is verl's business: it receives the injected config.
Recipes with their own ``@hydra.main`` entry work too: ``VERL_MINDSPEED_ENTRY=recipe.dapo.main_dapo``.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Callable, Optional

from .hydra_callback import CALLBACK_KEY, INSTALL_OVERRIDE

DEFAULT_ENTRY = "verl.trainer.main_ppo"
ENTRY_ENV = "VERL_MINDSPEED_ENTRY"


def launch_argv(argv: list[str], *, strict: bool = False, release: Optional[str] = None,
                model_config: Optional[str] = None, quiet: bool = False) -> list[str]:
    """The user's argv plus the overrides that install and configure the callback (Hydra order-insensitive)."""
    extra = [INSTALL_OVERRIDE]
    if strict:
        extra.append(f"++{CALLBACK_KEY}.strict=true")
    if release:
        extra.append(f"++{CALLBACK_KEY}.release={release}")
    if model_config:
        extra.append(f"++{CALLBACK_KEY}.model_config={model_config}")
    if quiet:
        extra.append(f"++{CALLBACK_KEY}.quiet=true")
    return [a for a in argv if a != "--"] + extra


def verl_entry(module_name: Optional[str] = None) -> tuple[Callable[[], None], str]:
    """verl's Hydra-decorated ``main`` (imports verl, hence torch and ray) and the module's file."""
    name = module_name or os.environ.get(ENTRY_ENV) or DEFAULT_ENTRY
    module = importlib.import_module(name)
    entry = getattr(module, "main", None)
    if not callable(entry) or not hasattr(entry, "__wrapped__"):
        raise SystemExit(f"verl-mindspeed: {name}.main is not a @hydra.main entry; this verl is not supported "
                         f"by the launcher: use +mindspeed=validate with 'python3 -m {name}' instead")
    return entry, getattr(module, "__file__", name)


def run(argv: list[str], **options) -> int:
    """Run verl's entry with ``argv`` (as after ``python3 -m verl.trainer.main_ppo``), validated and injected."""
    entry, program = verl_entry()
    saved = sys.argv
    sys.argv = [program, *launch_argv(argv, **options)]
    try:
        entry()
    finally:
        sys.argv = saved
    return 0


__all__ = ["DEFAULT_ENTRY", "ENTRY_ENV", "launch_argv", "run", "verl_entry"]
