"""``verl-mindspeed check``: the pre-flight check of a verl launch command."""

from __future__ import annotations

import argparse
import json
import sys
import time

from ..catalog import universe
from ..errors import EvaluationError
from ..launch import evaluate, read_args_file, read_launch_file
from ..report import report


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check", help="check the MindSpeed options of a verl launch command, before launching",
        description="Give exactly the arguments that follow 'python3 -m verl.trainer.main_ppo'. "
                    "Exit 0: no errors; 1: the configuration has errors; 2: it could not be evaluated.",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    p.add_argument("--strict", action="store_true", help="unknown keys far from any known key are errors too")
    p.add_argument("--verl-config-dir", help="verl's trainer/config directory (default: the installed verl's)")
    p.add_argument("--model-config", help="a HF config.json, or a directory holding one, for model-aware checks")
    p.add_argument("--mindspeed-release", default=None, metavar="RELEASE",
                   help="MindSpeed release to check against: a branch (%s) or its short name (26.1, 2.3); default: "
                        "the installed MindSpeed's, else %s" % (", ".join(universe.releases()), universe.DEFAULT_RELEASE))
    p.add_argument("--args-file", help="read the argv from a file: one argument per line ('#' comments), or a shell "
                                       "script whose 'python3 -m MODULE ...' line is the launch (MODULE sets --entry)")
    p.add_argument("--verl-version", help="check against this verl release's config tree instead of the installed "
                                          "verl's (downloaded from PyPI once, then cached)")
    p.add_argument("--entry", help="the module the arguments are given to (default: verl.trainer.main_ppo), e.g. "
                                   "verl.experimental.fully_async_policy.fully_async_main")
    p.add_argument("--launcher", action="store_true",
                   help="the launch goes through 'verl-mindspeed run' / 'python3 -m verl_mindspeed.main_ppo', which "
                        "injects the companions MindSpeed needs (a +mindspeed=<preset> says so by itself)")
    p.add_argument("--device-memory-gib", type=float, default=64.0, metavar="GIB",
                   help="memory of one device, for the estimated peak with a model config (default 64)")
    p.add_argument("--lang", choices=("en", "zh"), default="en", help="language of the report's table and headings")
    p.add_argument("argv", nargs=argparse.REMAINDER, help="the launch arguments (after an optional --)")
    p.set_defaults(run=run)


#: check's own options and whether each takes a value; everything else is the launch's argv.
OWN_OPTIONS = {"--json": False, "--strict": False, "--launcher": False, "--device-memory-gib": True,
               "--verl-config-dir": True, "--model-config": True, "--mindspeed-release": True, "--args-file": True,
               "--lang": True, "-h": False, "--help": False, "--verl-version": True, "--entry": True}


def split_own_options(args: list[str]) -> tuple[list[str], list[str]]:
    """Leading options of ``check`` vs the launch argv (which may itself start with ``--config-path``)."""
    ours: list[str] = []
    i = 0
    while i < len(args):
        name = args[i].split("=", 1)[0]
        if args[i] == "--":
            return ours, args[i + 1:]
        if name not in OWN_OPTIONS:
            break
        ours.append(args[i])
        if OWN_OPTIONS[name] and "=" not in args[i] and i + 1 < len(args):
            ours.append(args[i + 1])
            i += 1
        i += 1
    return ours, args[i:]


def launch_argv_of(ns: argparse.Namespace) -> list[str]:
    """The launch argv given to ``check`` or ``run``: ``--args-file`` lines first, then the command line."""
    argv = [a for a in ns.argv if a != "--"] if ns.argv else []
    return read_args_file(ns.args_file) + argv if ns.args_file else argv


def run(ns: argparse.Namespace) -> int:
    start = time.perf_counter()
    try:
        argv = launch_argv_of(ns)
        source = read_launch_file(ns.args_file) if ns.args_file else None
        res = evaluate(argv, strict=ns.strict, verl_config_dir=ns.verl_config_dir, launcher=ns.launcher,
                       device_memory_gib=ns.device_memory_gib,
                       model_config=ns.model_config, release=ns.mindspeed_release,
                       verl_version=ns.verl_version, entry=ns.entry, source=source)
    except EvaluationError as exc:
        if ns.json:
            print(json.dumps({"ok": False, "fatal": str(exc), "errors": [], "warnings": [], "roles": {}}))
        else:
            print(f"verl-mindspeed check: cannot evaluate this command: {exc}", file=sys.stderr)
        return 2
    elapsed = time.perf_counter() - start
    if ns.json:
        print(json.dumps(res.to_json(), indent=2, ensure_ascii=False, default=str))
    else:
        print(report(res, argv, elapsed, ns.lang))
    return 0 if res.ok else 1


