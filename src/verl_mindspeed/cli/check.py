"""``verl-mindspeed check``: the pre-flight check of a verl launch command.

``check``'s own options may come anywhere (``check ARGV... --json``); everything else is the launch
argv, which must be one that ``python3 -m verl.trainer.main_ppo`` accepts (Hydra's flags, overrides).
Exit 0: no errors (with ``--fail-on warning``: no warnings either); 1: errors; 2: not evaluated.
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Optional

from ..i18n import joined, render, tr
from ..launch import LaunchFile, evaluate, read_launch_file
from ..report import failed, json_report, report
from . import _output, _upstream
from ._args import UsageError, add_common, add_judging_options, add_stack_options, choice, hydra_problems


def add_parser(sub: argparse._SubParsersAction, lang: str = "en") -> argparse.ArgumentParser:
    p = sub.add_parser(
        "check", allow_abbrev=False,
        help=render(tr("check the MindSpeed options of a verl launch command, before launching"), lang),
        description=render(tr(
            "Give exactly the arguments that follow 'python3 -m verl.trainer.main_ppo'; the options of check may "
            "come anywhere. Exit 0: no errors; 1: the configuration has errors; 2: it could not be evaluated."), lang),
    )
    add_check_options(p, lang)
    p.add_argument("--args-file", metavar="FILE", help=render(tr(
        "read the launch argv from a file: one argument per line ('#' comments), or a shell script whose "
        "'python3 -m MODULE ...' line is the launch (MODULE sets --entry)"), lang))
    p.add_argument("argv", nargs="*", metavar="ARGV",
                   help=render(tr("the launch arguments (after an optional --)"), lang))
    add_fix_options(p, lang)
    p.set_defaults(run=run)
    return p


def add_fix_options(p: argparse.ArgumentParser, lang: str) -> None:
    say = lambda text: render(text, lang)  # noqa: E731
    p.add_argument("--fix", action="store_true", help=say(tr(
        "write every error's fix into the launch file (--args-file) where each argument is written, print the diff, "
        "then check the fixed file")))
    p.add_argument("--fix-to", metavar="FILE", help=say(tr(
        "like --fix, but write the fixed launch file to FILE and leave the original as it is")))


def add_check_options(p: argparse.ArgumentParser, lang: str) -> None:
    """The options ``check`` and ``check-files`` share."""
    say = lambda text: render(text, lang)  # noqa: E731
    p.add_argument("--json", action="store_true", help=say(tr("print one JSON object (same as --format json)")))
    p.add_argument("--format", type=choice(_output.FORMATS, lang), default=None, metavar="{text,json,sarif,github}",
                   help=say(tr("output: the text report, one JSON object, SARIF 2.1.0, or GitHub annotations")))
    p.add_argument("--fail-on", type=choice(("error", "warning"), lang), default="error", metavar="{error,warning}",
                   help=say(tr("exit 1 on errors (default), or on warnings too")))
    p.add_argument("--quiet", "-q", action="store_true",
                   help=say(tr("text report: only the errors, the warnings, the switches no check here covers and the "
                                "verdict line")))
    add_judging_options(p, lang)
    add_stack_options(p, lang)
    _upstream.add_options(p, lang)
    p.add_argument("--verl-config-dir", metavar="DIR",
                   help=say(tr("verl's trainer/config directory (default: the installed verl's)")))
    p.add_argument("--verl-source", metavar="DIR", help=say(tr(
        "a verl source checkout, or a verl-recipe checkout, whose entries and config folders the launch uses "
        "(recipes, a patched verl, a pull request's configs); without it such a launch is judged against the verl "
        "config it extends")))
    p.add_argument("--verl-version", metavar="VERSION", help=say(tr(
        "check against this verl release's config tree instead of the installed verl's (downloaded from PyPI "
        "once, then cached)")))
    p.add_argument("--entry", metavar="MODULE", help=say(tr(
        "the module the arguments are given to (default: verl.trainer.main_ppo), e.g. "
        "verl.experimental.fully_async_policy.fully_async_main")))
    p.add_argument("--launcher", action="store_true", help=say(tr(
        "the launch goes through 'verl-mindspeed run' / 'python3 -m verl_mindspeed.main_ppo', which injects the "
        "companions MindSpeed needs (a +mindspeed=<preset> says so by itself)")))
    p.add_argument("--device-memory-gib", type=positive(lang), default=64.0, metavar="GIB", help=say(tr(
        "memory of one device, for the estimated peak with a model config (default 64)")))
    add_common(p, lang)


def output_format(ns: argparse.Namespace) -> str:
    return "json" if ns.json else (ns.format or "text")


def positive(lang: str):
    """An argparse ``type``: a finite number > 0."""

    def check(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not 0 < value < float("inf"):
            raise argparse.ArgumentTypeError(render(tr("{value!r} is not a positive number", value=text), lang))
        return value

    return check


def launch_of(ns: argparse.Namespace) -> tuple[list[str], Optional[LaunchFile]]:
    """The launch argv given to ``check`` or ``run`` (``--args-file`` first, then the command line) and its file."""
    argv = list(ns.argv or [])
    if not ns.args_file:
        return argv, None
    source = read_launch_file(ns.args_file)
    return [*source.argv, *argv], source


def launch_argv_of(ns: argparse.Namespace) -> list[str]:
    return launch_of(ns)[0]


def validate_launch_argv(argv: list[str], own: list[str]) -> None:
    """Refuse what verl's entry refuses (unknown flags, split overrides), as a usage error."""
    problems = hydra_problems(argv, own)
    if problems:
        raise UsageError(problems[0] if len(problems) == 1 else
                         tr("{n} problems with the command line: {all}", n=len(problems), all=joined(problems)))


def check_one(argv: list[str], ns: argparse.Namespace,
              source: Optional[LaunchFile] = None) -> tuple[int, dict[str, Any], Optional[str], list]:
    """Evaluate one launch: (exit status, JSON object, text report or None, issues). Raises EvaluationError."""
    start = time.perf_counter()
    src = _upstream.sources_of(ns)
    res = evaluate(argv, strict=ns.strict, verl_config_dir=ns.verl_config_dir, model_config=ns.model_config,
                   release=ns.mindspeed_release, launcher=ns.launcher, device_memory_gib=ns.device_memory_gib,
                   verl_version=ns.verl_version, entry=ns.entry, source=source,
                   megatron_core=getattr(ns, "megatron_core", None), bridge=getattr(ns, "bridge", None),
                   verl_source=getattr(ns, "verl_source", None))
    _upstream.judge(res, ns, src)
    elapsed = time.perf_counter() - start
    fmt = output_format(ns)
    text = report(res, argv, elapsed, ns.lang, ns.fail_on, quiet=getattr(ns, "quiet", False)) if fmt == "text" else None
    return (1 if failed(res, ns.fail_on) else 0), json_report(res, ns.lang, ns.fail_on), text, res.issues


def run(ns: argparse.Namespace) -> int:
    if not ns.argv and not ns.args_file and not ns.entry:  # nothing says which launch to check
        raise UsageError(tr("give the launch arguments (what follows 'python3 -m verl.trainer.main_ppo') "
                            "or --args-file FILE"), getattr(ns, "usage", ""))
    argv, source = launch_of(ns)
    validate_launch_argv(argv, getattr(ns, "own_options", []))
    code, payload, text, issues = check_one(argv, ns, source)
    if ns.fix or ns.fix_to:
        from ._fix import fix_and_check

        return fix_and_check(ns, source, issues, check_one, output_format(ns))
    _output.emit(payload, text, output_format(ns), issues, ns.lang, ns.args_file, argv)
    return code
