"""Hydra's command line: split a verl launch's argv the way ``@hydra.main`` reads it, parse the overrides, and
write a value back as an override (:func:`hydra_value`)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Optional

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override

from .errors import EvaluationError
from .i18n import tr

_VALUE_FLAGS = {"--config-path": "config_path", "-cp": "config_path", "--config-name": "config_name",
                "-cn": "config_name", "--config-dir": "config_dir", "-cd": "config_dir"}
_BARE_FLAGS = {"--multirun", "-m", "--resolve", "--cfg", "-c", "--info", "-i", "--package", "-p"}


@dataclass
class LaunchArgs:
    config_path: Optional[str] = None
    config_name: Optional[str] = None
    config_dir: Optional[str] = None
    overrides: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    """Hydra flags that do not change the composed config (``--multirun``, ``--cfg job``...)."""


def split_argv(argv: list[str]) -> LaunchArgs:
    out = LaunchArgs()
    it = iter(argv)
    for arg in it:
        if arg == "--":
            continue
        name, eq, value = arg.partition("=")
        if name in _VALUE_FLAGS:
            if not eq:
                value = next(it, None)
                if value is None:
                    raise EvaluationError(tr("{name} needs a value", name=name))
            setattr(out, _VALUE_FLAGS[name], value)
        elif name in _BARE_FLAGS or arg.startswith("--"):
            out.ignored.append(arg)
            if name in ("--cfg", "-c", "--info", "-i", "--package", "-p") and not eq:
                nxt = next(it, None)
                if nxt is not None:
                    out.ignored.append(nxt)
        else:
            out.overrides.append(arg)
    if out.config_name and out.config_name.endswith(".yaml"):
        out.config_name = out.config_name[: -len(".yaml")]
    return out


def split_override(arg: str) -> tuple[str, str, str]:
    """``"++a.b=1"`` -> ``("++", "a.b", "1")``: the prefix, key and value text of an override as typed."""
    body = arg.lstrip("+~")
    key, _, value = body.partition("=")
    return arg[: len(arg) - len(body)], key, value


def parse_each(overrides: list[str]) -> tuple[list[tuple[str, Override]], list[tuple[int, str, str]]]:
    """Parse each override alone with Hydra's public parser: (text, parsed) of those it reads, and (position, text,
    Hydra's first line) of those it refuses, for the launch to report them all and go on without them."""
    parser = OverridesParser.create()
    good, bad = [], []
    for position, text in enumerate(overrides):
        try:
            good.extend((text, o) for o in parser.parse_overrides([text]))
        except Exception as exc:  # hydra's OverrideParseException and friends
            bad.append((position, text, str(exc).splitlines()[0]))
    return good, bad


def parse_overrides(overrides: list[str]) -> list[Override]:
    """Parse with Hydra's public parser; a syntax error stops evaluation (exit 2) naming the override."""
    parser = OverridesParser.create()
    parsed = []
    for text in overrides:
        try:
            parsed.extend(parser.parse_overrides([text]))
        except Exception as exc:  # hydra's OverrideParseException and friends
            raise EvaluationError(tr("cannot parse override {text!r}: {error}", text=text,
                                     error=str(exc).splitlines()[0])) from exc
    return parsed


_SPECIAL = set(",[]{}=' ()\"$:")


#: Words Hydra's grammar reads as another type than a string: an integer, a float, a bool, null.
_TYPED = re.compile(r"[-+]?(?:\d[\d_]*|\d*\.\d+(?:e[-+]?\d+)?|\d+e[-+]?\d+|inf|nan)|true|false|null", re.I)


def hydra_value(value: Any) -> str:
    """A value as it is typed on a Hydra command line: ``True``, ``null``, ``[a,b]``; a string Hydra would read
    otherwise (``a,b`` is a sweep, ``a b`` two arguments, ``0`` an integer: MindSpeed ignores a no-op layer given
    as one) is quoted."""
    if value is True or value is False:
        return str(value)
    if value is None:
        return "null"
    if isinstance(value, str):
        quote = not value or _SPECIAL & set(value) or _TYPED.fullmatch(value)
        return "'" + value.replace("'", "\\'") + "'" if quote else value
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    return str(value)


def shell_word(word: str) -> str:
    """One shell word, quoted only where the shell would split or expand it (a leading ``~`` of Hydra's deletion is
    followed by a dot path, which the shell leaves alone)."""
    bare = word[1:] if word.startswith("~") else word
    if shlex.quote(bare) == bare:
        return word
    if "'" in word and not set('"$`\\!') & set(word):  # Hydra's own quotes kept, as check prints them elsewhere
        return f'"{word}"'
    return shlex.quote(word)
