"""``verl-mindspeed run ARGV...``: launch ``verl.trainer.main_ppo`` with ARGV, validated and injected first."""

from __future__ import annotations

import argparse

from ..errors import EvaluationError
from ..i18n import render, tr
from . import _output
from ._args import UsageError, add_common, add_judging_options, reason
from .check import launch_argv_of, validate_launch_argv


def add_parser(sub: argparse._SubParsersAction, lang: str = "en") -> argparse.ArgumentParser:
    say = lambda text: render(text, lang)  # noqa: E731
    p = sub.add_parser(
        "run", allow_abbrev=False,
        help=say(tr("launch verl's main_ppo with these arguments, after validating and injecting them")),
        description=say(tr(
            "Same as 'python3 -m verl_mindspeed.main_ppo ARGV...': give exactly the arguments that follow "
            "'python3 -m verl.trainer.main_ppo'; the options of run may come anywhere. Exits 1 before Ray starts "
            "when the MindSpeed configuration has errors. VERL_MINDSPEED_ENTRY=<module> runs another @hydra.main "
            "entry (a recipe) instead of verl.trainer.main_ppo.")),
    )
    add_judging_options(p, lang)
    p.add_argument("--args-file", metavar="FILE", help=say(tr(
        "read the launch argv from a file: one argument per line ('#' comments), or the 'python3 -m ...' line "
        "of a shell script")))
    add_common(p, lang)
    p.add_argument("argv", nargs="*", metavar="ARGV", help=say(tr("the launch arguments (after an optional --)")))
    p.set_defaults(run=run)
    return p


def run(ns: argparse.Namespace) -> int:
    from ..integrations import launcher

    try:
        argv = launch_argv_of(ns)
        validate_launch_argv(argv, getattr(ns, "own_options", []))  # before verl's imports, not after
    except UsageError as exc:
        return _output.fatal(exc.message, "text", ns.lang, "run")
    except EvaluationError as exc:
        return _output.fatal(reason(exc), "text", ns.lang, "run")
    return launcher.run(argv, strict=ns.strict, release=ns.mindspeed_release,
                        model_config=ns.model_config, lang=ns.lang)
