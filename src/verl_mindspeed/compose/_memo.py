"""A launch composed fast without leaving Hydra (``check``, ``check-files``, the test suite): verl's tree composed
once for each config and distinct set of top-level overrides, then each launch's dotted overrides applied by
Hydra's own code.

Hydra composes in two steps (``hydra/_internal/config_loader_impl.py``, ``_load_configuration_impl``): the
defaults list, built from the config name and the config-group overrides (``model_engine=megatron``,
``+mindspeed=dense``), gives the config; then ``ConfigLoaderImpl._apply_overrides_to_config`` applies every
other override to it, in struct mode, in command-line order. A dotted key (``a.b=1``) is never a config group,
so the first step does not depend on it. Here the first step is kept (pickled: a copy costs ~20 ms against
~0.4 s for a composition) and the second runs as Hydra runs it. ``check`` keeps the first step on disk too
(:func:`disk_cache`), keyed by every YAML file it can read (path, size, modification time), the top-level
overrides and the versions of Python, Hydra and OmegaConf: a repeated check of a launch, or of another launch of
the same config, reads no YAML at all.

A search path override is a top-level one (it decides the defaults list and which files the key covers).
Whatever could make the two ways differ composes the plain way: a top-level override whose key heads a dotted one
(their order would matter), a key of Hydra's own, a package or group path, a sweep; and, unless ``strict``, any
failure, which Hydra's own compose then reports in its own words. ``tests/core/test_compose_fast.py`` compares
both ways over every example and launch file.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import re
import sys
from pathlib import Path
from typing import Callable, Iterator, Optional

import hydra
import omegaconf
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig

from ._types import default_types


def _dotted(override) -> bool:
    key = override.key_or_group
    return ("." in key and not key.startswith("hydra.") and "/" not in key and "@" not in key
            and override.package is None and not override.is_sweep_override())


class ComposeMemo:
    """A stand-in for :func:`verl_mindspeed.compose._hydra_run.compose` with the same signature and result."""

    def __init__(self, plain: Callable[..., DictConfig], strict: bool = False, disk: Optional[Path] = None):
        """``strict``: a dotted override that fails raises the error Hydra's own application of it raises (the
        same message Hydra's compose gives), instead of composing the plain way to let Hydra report it. ``disk``:
        a folder where each base config is kept between processes (:func:`disk_cache`)."""
        self.plain = plain
        self.strict = strict
        self.disk = disk
        self.bases: dict[tuple, bytes] = {}
        self.listings: dict[tuple, tuple] = {}
        self.parser = OverridesParser.create()
        self.defaults: dict = {}
        """verl's defaults for the last composition's dotted keys, where a boolean or a number
        (:func:`._types.default_types`); empty where it composed the plain way."""

    def __call__(self, config_dir, name: str, overrides: list[str]) -> DictConfig:
        self.defaults = {}
        folder = Path(config_dir)
        if not (folder / f"{name}.yaml").is_file():
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
        listed = (str(folder), tuple(o for o in top if o.startswith("hydra.searchpath")))
        if listed not in self.listings:  # once per process: a check does not outlive a change to verl's files
            self.listings[listed] = _files(folder, top)
        key = (str(folder), name, tuple(top), self.listings[listed])
        try:
            cfg = self._base(key, config_dir, name, top)
            defaults = default_types(cfg, [o.key_or_group for o in dotted])
            ConfigLoaderImpl._apply_overrides_to_config(dotted, cfg)
            self.defaults = defaults
        except Exception:  # noqa: BLE001 - a failure is Hydra's to report, in its words
            if self.strict:  # the base's own failure is Hydra's compose's; a dotted one is Hydra's application's
                raise
            return self.plain(config_dir, name, overrides)
        return cfg

    def _base(self, key: tuple, config_dir, name: str, top: list[str]) -> DictConfig:
        """A copy of the base config of its own: this process's, else the disk's, else composed (and kept)."""
        if key in self.bases:
            return pickle.loads(self.bases[key])
        path = self.disk / (hashlib.sha256(repr((_VERSIONS, key)).encode()).hexdigest()[:32] + ".pkl") \
            if self.disk is not None else None
        if path is not None:
            try:
                data = path.read_bytes()
                cfg = pickle.loads(data)  # a file cut short by a crash does not load: composed again
                self.bases[key] = data
                return cfg
            except Exception:  # noqa: BLE001 - missing or unreadable: compose
                pass
        cfg = self.plain(config_dir, name, top)
        self.bases[key] = pickle.dumps(cfg)
        if path is not None:
            _keep(path, self.bases[key])
        return cfg


#: What a pickled base config depends on besides the files: the libraries that made and read it.
_VERSIONS = (_FORMAT := 1, sys.version_info[:2], hydra.__version__, omegaconf.__version__)
_MOST_KEPT = 64


def _files(folder: Path, top: list[str]) -> tuple:
    """Every YAML file the composition can read (the config folder's and the search path's), with its size and
    modification time: a file changed, added or removed makes another key."""
    folders = [folder, *(Path(p) for o in top if o.startswith("hydra.searchpath")
                         for p in re.findall(r"file://([^',\]]+)", o))]
    out = []
    for base in folders:
        if base.is_dir():
            out += [(str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(base.rglob("*.yaml"))]
    return tuple(out)


def _keep(path: Path, data: bytes) -> None:
    """Write atomically; keep the newest files only. A cache that cannot be written is no cache: no error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        kept = sorted(path.parent.glob("*.pkl"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in kept[_MOST_KEPT:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass


def disk_cache() -> Optional[Path]:
    """Where base configs are kept between checks: ``$VERL_MINDSPEED_CACHE/compose`` (default
    ``~/.cache/verl-mindspeed/compose``); ``None`` with ``VERL_MINDSPEED_NO_COMPOSE_CACHE=1``."""
    if os.environ.get("VERL_MINDSPEED_NO_COMPOSE_CACHE") == "1":
        return None
    base = os.environ.get("VERL_MINDSPEED_CACHE")
    return (Path(base) if base else Path.home() / ".cache" / "verl-mindspeed") / "compose"


@contextlib.contextmanager
def composed_once() -> Iterator[ComposeMemo]:
    """Inside, every composition of the package goes through one :class:`ComposeMemo` (verl's tree composed once
    per config and set of top-level overrides); outside, Hydra's plain compose again."""
    from . import _hydra_run

    package = sys.modules[__name__.rpartition(".")[0]]
    plain = _hydra_run.compose
    memo = ComposeMemo(plain, strict=True, disk=disk_cache())
    _hydra_run.compose = package.compose = memo  # type: ignore[assignment]
    try:
        yield memo
    finally:
        _hydra_run.compose = package.compose = plain  # type: ignore[assignment]


__all__ = ["ComposeMemo", "composed_once", "disk_cache"]
