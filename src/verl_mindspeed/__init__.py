"""verl-mindspeed: MindSpeed feature flags for verl's Megatron backend, checked before launch.

Public API:

- :data:`FEATURES` - the feature catalogue (one entry per row of the feature guide);
- :class:`MindSpeedConfig` - the typed schema, importable in training scripts;
- :func:`compose_argv` - verl's config for a launch argv, composed by Hydra without importing verl;
- :func:`resolve` / :func:`inject` - validate a composed verl config and write back
  the normalized per-role dicts MindSpeed reads;
- :func:`evaluate` - all of it for a launch argv, as ``verl-mindspeed check`` does;
- :class:`Issue`, :class:`ConfigError` - what the checks report.

No exported name is also the name of a subpackage (``verl_mindspeed.resolver`` holds ``resolve``),
so importing a subpackage never replaces an exported function.

Names load on first use: Hydra imports this package whenever it opens the presets
(``pkg://verl_mindspeed.conf``), and every Hydra app must not pay for pydantic then.
"""

from __future__ import annotations

import importlib
from typing import Any

from ._version import __version__

_EXPORTS = {
    "FEATURES": "catalog",
    "ConfigError": "errors",
    "EvaluationError": "errors",
    "Issue": "errors",
    "MindSpeedConfig": "schema",
    "TransformerOverrides": "schema",
    "Resolution": "resolver",
    "compose_argv": "compose",
    "evaluate": "launch",
    "inject": "resolver",
    "resolve": "resolver",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'verl_mindspeed' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = ["__version__", *_EXPORTS]
