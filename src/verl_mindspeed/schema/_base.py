"""Behaviour shared by the generated schema classes: pydantic validation and conversions."""

from __future__ import annotations

import dataclasses
import typing
from functools import lru_cache
from typing import Any

import pydantic

from ..errors import ConfigError, Issue


@lru_cache(maxsize=None)
def _adapters(cls: type) -> dict[str, pydantic.TypeAdapter]:
    hints = typing.get_type_hints(cls)
    return {f.name: pydantic.TypeAdapter(hints[f.name]) for f in dataclasses.fields(cls)
            if not dataclasses.is_dataclass(hints[f.name])}


class SchemaBase:
    """Validates every field with pydantic (strict: ``"yes"`` is not a bool) and collects all problems."""

    def __post_init__(self) -> None:
        problems = self.problems()
        if problems:
            raise ConfigError(problems)

    def problems(self, prefix: str = "") -> list[Issue]:
        out: list[Issue] = []
        for name, adapter in _adapters(type(self)).items():
            try:
                adapter.validate_python(getattr(self, name), strict=True)
            except pydantic.ValidationError as exc:
                msg = "; ".join(e["msg"] for e in exc.errors())
                out.append(Issue("error", f"{prefix}{name}", f"{name}={getattr(self, name)!r}: {msg}", rule="schema"))
        return out

    def set_fields(self) -> dict[str, Any]:
        """The fields the user set (not ``None``), nested sections excluded."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) is not None and not dataclasses.is_dataclass(getattr(self, f.name))}
