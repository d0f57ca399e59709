"""Command-line parsing shared by the commands.

- :class:`Parser` turns every argparse error into :class:`UsageError` (exit 2, one line, or one
  JSON object with ``--json``) instead of printing and exiting.
- :func:`whole` and :func:`real` check a number, as an argparse ``type`` or later, on a value filled in after
  parsing (``plan --args-file``): one message naming the option, raised as :class:`UsageError`.
- ``check`` and ``run`` take their own options anywhere in the line: :func:`split_own` separates
  them from the launch argv, which :func:`hydra_problems` then validates exactly as verl's
  ``@hydra.main`` entry would (Hydra's own argument parser), with a "did you mean" for a typo.
"""

from __future__ import annotations

import argparse
import math
from typing import Any, Callable, Iterable, Optional, Sequence

from .._version import __version__
from ..i18n import LANGS, Msg, default_lang, render, tr


class UsageError(Exception):
    """A command line that cannot be run as given (exit 2)."""

    def __init__(self, message: Any, usage: str = "") -> None:
        super().__init__(str(message))
        self.message = message
        self.usage = usage


class Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises :class:`UsageError` instead of printing and exiting, with its help
    headings in the user's language (``lang=``; subcommand parsers inherit it)."""

    def __init__(self, *args: Any, lang: str = "en", **kwargs: Any) -> None:
        kwargs.setdefault("add_help", False)
        super().__init__(*args, **kwargs)
        self.lang = lang
        self._positionals.title = render(tr("positional arguments"), lang)
        self._optionals.title = render(tr("options"), lang)
        self.add_argument("-h", "--help", action="help", help=render(tr("show this help and exit"), lang))

    def format_usage(self) -> str:
        return self._localized(super().format_usage())

    def format_help(self) -> str:
        return self._localized(super().format_help())

    def _localized(self, text: str) -> str:
        return render(tr("usage: "), self.lang) + text[len("usage: "):] if text.startswith("usage: ") else text

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def choice(values: Sequence[str], lang: str) -> Callable[[str], str]:
    """An argparse ``type`` accepting one of ``values``, with a "did you mean" for anything else."""

    def check(text: str) -> str:
        if text in values:
            return text
        near = _nearest(text, values)
        message = tr("invalid value {value!r}; choose from {choices}", value=text, choices=", ".join(values))
        if near:
            message = tr("invalid value {value!r}; did you mean {near!r}? (choose from {choices})",
                         value=text, near=near, choices=", ".join(values))
        raise argparse.ArgumentTypeError(render(message, lang))

    return check


def whole(flag: str, minimum: int = 1, maximum: Optional[int] = None) -> Callable[[Any], int]:
    """A whole number in ``[minimum, maximum]`` for ``flag``: an argparse ``type``, and the check of a value filled in
    after parsing. Anything else raises :class:`UsageError` (argparse lets it through unchanged, so the one line
    says ``flag`` once, in the user's language)."""

    def check(raw: Any) -> int:
        try:
            value: Optional[int] = int(str(raw), 10)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise UsageError(tr("{flag} must be a whole number >= {minimum} (got {value})", flag=flag,
                                minimum=minimum, value=raw))
        if maximum is not None and value > maximum:
            raise UsageError(tr("{flag} must be at most {maximum} (got {value})", flag=flag, maximum=maximum,
                                value=raw))
        return value

    return check


def real(flag: str, low: float, high: float, low_open: bool = False) -> Callable[[Any], float]:
    """A finite number in ``[low, high]`` (``(low, high]`` with ``low_open``) for ``flag``, as :func:`whole`."""

    def check(raw: Any) -> float:
        try:
            value = float(str(raw))
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value > high or value < low or (low_open and value == low):
            interval = ("(" if low_open else "[") + f"{low:g}, {high:g}]"
            raise UsageError(tr("{flag} must be a number in {interval} (got {value})", flag=flag,
                                interval=interval, value=raw))
        return value

    return check


