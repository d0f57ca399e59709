"""A Hydra composition error about one override -> an Issue on that key, with Hydra's own advice."""

from __future__ import annotations

from typing import Any, Optional

from hydra.core.override_parser.types import Override
from omegaconf import DictConfig, OmegaConf

from ..catalog import OTC, universe
from ..errors import Issue
from ..resolve._suggest import nearest
from ..rules._base import error


def _value_text(override: Override) -> str:
    text = override.input_line or ""
    return text.split("=", 1)[1] if "=" in text else ""


def issue_for_failure(message: str, override: Override, base: Optional[DictConfig]) -> Issue:
    key = override.key_or_group
    value = _value_text(override)
    first = message.strip().splitlines()[0] if message.strip() else message
    if first.startswith("Ambiguous value"):
        return error(
            key, f"{value} is a Hydra sweep (several runs), not one value", "hydra-sweep",
            hint="quote the value so that the shell hands Hydra one string (Hydra's advice: key='value1,value2')",
            override=f"{override.input_line.split('=')[0]}='\"{value}\"'",
        )
    if "Could not find" in first or "Could not load" in first:
        return _group_issue(key, value, message)
    if "An item is already at" in message or "Could not append" in message:
        return error(
            key, f"'{key}' already exists, so '+' cannot add it", "hydra-append",
            hint="Hydra: use key=value to override an existing key, or ++key=value to add or override",
            override=f"++{key}={value}",
        )
    if "Could not delete" in message:
        return error(key, f"'~{key}' removes a key that does not exist", "hydra-delete")
    if "Could not override" in first:
        return _missing_key_issue(key, value, base)
    return error(key, first, "hydra")


def _missing_key_issue(key: str, value: str, base: Optional[DictConfig]) -> Issue:
    parent, _, leaf = key.rpartition(".")
    siblings = _keys_at(base, parent)
    near = nearest(leaf, siblings) if siblings else None
    if parent.endswith(OTC):
        near = near or nearest(leaf, universe.known_otc_keys())
        if leaf in universe.known_otc_keys():
            return error(
                key, f"'{leaf}' is not in verl's default override_transformer_config, so it needs '+'",
                "hydra-missing-plus", hint="Hydra: to append to your config use +key=value",
                override=f"+{key}={value}",
            )
    if near and near != leaf:
        fixed = f"{parent}.{near}" if parent else near
        return error(
            key, f"unknown key '{leaf}'; did you mean '{near}'?", "unknown-key", suggestion=fixed,
            override=(f"{fixed}={value}" if near in siblings else f"+{fixed}={value}"),
        )
    return error(
        key, f"'{key}' is not in verl's config", "hydra-missing-plus",
        hint="Hydra: to append to your config use +key=value (check the spelling first: verl may reject it later)",
        override=f"+{key}={value}",
    )


def _keys_at(base: Optional[DictConfig], parent: str) -> list[str]:
    if base is None:
        return []
    node: Any = OmegaConf.select(base, parent) if parent else base
    return [str(k) for k in node.keys()] if isinstance(node, DictConfig) else []


def _group_issue(key: str, value: str, message: str) -> Issue:
    options = [line.strip() for line in message.splitlines() if line.startswith("\t") and "=" not in line]
    options = [o for o in options if o and not o.startswith("provider")]
    near = nearest(value, options) if options else None
    hint = f"available: {', '.join(options)}" if options else ""
    text = f"no config '{value}' in group '{key}'"
    if near:
        text += f"; did you mean '{near}'?"
    return error(key, text, "hydra-group", hint=hint, suggestion=key if near else None,
                 override=f"+{key}={near}" if near else None)
