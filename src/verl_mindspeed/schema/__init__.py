"""The typed schema: one field per catalogue flag, importable in training scripts.

    from verl_mindspeed import MindSpeedConfig, TransformerOverrides

    cfg = MindSpeedConfig(
        tensor_model_parallel_size=2,
        override_transformer_config=TransformerOverrides(use_flash_attn=True, sequence_parallel=True),
    )
    cfg.to_override_transformer_config()   # {'use_flash_attn': True, 'sequence_parallel': True}
    cfg.to_overrides()                      # Hydra override strings for the actor

The field declarations live in ``_generated.py``, written from the catalogue by
``python -m verl_mindspeed.docs_gen``; a test fails when they drift. Values are
validated by pydantic (strict, unknown fields forbidden) when an instance is built; every problem is raised
at once as a ``ConfigError``.
"""

from __future__ import annotations

import dataclasses
import typing
from functools import lru_cache
from typing import Any, Literal, Union

from pydantic.dataclasses import dataclass

from ..catalog import OTC, ROLE_PREFIXES
from ..errors import ConfigError
from ..overrides import hydra_value
from ..resolver._normalize import normalize
from ._base import SECTIONS, STRICT, schema
from ._generated import MegatronSettings, MindSpeedConfigFields, TransformerOverrides

SECTIONS[:] = [(TransformerOverrides, "MindSpeedConfig(override_transformer_config=TransformerOverrides(...))"),
               (MegatronSettings, "MindSpeedConfig(...)")]


@schema
@dataclass(kw_only=True, config=STRICT)
class MindSpeedConfig(MindSpeedConfigFields):
    """A role's Megatron settings with MindSpeed's flags, typed and validated (``override_transformer_config``
    may be given as a dict: it is validated like ``TransformerOverrides(**dict)``)."""

    def to_override_transformer_config(self) -> dict[str, Any]:
        """The dict in the form MindSpeed reads (no-op layers as a digit string, and so on)."""
        out, issues = normalize("", self.override_transformer_config.set_fields())
        errors = [i for i in issues if i.severity == "error"]
        if errors:
            raise ConfigError(errors)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}

    def to_dict(self) -> dict[str, Any]:
        """The role's ``megatron`` section as a nested dict (only what is set)."""
        return {**self.set_fields(), OTC: self.to_override_transformer_config()}

    def to_overrides(self, role: str = "actor") -> list[str]:
        """Hydra override strings that produce these settings for ``role`` in verl's config."""
        prefix = ROLE_PREFIXES[role]
        lines = [f"{prefix}.{k}={hydra_value(v)}" for k, v in self.set_fields().items()]
        lines += [f"++{prefix}.{OTC}.{k}={hydra_value(v)}" for k, v in self.to_override_transformer_config().items()]
        return lines


def _plain(tp: Any) -> Any:
    """An annotation OmegaConf accepts: Literal -> str, Union -> Any."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Literal:
        return str
    if origin is Union:
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return typing.Optional[_plain(inner[0])]
        return Any
    if origin is list:
        return list[_plain(args[0])] if args else list
    return tp


@lru_cache(maxsize=None)
def structured(cls: type = TransformerOverrides) -> type:
    """A plain-dataclass twin of a schema class for ``OmegaConf.structured`` / Hydra's ConfigStore.

    OmegaConf does not accept ``Literal`` annotations; the twin types them as ``str``
    and leaves the value checks to the resolver.
    """
    hints = typing.get_type_hints(cls)
    fields = []
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp):
            sub = structured(tp)
            fields.append((f.name, sub, dataclasses.field(default_factory=sub)))
        else:
            fields.append((f.name, _plain(tp), dataclasses.field(default=None)))
    return dataclasses.make_dataclass(f"{cls.__name__}Structured", fields, kw_only=True)


__all__ = ["MegatronSettings", "MindSpeedConfig", "TransformerOverrides", "structured"]
