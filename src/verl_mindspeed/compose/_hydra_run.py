"""Running Hydra's compose on verl's tree, and finding every bad override of a launch in few compositions.

Hydra stops at the first override it cannot apply. :func:`screen` finds the others in one pass against the
config the top-level overrides compose (:func:`base_config`), with the message Hydra gives for each, so a
launch written for another release costs a handful of compositions, not one per bad argument.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Callable, Optional

from omegaconf import DictConfig, OmegaConf

from ..resolver._history import has_path, occupied


def base_config(config_dir: Path, name: str, remaining: list, extra: list[str],
                composer: Optional[Callable[..., DictConfig]] = None) -> Optional[DictConfig]:
    """The config the top-level overrides (groups such as ``model_engine=...``, presets) compose, leaving out
    those that fail (they are reported by the main loop); ``composer`` composes (default: :func:`compose`)."""
    top = [(t, o) for t, o in remaining if "." not in o.key_or_group]
    for _ in range(len(top) + 1):
        try:
            return (composer or compose)(config_dir, name, [t for t, _ in top] + extra)
        except Exception as exc:  # noqa: BLE001 - hydra.errors.* and omegaconf errors
            culprit = culprit_of(str(exc), top)
            if culprit is None:
                return None
            top.remove(culprit)
    return None


def screen(base: Optional[DictConfig], remaining: list) -> list[tuple[tuple, str]]:
    """Overrides that cannot apply to ``base``, with the message Hydra gives for each (checked in order)."""
    if base is None:
        return []
    found = []
    made: dict[str, bool] = {}  # keys an earlier override of the launch added (True) or deleted (False)
    for text, override in remaining:
        key = override.key_or_group
        if "." not in key or key.startswith("hydra.") or "@" in key or "/" in key:
            continue
        earlier = made.get(key)  # what an earlier override of the launch did to the key, else the base config
        exists = has_path(base, key) if earlier is None else earlier
        if override.is_delete() and not exists:
            found.append(((text, override), f"Could not delete from config. '{key}' does not exist."))
        elif override.is_add() and (occupied(base, key) if earlier is None else earlier):
            found.append(((text, override), f"Could not append to config. An item is already at '{key}'."))
        elif not (override.is_add() or override.is_force_add() or override.is_delete()) and not exists:
            found.append(((text, override), f"Could not override '{key}'.\nTo append to your config use +{text}"))
        else:
            made[key] = not override.is_delete()  # Hydra applies the overrides in order
    return found


def searchpath_overrides(root: Optional[Path], primary_file: Path, extra_dirs: tuple[str, ...] = ()) -> list[str]:
    """The search path Hydra would use beyond the primary folder, as one ``hydra.searchpath`` override.

    The experimental entries' configs say ``hydra.searchpath: [file://verl/trainer/config]``, a path relative
    to the folder verl's scripts run from (the source checkout): anchored to the tree being checked. Hydra's
    ``--config-dir`` (``extra_dirs``) adds a folder after them."""
    entries: list = []
    if root is not None:
        try:
            entries = list(OmegaConf.select(OmegaConf.load(primary_file), "hydra.searchpath", default=None) or [])
        except Exception:  # noqa: BLE001 - a broken primary file is Hydra's to report
            entries = []
    anchored = []
    for item in [*entries, *(f"file://{Path(d).resolve()}" for d in extra_dirs)]:
        text = str(item)
        if root is not None and text.startswith("file://") and not Path(text[len("file://"):]).is_absolute():
            text = f"file://{root / text[len('file://'):]}"
        anchored.append("'" + text.replace("'", "\\'") + "'")
    return [f"hydra.searchpath=[{','.join(anchored)}]"] if anchored else []


def compose(config_dir: Path, name: str, overrides: list[str]) -> DictConfig:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".*is not available\.", category=UserWarning)
            with initialize_config_dir(config_dir=str(config_dir), version_base=None):
                return hydra_compose(config_name=name, overrides=overrides)
    finally:
        GlobalHydra.instance().clear()


def culprit_of(message: str, remaining: list) -> Optional[tuple]:
    """The override a Hydra error message is about: the longest key quoted in the message."""
    twice = re.match(r"(\S+) appears more than once in the final defaults list", message.strip())
    if twice:  # '+group=x' for a group the defaults list already selects
        return next(((t, o) for t, o in remaining if o.key_or_group == twice.group(1) and o.is_add()), None)
    best = None
    for text, override in remaining:
        names = {override.key_or_group, text, text.lstrip("+~")}
        if any(f"'{n}" in message for n in names) and (best is None or len(text) > len(best[0])):
            best = (text, override)
    return best


def sweep_message(text: str) -> str:
    return f"Ambiguous value for argument '{text}'"
