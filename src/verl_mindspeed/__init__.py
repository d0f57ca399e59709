"""verl-mindspeed: MindSpeed feature flags for verl's Megatron backend, checked before launch.

Public API:

- :data:`FEATURES` - the feature catalogue (one entry per row of the feature guide);
- :class:`MindSpeedConfig` - the typed schema, importable in training scripts;
- :func:`resolve` / :func:`inject` - validate a composed verl config and write back
  the normalized per-role dicts MindSpeed reads;
- :class:`Issue`, :class:`ConfigError` - what the checks report.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .catalog import FEATURES
from .errors import ConfigError, EvaluationError, Issue
from .resolve import Resolution, inject, resolve
from .schema import MindSpeedConfig, TransformerOverrides  # noqa: E402

__all__ = [
    "FEATURES",
    "ConfigError",
    "EvaluationError",
    "Issue",
    "MindSpeedConfig",
    "Resolution",
    "TransformerOverrides",
    "__version__",
    "inject",
    "resolve",
]
