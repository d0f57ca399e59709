"""verl source trees to check against: the installed verl, or a release fetched from PyPI once and cached.

A *tree* is a directory holding ``verl/`` (and ``recipe/`` in a source checkout): the layout the entry
modules and their ``hydra.searchpath`` entries assume. A fetched release keeps only what a check reads
from its wheel: every YAML file under ``verl/``, ``verl/version/version``, the packages' ``__init__.py``
and the Python files that declare a ``@hydra.main`` entry or a dataclass (the entry's ``config_path``/``config_name`` and the
fields verl's config dataclasses accept are read from them with ``ast``, never imported).

The cache is ``$VERL_MINDSPEED_CACHE/verl-trees/<version>`` when that variable is set, else
``~/.cache/verl-mindspeed/verl-trees/<version>``. Downloads go through ``python -m pip download``, so
pip's own index settings (mirrors, proxies) apply.
"""  # noqa: E501  (a docstring: re-wrapping would change its value)

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Optional

from ..errors import EvaluationError
from ..i18n import tr

CACHE_ENV = "VERL_MINDSPEED_CACHE"
MARKER = ".verl-mindspeed-tree.json"
#: Bump when the set of files kept from a wheel changes: older cached trees are fetched again.
FORMAT = 3


def cache_root() -> Path:
    base = os.environ.get(CACHE_ENV)
    root = Path(base) if base else Path.home() / ".cache" / "verl-mindspeed"
    return root / "verl-trees"


def tree_dir(version: str, root: Optional[Path] = None) -> Path:
    """Where the tree of ``version`` lives (whether or not it was fetched yet)."""
    return (root or cache_root()) / version


def cached_tree(version: str, root: Optional[Path] = None) -> Optional[Path]:
    """The cached tree of ``version`` when it is complete, else ``None``."""
    target = tree_dir(version, root)
    try:
        marker = json.loads((target / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return target if marker.get("format") == FORMAT else None


def fetch_tree(version: str, root: Optional[Path] = None, python: str = sys.executable) -> Path:
    """The tree of verl ``version``, downloading its wheel from PyPI the first time.

    Raises :class:`EvaluationError` with one line when the release is neither cached nor downloadable.
    """
    found = cached_tree(version, root)
    if found is not None:
        return found
    root = root or cache_root()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EvaluationError(tr("cannot create the verl tree cache {path}: {error}", path=root, error=exc)) from exc
    with tempfile.TemporaryDirectory(dir=root, prefix=f".{version}-") as tmp:
        wheel = _download(version, Path(tmp) / "wheel", python, root)
        staging = Path(tmp) / "tree"
        _extract(wheel, staging)
        if not (staging / "verl" / "trainer" / "config").is_dir():
            raise EvaluationError(tr("verl {version}'s wheel has no verl/trainer/config", version=version))
        (staging / MARKER).write_text(json.dumps({"format": FORMAT, "version": version, "wheel": wheel.name}) + "\n",
                                      encoding="utf-8")
        final = tree_dir(version, root)
        if final.exists():  # an older format, or a partial tree from an interrupted run
            shutil.rmtree(final)
        staging.rename(final)
    return final


def _download(version: str, dest: Path, python: str, root: Path) -> Path:
    cmd = [python, "-m", "pip", "download", f"verl=={version}", "--no-deps", "--only-binary", ":all:",
           "--disable-pip-version-check", "--quiet", "--retries", "1", "--timeout", "20", "-d", str(dest)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as exc:
        proc = None
        detail = str(exc)
    else:
        detail = _last_line(proc.stderr or proc.stdout)
    wheels = sorted(dest.glob("verl-*.whl"))
    if proc is None or proc.returncode != 0 or not wheels:
        raise EvaluationError(tr(
            "verl {version} is not in the cache ({cache}) and could not be downloaded from PyPI: {detail}",
            version=version, cache=root, detail=detail or "pip download failed"))
    return wheels[0]


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip() and not ln.startswith("WARNING: Location")]
    return lines[-1][:300] if lines else ""


def _keep(name: str, read) -> bool:
    if not name.startswith("verl/") or name.endswith("/"):
        return False
    if name.endswith((".yaml", ".yml")) or name == "verl/version/version":
        return True
    if name.endswith("/__init__.py"):
        return True  # re-exports: how a ``_target_`` such as ``verl.workers.config.X`` reaches its class
    if name.endswith(".py"):
        text = read(name)
        return b"hydra.main" in text or b"@dataclass" in text
    return False


def _extract(wheel: Path, staging: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        members = [m for m in archive.namelist() if _keep(m, archive.read)]
        archive.extractall(staging, members)


def installed_tree() -> Optional[tuple[Path, str]]:
    """(the directory holding the installed ``verl`` package, its version), without importing verl."""
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        return None
    package = Path(list(spec.submodule_search_locations)[0])
    # verl's own version file first (what ``verl.__version__`` reads); the distribution's metadata, whose import
    # alone costs a check some 20 ms, only for a tree without one
    version = read_version(package.parent)
    if version is None:
        from importlib import metadata

        try:
            version = metadata.version("verl")
        except metadata.PackageNotFoundError:
            version = "unknown"
    return package.parent, version


def read_version(root: Path) -> Optional[str]:
    """The version a tree's ``verl/version/version`` file states, if any."""
    try:
        text = (root / "verl" / "version" / "version").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return text or None


def release_tree(version: str) -> tuple[Path, str]:
    """The tree to check a launch against for ``--verl-version``: the installed verl when it is that
    release, else the cached or freshly fetched wheel."""
    installed = installed_tree()
    if installed is not None and installed[1] == version:
        return installed
    return fetch_tree(version), version


__all__ = ["CACHE_ENV", "cache_root", "cached_tree", "fetch_tree", "installed_tree", "read_version",
           "release_tree", "tree_dir"]