def add_common(p: argparse.ArgumentParser, lang: str) -> None:
    """``--lang`` and ``--version``, on every command."""
    p.add_argument("--lang", type=choice(LANGS, lang), default=default_lang(), metavar="{en,zh}",
                   help=render(tr("language of every message (default: from LC_ALL / LANG)"), lang))
    p.add_argument("--version", action=_Version, nargs=0,
                   help=render(tr("print the version of verl-mindspeed and the stack it judges, and exit"), lang))


class _Version(argparse.Action):
    """``--version``: the text as written, lines kept (argparse's own action reflows it into one paragraph)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option: Any = None) -> None:
        print(version_text())
        parser.exit()


def version_text() -> str:
    """This package's version, the stacks it assumes when none is given, and what is installed here."""
    from ..catalog import universe
    from ..stack import BRIDGE_DEFAULT_RELEASE, BRIDGE_FOR_LINE, MBRIDGE_DEFAULT, core_version, installed

    plain, bridged = universe.DEFAULT_RELEASE, BRIDGE_DEFAULT_RELEASE
    here = ", ".join(f"{d} {installed(d)}" for d in ("verl", "megatron-core", "megatron-bridge", "mbridge",
                                                    "mindspeed") if installed(d)) or "none of verl's stack"
    return "\n".join([
        f"verl-mindspeed {__version__}",
        f"stack assumed when none is given or installed: MindSpeed {plain} on megatron-core "
        f"{core_version(universe.core_line(plain))} with mbridge {MBRIDGE_DEFAULT} (mbridge or converter launches); "
        f"MindSpeed {bridged} on megatron-core {core_version(universe.core_line(bridged))} with Megatron-Bridge "
        f"{BRIDGE_FOR_LINE[universe.core_line(bridged)]} (verl 0.9's default Megatron-Bridge path)",
        f"installed here: {here}"])


def add_judging_options(p: argparse.ArgumentParser, lang: str) -> None:
    """What ``check`` and ``run`` both judge a launch with: strictness, the model, the MindSpeed release."""
    from ..catalog import universe
    from ..stack import BRIDGE_DEFAULT_RELEASE

    say = lambda text: render(text, lang)  # noqa: E731
    p.add_argument("--strict", action="store_true", help=say(tr("unknown keys far from any known key are errors too")))
    p.add_argument("--model-config", metavar="PATH",
                   help=say(tr("a HF config.json, or a directory holding one, for model-aware checks")))
    p.add_argument("--mindspeed-release", default=None, metavar="RELEASE", help=say(tr(
        "MindSpeed release to check against: a branch ({branches}) or its short name (26.1, 2.3); default: the "
        "installed MindSpeed's, else one whose stack can start the launch ({release}, or {bridged} for verl 0.9's "
        "default Megatron-Bridge path)", branches=", ".join(universe.releases()),
        release=universe.DEFAULT_RELEASE, bridged=BRIDGE_DEFAULT_RELEASE)))


def add_stack_options(p: argparse.ArgumentParser, lang: str) -> None:
    """The stack's layers below MindSpeed (``check``, ``check-files``): megatron-core and the bridge packages."""
    say = lambda text: render(text, lang)  # noqa: E731
    p.add_argument("--megatron-core", default=None, metavar="VERSION", help=say(tr(
        "the megatron-core release of the cluster, and with --upstream the line the MindSpeed source pairs with "
        "(default: the installed one next to an installed MindSpeed, else the line the MindSpeed release runs on)")))
    p.add_argument("--bridge", default=None, type=_bridge_option, metavar="SPEC", help=say(tr(
        "the bridge packages of the cluster: megatron-bridge==VERSION, mbridge==VERSION, or none, comma-separated "
        "(default: found next to an installed MindSpeed, else assumed from the megatron-core line)")))


def _bridge_option(text: str) -> dict:
    from ..stack import parse_bridge_option

    try:
        return parse_bridge_option(text)
    except ValueError:
        raise argparse.ArgumentTypeError(render(tr(
            "--bridge takes megatron-bridge==VERSION, mbridge==VERSION or none (comma-separated), got {value!r}",
            value=text), "en")) from None


def own_options(p: argparse.ArgumentParser) -> dict[str, bool]:
    """Every option string of a command -> whether it takes a value."""
    return {s: a.nargs != 0 for a in p._actions for s in a.option_strings}


