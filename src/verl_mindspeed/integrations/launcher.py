"""The drop-in for ``python3 -m verl.trainer.main_ppo``: same argv, always validated and injected.

The launcher adds the overrides that install and configure :class:`~.hydra_callback.MindSpeedCallback`
and then calls verl's own ``@hydra.main`` entry, so Hydra parses the argv, composes the config and
handles ``--config-path``, ``--cfg``, ``--help``, ``-m`` and the output directory exactly as for verl
itself; the callback validates and injects before verl's ``main`` body (and Ray) starts.

Hydra's argument parser takes the overrides as one group: an override after a flag that follows other
overrides is rejected. The launcher therefore puts its overrides right after the user's last override
(or first, when there is none), never after a flag such as ``--cfg job`` or ``-m``.

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
import re
import sys
from typing import Callable, Optional

from ..i18n import default_lang, render, tr
from .hydra_callback import CALLBACK_KEY, INSTALL_OVERRIDE

DEFAULT_ENTRY = "verl.trainer.main_ppo"
ENTRY_ENV = "VERL_MINDSPEED_ENTRY"
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


class LaunchError(Exception):
    """The entry cannot be launched at all (exit 2)."""


def launch_argv(argv: list[str], *, strict: bool = False, release: Optional[str] = None,
                model_config: Optional[str] = None, quiet: bool = False, lang: Optional[str] = None) -> list[str]:
    """The user's argv with the overrides that install and configure the callback, among the user's overrides."""
    extra = [INSTALL_OVERRIDE]
    if strict:
        extra.append(f"++{CALLBACK_KEY}.strict=true")
    if release:
        extra.append(f"++{CALLBACK_KEY}.release={release}")
    if model_config:
        extra.append(f"++{CALLBACK_KEY}.model_config={_quote(model_config)}")
    if quiet:
        extra.append(f"++{CALLBACK_KEY}.quiet=true")
    if lang and lang != default_lang():
        extra.append(f"++{CALLBACK_KEY}.lang={lang}")
    args = [a for a in argv if a != "--"]
    at = overrides_end(args)
    return args[:at] + extra + args[at:]


def overrides_end(argv: list[str]) -> int:
    """The index just after the last override of ``argv`` as Hydra's parser reads it (0 when there is none)."""
    from hydra._internal.utils import get_args_parser

    takes_value = {s: a.nargs != 0 for a in get_args_parser()._actions for s in a.option_strings}
    end, i = 0, 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("-") and not _NEGATIVE_NUMBER.match(arg):
            name = arg.split("=", 1)[0]
            matches = [s for s in takes_value if s == name] or [
                s for s in takes_value if name.startswith("--") and s.startswith(name)]
            if "=" not in arg and len(matches) == 1 and takes_value[matches[0]] and i + 1 < len(argv) \
                    and not argv[i + 1].startswith("-"):
                i += 1  # the flag's value (--cfg job, -cp config)
        else:
            end = i + 1
        i += 1
    return end


def _quote(value: str) -> str:
    """A path as a Hydra override value (quoted when Hydra's grammar would split or reinterpret it)."""
    return value if re.fullmatch(r"[\w./~-]+", value) else "'" + value.replace("'", "\\'") + "'"


def verl_entry(module_name: Optional[str] = None) -> tuple[Callable[[], None], str]:
    """verl's Hydra-decorated ``main`` (imports verl, hence torch and ray) and the module's file."""
    name = module_name or os.environ.get(ENTRY_ENV) or DEFAULT_ENTRY
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        raise LaunchError(tr("cannot import the entry {name}: {error}", name=name, error=str(exc))) from exc
    entry = getattr(module, "main", None)
    if not callable(entry) or not hasattr(entry, "__wrapped__"):
        raise LaunchError(tr("{name}.main is not a @hydra.main entry; this verl is not supported by the launcher: "
                             "use +mindspeed=validate with 'python3 -m {name}' instead", name=name))
    return entry, getattr(module, "__file__", name)


def run(argv: list[str], *, lang: Optional[str] = None, **options) -> int:
    """Run verl's entry with ``argv`` (as after ``python3 -m verl.trainer.main_ppo``), validated and injected.

    Returns the exit status: 0 when verl's ``main`` returned, Hydra's or the callback's status otherwise
    (1: configuration errors; 2: a command line Hydra rejects or an entry that cannot be imported).
    """
    try:
        entry, program = verl_entry()
    except LaunchError as exc:
        print(f"verl-mindspeed: {render(exc.args[0], lang or default_lang())}", file=sys.stderr)
        return 2
    saved = sys.argv
    sys.argv = [program, *launch_argv(argv, lang=lang, **options)]
    try:
        entry()
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    finally:
        sys.argv = saved
    return 0


__all__ = ["DEFAULT_ENTRY", "ENTRY_ENV", "LaunchError", "launch_argv", "overrides_end", "run", "verl_entry"]
