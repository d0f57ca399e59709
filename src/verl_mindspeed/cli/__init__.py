"""The ``verl-mindspeed`` command line: check, check-files, doctor, features, plan, presets, run.

Exit status: 0 no errors, 1 the configuration has errors, 2 the command could not be evaluated
(bad arguments, missing files, no verl). No command prints a traceback: an unexpected failure is
one line (``VERL_MINDSPEED_DEBUG=1`` shows the traceback).
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from typing import Optional

from ..compose import split_pasted
from ..errors import EvaluationError
from ..i18n import render, tr
from . import _args, _output
from ._args import _Version

#: Each command and the module that defines it (imported when it is needed: a check does not load the planner).
MODULES = {"check": "check", "check-files": "check_files", "doctor": "doctor", "features": "features", "plan": "plan",
           "presets": "presets", "run": "run", "upstream-env": "upstream_env"}
COMMANDS = tuple(MODULES)
#: Commands whose own options may come anywhere in a launch argv.
LAUNCH_COMMANDS = ("check", "run", "doctor")


def build_parser(lang: str = "en", only: Optional[str] = None) -> _args.Parser:
    """The whole command line; with ``only``, that command alone (what a run of it needs)."""
    parser = _args.Parser(
        prog="verl-mindspeed", allow_abbrev=False, lang=lang,
        description=render(tr("Pre-flight checks and normalization of MindSpeed options for verl on Ascend NPUs."),
                           lang),
    )
    parser.add_argument("--version", action=_Version, nargs=0,
                        help=render(tr("print the version of verl-mindspeed and the stack it judges, and exit"), lang))
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                parser_class=functools.partial(_args.Parser, lang=lang))
    for name, module in MODULES.items():
        if only in (None, name):
            importlib.import_module(f"{__name__}.{module}").add_parser(sub, lang)
    return parser


def _parse(parser: _args.Parser, args: list[str]):
    command = args[0] if args else None
    if command in LAUNCH_COMMANDS:
        sub = _subparser(parser, command)
        module, rest = split_pasted(args[1:])  # a whole 'python3 -m MODULE ...' line pasted as arguments
        ours, launch = _args.split_own(rest, _args.own_options(sub))
        head = launch[:1] if command == "doctor" else []  # doctor LOG [ARGV...]: the log comes first
        ns = parser.parse_args([command, *ours, *head])
        ns.argv = launch[len(head):]
        if module and getattr(ns, "entry", None) is None:
            ns.entry = module
        ns.own_options = sorted(_args.own_options(sub))
        ns.usage = sub.format_usage()
        return ns
    return parser.parse_args(args)


def _subparser(parser: _args.Parser, name: str) -> _args.Parser:
    action = next(a for a in parser._actions if a.dest == "command")
    return action.choices[name]  # type: ignore[index]


def main(argv: Optional[list[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    lang = _args.lang_of(args)
    fmt = _output.format_of(args)
    command = args[0] if args and args[0] in COMMANDS else "verl-mindspeed"
    only = command if command in COMMANDS else None
    ns = _guarded(lambda: _parse(build_parser(lang, only), args), fmt, lang, command)
    if isinstance(ns, int):
        return ns
    if ns.command == "run":  # verl's own run: its exceptions and exit codes are verl's
        return int(ns.run(ns) or 0)
    code = _guarded(lambda: int(ns.run(ns) or 0), fmt, lang, command)
    return code


def _guarded(step, fmt: str, lang: str, command: str):
    """``step()``, with every failure turned into an exit status and one line (or one JSON object)."""
    try:
        return step()
    except SystemExit as exc:  # --help and --version print and exit 0
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    except _args.UsageError as exc:
        return _output.fatal(exc.message, fmt, lang, command, usage=exc.usage)
    except EvaluationError as exc:
        return _output.fatal(tr("cannot evaluate this command: {reason}", reason=_args.reason(exc)), fmt, lang, command)
    except BrokenPipeError:  # output piped into `head` and friends: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - a bug of ours: one line, never a traceback
        if os.environ.get("VERL_MINDSPEED_DEBUG"):
            raise
        return _output.fatal(tr("internal error: {error}; run again with VERL_MINDSPEED_DEBUG=1 for the traceback "
                                "and report it", error=repr(exc)), fmt, lang, command)


if __name__ == "__main__":
    sys.exit(main())
