"""Behaviour shared by the generated schema classes: pydantic validation and conversions.

Building an instance validates every field against the catalogue (strict types, ``Literal``
choices, minimums) and raises one :class:`ConfigError` listing every problem; an unknown field
is a problem too, with the nearest field as "did you mean".
"""

from __future__ import annotations

import dataclasses
import typing
from functools import lru_cache
from typing import Any

import pydantic

from ..errors import ConfigError, Issue
from ..i18n import Msg, tr


@lru_cache(maxsize=None)
def _adapters(cls: type) -> dict[str, pydantic.TypeAdapter]:
    hints = typing.get_type_hints(cls, include_extras=True)
    return {f.name: pydantic.TypeAdapter(hints[f.name]) for f in dataclasses.fields(cls)
            if not dataclasses.is_dataclass(hints[f.name])}


def _message(name: str, value: Any, errors: list[dict[str, Any]]) -> Msg:
    """One pydantic failure of one field, as a sentence that renders in either language."""
    kinds = {e["type"] for e in errors}
    ge = next((e["ctx"]["ge"] for e in errors if e["type"] == "greater_than_equal"), None)
    if ge is not None:
        return tr("{name}={value!r}: must be an integer >= {minimum}", name=name, value=value, minimum=ge)
    literal = next((e for e in errors if e["type"] == "literal_error"), None)
    if literal is not None:
        return tr("{name}={value!r}: must be one of {choices}", name=name, value=value,
                  choices=literal["ctx"]["expected"])
    if kinds == {"bool_type"}:
        return tr("{name}={value!r}: must be True or False", name=name, value=value)
    if kinds == {"int_type"}:
        return tr("{name}={value!r}: must be an integer", name=name, value=value)
    return tr("{name}={value!r}: {reason}", name=name, value=value, reason="; ".join(e["msg"] for e in errors))


def _unknown(cls: type, name: str) -> Issue:
    from ..resolver._suggest import nearest

    fields = [f.name for f in dataclasses.fields(cls)]
    home = next((label for other, label in _sections() if other is not cls and not issubclass(cls, other)
                 and name in {f.name for f in dataclasses.fields(other)}), None)
    if home:
        return Issue("error", name, tr("{name!r} is not a field of {cls}: it belongs in {home}", name=name,
                                       cls=cls.__name__, home=home), rule="schema")
    near = nearest(name, fields)
    if near:
        return Issue("error", name, tr("unknown field {name!r} of {cls}; did you mean {near!r}?", name=name,
                                       cls=cls.__name__, near=near), suggestion=near, rule="schema")
    return Issue("error", name, tr("unknown field {name!r} of {cls}", name=name, cls=cls.__name__), rule="schema")


SECTIONS: list[tuple[type, str]] = []
"""The schema's sections and how a user names the place of their fields (the package registers them)."""


def _sections() -> list[tuple[type, str]]:
    return SECTIONS


class SchemaBase:
    """Validates every field with pydantic (strict: ``"yes"`` is not a bool) and collects all problems."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = [_unknown(cls, k) for k in kwargs if k not in known]
        if unknown:
            raise ConfigError(unknown)
        return super().__new__(cls)

    def __post_init__(self) -> None:
        problems = self.problems()
        if problems:
            raise ConfigError(problems)

    def problems(self, prefix: str = "") -> list[Issue]:
        out: list[Issue] = []
        for name, adapter in _adapters(type(self)).items():
            value = getattr(self, name)
            try:
                adapter.validate_python(value, strict=True)
            except pydantic.ValidationError as exc:
                out.append(Issue("error", f"{prefix}{name}", _message(name, value, exc.errors()), rule="schema"))
        return out

    def set_fields(self) -> dict[str, Any]:
        """The fields the user set (not ``None``), nested sections excluded."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) is not None and not dataclasses.is_dataclass(getattr(self, f.name))}
