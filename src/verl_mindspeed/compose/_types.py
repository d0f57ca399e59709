"""A value of another type than verl's default for the key: ``use_kl_loss=ture``, ``n_gpus_per_node='8'``.

verl's config carries no types: Hydra keeps ``Flase`` as a string, the dataclass conversion passes it on unchecked,
and verl's ``if config.x:`` reads any non-empty string as True (a switch the user meant off is on); a number
given as a string fails on its first arithmetic, after Ray has started. The type expected is the one of verl's
default for the key in the tree composed before the launch's dotted overrides (``ComposeMemo.defaults``): a
boolean, an integer or a number. A fraction where the default is an integer is not judged (verl's YAML writes
``top_p: 1`` and ``temperature: 0`` for keys its dataclasses type as floats); nor is a default of null, a string, a
list or a section, nor a key the catalogue types itself (``megatron.*`` switches, ``override_transformer_config``).
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from hydra.core.override_parser.types import Override
from omegaconf import DictConfig

from .. import catalog
from ..catalog import OTC
from ..errors import Issue
from ..i18n import tr
from ..model.verl_options import select
from ..overrides import hydra_value
from ..resolver._suggest import fix_value
from ..rules._base import issue


def default_types(base: DictConfig, keys: Sequence[str]) -> dict[str, Any]:
    """verl's default for each of ``keys`` in ``base``, where it is a boolean, an integer or a float."""
    return {key: value for key in keys if isinstance(value := select(base, key), (bool, int, float))}


def type_issues(defaults: dict[str, Any], cfg: DictConfig, parsed: Sequence[Override],
                stand_in: bool = False) -> list[Issue]:
    """An error for each launch override whose value is not of its default's type, with the value meant; a warning
    where the defaults are those of a config the launch's own extends (``stand_in``: its own may type it otherwise,
    as the SFT trainer's ``test_freq: after_each_epoch`` does)."""
    issues = []
    last = {o.key_or_group: o for o in parsed}  # a key given twice: the value that stands
    for key, override in last.items():
        if key not in defaults or override.is_delete() or _catalogued(key):
            continue
        value = select(cfg, key)
        expected = type(defaults[key])
        if value is None or value == "" or _fits(value, expected):
            continue  # '': a variable the script leaves unset, which the launch reader reports
        meant = _meant(value, expected)
        written, _, text = (override.input_line or key).partition("=")
        if "${" in text and meant is not None:  # read from the environment or another key: decoded, it stays so
            meant = None
            line = f"{written}='${{oc.decode:{text.strip(chr(39))}}}'"
        else:
            line = None if meant is None else f"{written}={hydra_value(meant)}"
        kind = {bool: tr("True or False"), int: tr("an integer"), float: tr("a number")}[expected]
        message = tr("{key} takes {kind} (verl's default is {default}), got {value!r}", key=key, kind=kind,
                     default=defaults[key], value=value)
        if expected is bool:
            message = tr("{message}: verl reads any text but an empty one as True", message=message)
        issues.append(issue("warning" if stand_in else "error", key, message, "value", override=line))
    return issues


def _catalogued(key: str) -> bool:
    section, _, name = key.rpartition(".")
    return f".{OTC}" in f".{section}" or (section.endswith(".megatron") and catalog.flag(name, "megatron") is not None)


def _fits(value: Any, expected: type) -> bool:
    if expected is bool:
        return isinstance(value, bool) or value in (0, 1)
    # an integer default says nothing against a fraction: verl's YAML writes top_p: 1 and temperature: 0 for floats
    return isinstance(value, (int, float))


def _meant(value: Any, expected: type) -> Optional[Any]:
    """The value of ``expected``'s type the user meant, or None when none is plain."""
    if expected is bool:  # the catalogue's reading of a switch's words (``yes``, ``off``, ``Ture``, ``disabled``)
        meant = fix_value(str(value), "bool")
        return None if meant is None else meant == "True"
    try:
        number = float(str(value).strip())
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    if expected is int:
        return int(number) if number.is_integer() else None
    return int(number) if number.is_integer() and isinstance(value, str) and "." not in value else number

