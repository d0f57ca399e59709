"""Type and value checks for one key, from the catalogue or the MindSpeed/Megatron argument catalogues."""

from __future__ import annotations

import math
from typing import Any, Optional

from ..catalog import Flag
from ..i18n import tr
from ._suggest import nearest


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _describe(v: Any) -> str:
    return f"{v!r} ({type(v).__name__})"


def check_flag(flag: Flag, value: Any) -> Optional[str]:
    """Why ``value`` is not legal for ``flag``, or ``None`` when it is.

    ``layers`` values are checked after normalization (see ``_normalize``).
    """
    if value is None:
        return None if flag.nullable or flag.type in ("bool", "layers") else tr("must not be null")
    if flag.type == "bool":
        return None if isinstance(value, bool) else tr("must be True or False, got {value}", value=_describe(value))
    if flag.type == "int":
        if not _is_int(value):
            return tr("must be an integer, got {value}", value=_describe(value))
        if flag.minimum is not None and value < flag.minimum:
            return tr("must be an integer >= {minimum}, got {value}", minimum=flag.minimum, value=value)
        return None
    if flag.type == "str":
        if not isinstance(value, str):
            return tr("must be a string, got {value}", value=_describe(value))
        return _check_choice(value, flag.choices, dict(flag.value_synonyms))
    if flag.type == "str_list":
        if not isinstance(value, (list, tuple)):
            return tr("must be a list such as [core_attn], got {value}", value=_describe(value))
        for item in value:
            problem = _check_choice(item, flag.choices) if isinstance(item, str) else tr("must hold strings")
            if problem:
                return tr("entry {item} {problem}", item=repr(item), problem=problem)
        return None
    return None


def _check_choice(value: str, choices: tuple[str, ...], synonyms: Optional[dict[str, str]] = None) -> Optional[str]:
    if not choices or value in choices:
        return None
    same = (synonyms or {}).get(value.strip().lower().replace("-", "_"))
    if same in choices:
        return tr("must be one of {choices}; got {value}, which MindSpeed and megatron call {near}",
                  choices=", ".join(choices),
                  value=repr(value), near=repr(same), fix=same)
    near = nearest(value, choices)
    if near is None:  # a shortened choice ('ulysses'): the one choice it starts
        starts = [c for c in choices if c.lower().startswith(value.lower()) and value]
        near = starts[0] if len(starts) == 1 else None
    if near:
        return tr("must be one of {choices}; got {value}; did you mean {near}?", choices=", ".join(choices),
                  value=repr(value), near=repr(near), fix=near)
    return tr("must be one of {choices}; got {value}", choices=", ".join(choices), value=repr(value))


_TRUTH = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False, "0": False}


def suggested_value(problem: Any, value: Any, minimum: Optional[int] = None) -> Any:
    """The nearest legal value for a value a check refused, or ``None`` when there is none to propose: the
    choice it named, the boolean a ``yes``/``1`` means, the integer a digit string holds, the minimum."""
    params = getattr(problem, "params", {})
    if "fix" in params:
        return params["fix"]
    template = getattr(problem, "template", "")
    if template.startswith("must be True or False"):
        return _TRUTH.get(str(value).strip().lower())
    if template.startswith("must be an integer"):
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                return None
        if isinstance(value, float) and math.isfinite(value):
            value = math.floor(value + 0.5)  # the integer nearest a fraction (1.5 -> 2), or the one it spells
        if _is_int(value):
            return value if minimum is None else max(value, minimum)
    return None


def check_arg(spec: dict, value: Any) -> Optional[str]:
    """Check a value against an argparse-style spec from the MindSpeed/Megatron catalogues."""
    if value is None:
        return None
    action = spec.get("action")
    if action in ("store_true", "store_false"):
        return None if isinstance(value, bool) else tr("must be True or False, got {value}", value=_describe(value))
    typ = spec.get("type")
    if typ == "int" and not _is_int(value):
        return tr("must be an integer, got {value}", value=_describe(value))
    if typ == "float" and not (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return tr("must be a number, got {value}", value=_describe(value))
    choices = spec.get("choices")
    if isinstance(choices, list) and isinstance(value, (str, int)) and not isinstance(value, bool):
        if value not in choices:
            return _check_choice(str(value), tuple(str(c) for c in choices)) if isinstance(value, str) else (
                tr("must be one of {choices}; got {value}", choices=", ".join(map(str, choices)), value=repr(value))
            )
    return None
