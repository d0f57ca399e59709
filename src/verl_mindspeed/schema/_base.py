"""What the generated schema classes share: pydantic validates, and its errors become one ConfigError.

The classes are pydantic dataclasses in strict mode with unknown fields forbidden (:data:`STRICT`): ``"yes"`` is
not a bool, ``"2"`` not an int, a misspelled field is refused. :func:`schema` wraps the constructor so that every
problem pydantic finds is translated once, here, into an :class:`Issue` that renders in either language (an
unknown field with its nearest field as "did you mean"), and raised together as one :class:`ConfigError`.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import pydantic

from ..errors import ConfigError, Issue
from ..i18n import Msg, tr

STRICT = pydantic.ConfigDict(strict=True, extra="forbid")
"""The validation every schema class gets."""

SECTIONS: list[tuple[type, str]] = []
"""The schema's sections and how a user names the place of their fields (the package registers them)."""


def schema(cls: type) -> type:
    """Translate pydantic's ``ValidationError`` of ``cls(...)`` into one :class:`ConfigError` listing every problem.

    A nested section may be given as a dict: it is built first, its problems listed under its name."""
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if args:
            raise TypeError(f"{cls.__name__} takes keyword arguments only")
        nested: list[Issue] = []
        for name, section in _sections_of(cls).items():
            if isinstance(kwargs.get(name), Mapping):
                try:
                    kwargs[name] = section(**{str(k): v for k, v in kwargs[name].items()})
                except ConfigError as exc:
                    nested += [dataclasses.replace(i, key=f"{name}.{i.key}") for i in exc.issues]
                    kwargs[name] = section()
        try:
            init(self, **kwargs)
        except pydantic.ValidationError as exc:
            raise ConfigError(issues(cls, exc, kwargs) + nested) from None
        if nested:
            raise ConfigError(nested)

    cls.__init__ = __init__  # type: ignore[method-assign]
    return cls


@functools.lru_cache(maxsize=None)
def _sections_of(cls: type) -> dict[str, type]:
    """The fields of ``cls`` that are schema classes themselves."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if dataclasses.is_dataclass(hints[f.name])}


def issues(cls: type, exc: pydantic.ValidationError, given: dict[str, Any], prefix: str = "") -> list[Issue]:
    """One issue per field pydantic refused (its errors grouped), in the order pydantic found them."""
    by_field: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for error in exc.errors():
        by_field[str(error["loc"][0]) if error["loc"] else ""].append(error)
    out = []
    for name, errors in by_field.items():
        if any(e["type"] == "unexpected_keyword_argument" for e in errors):
            out.append(_unknown(cls, name, prefix))
        else:
            out.append(Issue("error", f"{prefix}{name}", _message(name, given.get(name), errors), rule="schema"))
    return out


def _message(name: str, value: Any, errors: list[dict[str, Any]]) -> Msg:
    """One field's failures, as a sentence that renders in either language."""
    kinds = {e["type"] for e in errors}
    ge = next((e["ctx"]["ge"] for e in errors if e["type"] == "greater_than_equal"), None)
    if ge is not None:
        return tr("{name}={value!r}: must be an integer >= {minimum}", name=name, value=value, minimum=ge)
    literal = next((e for e in errors if e["type"] == "literal_error"), None)
    if literal is not None:
        return tr("{name}={value!r}: must be one of {choices}", name=name, value=value,
                  choices=literal["ctx"]["expected"])
    if kinds <= {"bool_type"}:
        return tr("{name}={value!r}: must be True or False", name=name, value=value)
    if kinds <= {"int_type"}:
        return tr("{name}={value!r}: must be an integer", name=name, value=value)
    wanted = next((e["ctx"]["class_name"] for e in errors if e["type"] == "dataclass_exact_type"), None)
    if wanted:
        return tr("{name} must be a {cls} or a dict, got {type}", name=name, cls=wanted, type=type(value).__name__)
    return tr("{name}={value!r}: {reason}", name=name, value=value, reason="; ".join(e["msg"] for e in errors))


def _unknown(cls: type, name: str, prefix: str) -> Issue:
    from ..resolver._suggest import nearest

    key = f"{prefix}{name}"
    home = next((label for other, label in SECTIONS if other is not cls and not issubclass(cls, other)
                 and name in {f.name for f in dataclasses.fields(other)}), None)
    if home:
        return Issue("error", key, tr("{name!r} is not a field of {cls}: it belongs in {home}", name=name,
                                      cls=cls.__name__, home=home), rule="schema")
    near = nearest(name, [f.name for f in dataclasses.fields(cls)])
    if near:
        return Issue("error", key, tr("unknown field {name!r} of {cls}; did you mean {near!r}?", name=name,
                                      cls=cls.__name__, near=near), suggestion=near, rule="schema")
    return Issue("error", key, tr("unknown field {name!r} of {cls}", name=name, cls=cls.__name__), rule="schema")


class SchemaBase:
    """What every schema class offers besides its fields."""

    def set_fields(self) -> dict[str, Any]:
        """The fields the user set (not ``None``), nested sections excluded."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) is not None and not dataclasses.is_dataclass(getattr(self, f.name))}

