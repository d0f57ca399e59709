"""Unknown keys: typos become errors with "did you mean", far-off keys warnings (errors with --strict)."""

from __future__ import annotations

from typing import Any, Iterable

from .. import catalog
from ..catalog import universe
from ..errors import Issue
from ..rules._base import error, fmt, warning
from ._suggest import nearest


def check_otc_keys(prefix: str, raw: dict[str, Any], *, strict: bool) -> list[Issue]:
    known = universe.known_otc_keys()
    preferred = [f.name for f in catalog.flags("otc")]
    issues = []
    for name, value in raw.items():
        if name in known:
            continue
        path = f"{prefix}.{catalog.OTC}.{name}"
        near = nearest(name, known, preferred)
        if near is not None:
            issues.append(error(
                path, f"unknown key '{name}'; did you mean '{near}'?", "unknown-key",
                hint=f"MindSpeed and Megatron would never read '{name}'",
                suggestion=f"{prefix}.{catalog.OTC}.{near}",
            ))
        else:
            make = error if strict else warning
            issues.append(make(
                path, f"'{name}' is not a MindSpeed, Megatron-LM or TransformerConfig option; passed through as is",
                "unknown-key", hint="check the spelling, or ignore if a newer release added it",
            ))
    return issues


def check_megatron_keys(prefix: str, megatron: dict[str, Any], known: Iterable[str]) -> list[Issue]:
    """Keys directly under ``<role>.megatron``: verl's dataclass conversion rejects unknown ones later."""
    known = set(known)
    otc_keys = universe.known_otc_keys()
    issues = []
    for name, value in megatron.items():
        if name in known or name == catalog.OTC:
            continue
        path = f"{prefix}.{name}"
        near = nearest(name, known)
        if near is not None:
            issues.append(error(
                path, f"unknown key '{name}'; did you mean '{near}'?", "unknown-megatron-key",
                hint="verl fails when it turns this section into McoreEngineConfig", suggestion=f"{prefix}.{near}",
            ))
        elif name in otc_keys:
            target = f"{prefix}.{catalog.OTC}.{name}"
            issues.append(error(
                path, f"'{name}' belongs in override_transformer_config, not directly under megatron",
                "unknown-megatron-key", hint=f"write +{target}={fmt(value)}", suggestion=target,
            ))
        else:
            issues.append(error(
                path, f"'{name}' is not a setting of verl's megatron engine config", "unknown-megatron-key",
                hint="verl fails when it turns this section into McoreEngineConfig; the key may belong to "
                     "another verl version",
            ))
    return issues
