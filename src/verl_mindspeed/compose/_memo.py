"""Many launches composed fast without leaving Hydra (``check-files``, the test suite): verl's tree composed once
for each config and distinct set of top-level overrides, then each launch's dotted overrides applied by Hydra's own
code.

Hydra composes in two steps (``hydra/_internal/config_loader_impl.py``, ``_load_configuration_impl``): the
defaults list, built from the config name and the config-group overrides (``model_engine=megatron``,
``+mindspeed=dense``), gives the config; then ``ConfigLoaderImpl._apply_overrides_to_config`` applies every
other override to it, in struct mode, in command-line order. A dotted key (``a.b=1``) is never a config group,
so the first step does not depend on it. Here the first step is kept (pickled: a copy costs ~20 ms against
~0.4 s for a composition) and the second runs as Hydra runs it.

Whatever could make the two ways differ composes the plain way: a search path override, a top-level override
whose key heads a dotted one (their order would matter), a key of Hydra's own, a package or group path, a
sweep; and any failure, which Hydra's own compose then reports in its own words.
``tests/core/test_compose_fast.py`` compares both ways over every example and launch file.
"""

from __future__ import annotations

import contextlib
import pickle
import sys
from pathlib import Path
from typing import Callable, Iterator

from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig


def _dotted(override) -> bool:
    key = override.key_or_group
    return ("." in key and not key.startswith("hydra.") and "/" not in key and "@" not in key
            and override.package is None and not override.is_sweep_override())


class ComposeMemo:
    """A stand-in for :func:`verl_mindspeed.compose._hydra_run.compose` with the same signature and result."""

    def __init__(self, plain: Callable[..., DictConfig]):
        self.plain = plain
        self.bases: dict[tuple, bytes] = {}
        self.parser = OverridesParser.create()

    def __call__(self, config_dir, name: str, overrides: list[str]) -> DictConfig:
        folder = Path(config_dir)
        if any(o.startswith("hydra.searchpath") for o in overrides) or not (folder / f"{name}.yaml").is_file():
            return self.plain(config_dir, name, overrides)
        try:
            parsed = self.parser.parse_overrides(list(overrides))
        except Exception:  # noqa: BLE001 - Hydra's compose reports it
            return self.plain(config_dir, name, overrides)
        dotted = [o for o in parsed if _dotted(o)]
        top = [o.input_line for o in parsed if not _dotted(o)]
        heads = {o.key_or_group.split(".")[0] for o in dotted}
        if any(o.key_or_group in heads for o in parsed if not _dotted(o)):
            return self.plain(config_dir, name, overrides)
        files = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*.yaml")))
        key = (str(folder), name, tuple(top), files)
        try:
            if key not in self.bases:
                self.bases[key] = pickle.dumps(self.plain(config_dir, name, top))
            cfg = pickle.loads(self.bases[key])
            ConfigLoaderImpl._apply_overrides_to_config(dotted, cfg)
        except Exception:  # noqa: BLE001 - a failure is Hydra's to report, in its words
            return self.plain(config_dir, name, overrides)
        return cfg


@contextlib.contextmanager
def composed_once() -> Iterator[ComposeMemo]:
    """Inside, every composition of the package goes through one :class:`ComposeMemo` (verl's tree composed once
    per config and set of top-level overrides); outside, Hydra's plain compose again."""
    from . import _hydra_run

    package = sys.modules[__name__.rpartition(".")[0]]
    plain = _hydra_run.compose
    memo = ComposeMemo(plain)
    _hydra_run.compose = package.compose = memo  # type: ignore[assignment]
    try:
        yield memo
    finally:
        _hydra_run.compose = package.compose = plain  # type: ignore[assignment]


__all__ = ["ComposeMemo", "composed_once"]