def split_own(args: Sequence[str], own: dict[str, bool]) -> tuple[list[str], list[str]]:
    """A command's own options (anywhere before ``--``) vs the launch argv (everything else, in order)."""
    ours: list[str] = []
    launch: list[str] = []
    takes_value = _hydra_takes_value()
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            launch += args[i + 1:]
            break
        name = arg.split("=", 1)[0]
        nxt = args[i + 1] if i + 1 < len(args) else None
        if name in own:
            ours.append(arg)
            if own[name] and "=" not in arg and nxt is not None:
                ours.append(nxt)
                i += 1
        else:
            launch.append(arg)
            if takes_value(arg) and nxt is not None and not nxt.startswith("-"):
                launch.append(nxt)  # the value of a Hydra flag, e.g. --cfg job
                i += 1
        i += 1
    return ours, launch


def prescan(args: Sequence[str], option: str, default: Optional[str] = None) -> Optional[str]:
    """The value of ``option`` in a raw argv (last one wins), before parsing: for error output."""
    value = default
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg == option and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(option + "="):
            value = arg.split("=", 1)[1]
    return value


def _hydra_parser() -> argparse.ArgumentParser:
    """Hydra's own parser of ``@hydra.main`` command lines: what ``python3 -m verl.trainer.main_ppo`` accepts."""
    from hydra._internal.utils import get_args_parser

    parser = get_args_parser()

    def fail(message: str) -> None:
        raise UsageError(message)

    parser.error = fail  # type: ignore[method-assign]
    return parser


def _hydra_takes_value() -> Callable[[str], bool]:
    parser = _hydra_parser()
    options = own_options(parser)

    def takes_value(arg: str) -> bool:
        if not arg.startswith("-") or "=" in arg:
            return False
        matches = [s for s in options if s == arg] or [s for s in options if s.startswith(arg) and arg.startswith("--")]
        return len(matches) == 1 and options[matches[0]]

    return takes_value


#: Hydra options that print something and exit instead of running: ``check`` has nothing to check.
_VERSION = "--version"


def hydra_problems(argv: Sequence[str], also_known: Iterable[str] = ()) -> list[Msg]:
    """Why verl's ``@hydra.main`` entry would reject ``argv`` (empty: it accepts it)."""
    parser = _hydra_parser()
    known = sorted({*own_options(parser), *also_known})
    argv = [a for a in argv if a != _VERSION]
    try:
        _, extras = parser.parse_known_args(list(argv))
    except UsageError as exc:
        return [tr("python3 -m verl.trainer.main_ppo rejects this command line: {problem}", problem=str(exc))]
    problems: list[Msg] = []
    for arg in extras:
        if arg.startswith("-"):
            name = arg.split("=", 1)[0]
            near = _nearest(name, known)
            problems.append(
                tr("unknown option {arg}; did you mean {near}?", arg=name, near=near) if near else
                tr("unknown option {arg}: neither verl's entry (Hydra) nor this command accepts it", arg=name))
        else:
            problems.append(tr(
                "{arg}: verl's entry (Hydra) rejects an override that a flag separates from the other overrides "
                "('unrecognized arguments'); keep the overrides together", arg=arg))
    return problems


def _nearest(text: str, candidates: Iterable[str]) -> Optional[str]:
    """The candidate the user most likely meant: the only one ``text`` begins, else the nearest by edits."""
    from ..resolver._suggest import nearest

    candidates = list(candidates)
    starts = [c for c in candidates if text and c.startswith(text)]
    return starts[0] if len(starts) == 1 else nearest(text, candidates)


def reason(exc: BaseException) -> Any:
    """An exception's message, keeping a :class:`Msg` so that it renders in either language."""
    return exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)


def lang_of(args: Sequence[str]) -> str:
    lang = prescan(args, "--lang", default_lang())
    return lang if lang in LANGS else "en"


__all__ = ["Parser", "UsageError", "add_common", "choice", "hydra_problems", "lang_of", "own_options", "prescan",
           "real", "reason", "split_own", "whole"]
