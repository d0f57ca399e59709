"""Interpolations verl cannot resolve: an unset environment variable, a key that does not exist.

verl resolves the whole config inside its TaskRunner (``OmegaConf.to_container(config, resolve=True)`` and
``OmegaConf.resolve`` in ``verl/trainer/main_ppo.py``), a Ray actor: an interpolation that does not resolve fails
the run after Ray has started. Each failing interpolation the launch itself writes is an error at its key; keys
that fail only because they refer to it are named in its hint. Interpolations to resolvers this process does
not have (``${hydra:...}`` and resolvers verl registers at run time) are not judged here, and a note says so.
"""

from __future__ import annotations

import os
import re
from typing import Any, Iterable

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException, UnsupportedInterpolationType

from ..errors import Issue
from ..i18n import tr, trn
from ..rules._base import error, note

_ENV = re.compile(r"Environment variable '([^']+)' not found")
_KEY = re.compile(r"Interpolation key '([^']+)' not found")


def still_interpolated(value: Any) -> bool:
    """A value that holds an interpolation: read after resolving, one that does not resolve (reported at its key by
    :func:`unresolved`), whose type and meaning are unknown."""
    return isinstance(value, str) and "${" in value


def _strings(node: Any, path: str) -> Iterable[tuple[str, str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _strings(value, f"{path}[{index}]")
    elif still_interpolated(node):
        yield path, node


def _cause(raw: str, message: str) -> tuple[str, str]:
    """(kind, name) of what does not resolve: ``env`` and the variable, ``key`` and the missing key."""
    found = _ENV.search(message)
    if found:
        return "env", found.group(1)
    found = _KEY.search(message)
    return ("key", found.group(1)) if found else ("other", "")


def _root(raw: str, kind: str, name: str) -> bool:
    """Whether the value itself holds the failing interpolation (not only a reference to a key that fails)."""
    if kind == "env":
        return re.search(r"oc\.env:\s*" + re.escape(name) + r"\s*[},]", raw) is not None
    if kind == "key":
        return "${" + name + "}" in raw.replace(" ", "") or "oc.select:" + name in raw.replace(" ", "")
    return True


_ENV_NO_DEFAULT = re.compile(r"\$\{\s*oc\.env:\s*([^,}\s]+)\s*\}")
_ABSOLUTE_KEY = re.compile(r"\$\{\s*([A-Za-z_][\w.]*)\s*\}")
_RESOLVER = re.compile(r"\$\{\s*([A-Za-z_][\w.]*):")


def _has(data: Any, dotted: str) -> bool:
    for part in dotted.split("."):
        if not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True


def _suspects(data: dict, strings: list[tuple[str, str]]) -> tuple[bool, list[str]]:
    """A cheap first pass over the raw values (resolving every interpolation costs more than the rest of the
    check): whether any interpolation may fail (an unset variable without a default, an absolute reference to a
    missing key), and the keys that use a resolver this process lacks."""
    suspect, unsupported = False, []
    for path, raw in strings:
        if any(name not in os.environ for name in _ENV_NO_DEFAULT.findall(raw)):
            suspect = True
        if any(not _has(data, key) for key in _ABSOLUTE_KEY.findall(raw)):
            suspect = True
        if any(not OmegaConf.has_resolver(name) for name in _RESOLVER.findall(raw)):
            unsupported.append(path)
    return suspect, unsupported


def unresolved(cfg: DictConfig) -> list[Issue]:
    """An error per interpolation of ``cfg`` that does not resolve, at the key whose value holds it."""
    if not isinstance(cfg, DictConfig):
        return []
    data = OmegaConf.to_container(cfg, resolve=False)
    strings = list(_strings(data, ""))
    suspect, unsupported = _suspects(data, strings)
    failures: list[tuple[str, str, str, str, str]] = []
    for path, raw in strings if suspect else ():
        try:
            OmegaConf.select(cfg, path, throw_on_resolution_failure=True)
        except UnsupportedInterpolationType:
            pass  # found by the first pass
        except OmegaConfBaseException as exc:
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            kind, name = _cause(raw, message)
            failures.append((path, raw, kind, name, message))
    out: list[Issue] = []
    for path, raw, kind, name, message in failures:
        if not _root(raw, kind, name):
            continue
        also = [p for p, r, k, n, _m in failures if (k, n) == (kind, name) and p != path and not _root(r, k, n)]
        if kind == "env":
            text = tr("{key}={raw} does not resolve: the environment variable {name} is not set, and verl resolves "
                      "the whole config in its TaskRunner, after Ray starts", key=path, raw=raw, name=name)
            hint = tr("set {name} in the launch's environment, or give a default: ${{oc.env:{name},<default>}}",
                      name=name)
        elif kind == "key":
            text = tr("{key}={raw} does not resolve: there is no key {name}, and verl resolves the whole config in its "
                      "TaskRunner, after Ray starts", key=path, raw=raw, name=name)
            hint = tr("point the interpolation at an existing key, or write the value itself")
        else:
            text = tr("{key}={raw} does not resolve: {reason}", key=path, raw=raw, reason=message)
            hint = tr("write the value itself instead of the interpolation")
        if also:
            hint = tr("{hint}; keys that refer to it fail too: {keys}", hint=hint, keys=", ".join(sorted(also)[:5]))
        out.append(error(path, text, "interpolation", hint))
    if unsupported:
        n = len(unsupported)
        out.append(note(unsupported[0], trn(
            "{n} interpolation uses a resolver this check does not have (registered by Hydra or verl at run time) "
            "and is not judged: {keys}",
            "{n} interpolations use a resolver this check does not have (registered by Hydra or verl at run time) "
            "and are not judged: {keys}", n, n=n, keys=", ".join(unsupported[:5])), "interpolation"))
    return out
