"""``verl-mindspeed run ARGV...``: launch ``verl.trainer.main_ppo`` with ARGV, validated and injected first."""

from __future__ import annotations

import argparse

from ..catalog import universe
from .check import launch_argv_of


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run", help="launch verl's main_ppo with these arguments, after validating and injecting them",
        description="Same as 'python3 -m verl_mindspeed.main_ppo ARGV...': give exactly the arguments that "
                    "follow 'python3 -m verl.trainer.main_ppo'. Exits 1 before Ray starts when the MindSpeed "
                    "configuration has errors. VERL_MINDSPEED_ENTRY=<module> runs another @hydra.main entry "
                    "(a recipe) instead of verl.trainer.main_ppo.",
    )
    p.add_argument("--strict", action="store_true", help="unknown keys far from any known key are errors too")
    p.add_argument("--model-config", help="a HF config.json, or a directory holding one, for model-aware checks")
    p.add_argument("--mindspeed-release", default=None, metavar="RELEASE",
                   help="MindSpeed release to check against: a branch (%s) or its short name (26.1, 2.3); default: "
                        "the installed MindSpeed's, else %s" % (", ".join(universe.releases()), universe.DEFAULT_RELEASE))
    p.add_argument("--args-file", help="read the argv from a file, one argument per line ('#' comments)")
    p.add_argument("argv", nargs=argparse.REMAINDER, help="the launch arguments (after an optional --)")
    p.set_defaults(run=run)


def run(ns: argparse.Namespace) -> int:
    from ..integrations import launcher

    return launcher.run(launch_argv_of(ns), strict=ns.strict, release=ns.mindspeed_release, model_config=ns.model_config)
