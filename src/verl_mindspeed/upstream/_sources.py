"""Where MindSpeed's and Megatron-LM's sources come from for an upstream run, and which megatron-core line they need.

A source is a folder holding ``mindspeed/`` (or ``megatron/training``), a release archive (``.tar.gz``, as the
project's shared ``upstream/`` folder and GitHub's source downloads hold them; extracted once into the cache), or
the installed package. Nothing is ever written into the user's own environment.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..catalog import universe
from ..i18n import tr

#: megatron-core lines an upstream environment can be built for -> the exact release installed.
LINES = {"0.12": "0.12.1", "0.16": "0.16.1"}
#: MindSpeed branches without ``core_rX.Y`` in their name, and the line they import (master at 028de58 still
#: imports megatron-core 0.12.1 names that 0.16.1 dropped: ``moe/legacy_a2a_token_dispatcher``).
DEFAULT_LINE = "0.12.1"
_LINE_IN_NAME = re.compile(r"core_r?v?(\d+\.\d+)(?:\.\d+)?")


class SourceError(ValueError):
    """A source that cannot be used (its message says what was given and what is needed)."""


@dataclass(frozen=True)
class Sources:
    """The code one upstream run imports."""

    mindspeed: Path
    """The folder holding ``mindspeed/``."""
    megatron: Optional[Path]
    """The folder holding ``megatron/training`` (Megatron-LM's, not in the megatron-core wheel); ``None`` for
    sources that cannot run here."""
    release: str
    """A name for the MindSpeed release (the folder's or archive's name, or the installed version)."""
    line: str
    """The megatron-core release the MindSpeed release imports (``0.12.1``, ``0.16.1``; the line its name gives,
    e.g. ``0.17``, for sources that cannot run here)."""
    line_from: str
    """How the line was decided: ``name``, ``option`` or ``default``."""
    digest: str
    """A digest of both sources (archive bytes, or every file's path, size and modification time)."""
    unrunnable: tuple = ()
    """Why no environment built here can run these sources (empty when one can): sentences for the report."""

    @property
    def known_release(self) -> Optional[str]:
        """The catalogue's release branch these sources are (``None`` for one it does not know, e.g. a fork):
        the release the hand rules judge beside them unless another is asked for."""
        return universe.canonical_release(self.release)


def cache_root() -> Path:
    base = os.environ.get("VERL_MINDSPEED_CACHE")
    return Path(base) if base else Path.home() / ".cache" / "verl-mindspeed"


def _strip(name: str) -> str:
    for suffix in (".tar.gz", ".tgz", ".tar"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def extract(archive: Path) -> Path:
    """The folder an archive unpacks to, extracted once into the cache (keyed by its bytes)."""
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()[:12]
    target = cache_root() / "upstream" / f"{_strip(archive.name)}-{digest}"
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{archive.name}-"))
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")
        tmp.rename(target)
    except OSError:
        if not target.is_dir():
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


#: A file each source must hold: MindSpeed's adaptor (PyPI's empty ``mindspeed`` placeholder has none).
MARKERS = {"mindspeed": "mindspeed/megatron_adaptor.py", "megatron/training": "megatron/training/__init__.py"}


def _root_of(path: Path, package: str) -> Optional[Path]:
    """The folder under ``path`` (itself or one level down, as archives wrap it) holding ``package``."""
    for candidate in (path, *sorted(p for p in path.iterdir() if p.is_dir())):
        if (candidate / MARKERS[package]).is_file():
            return candidate
    return None


def folder_of(given: str, package: str, what: str) -> Path:
    """A folder holding ``package`` (``mindspeed`` or ``megatron/training``) from a folder or an archive."""
    path = Path(given).expanduser()
    if path.is_file():
        try:
            path = extract(path)
        except (OSError, tarfile.TarError) as exc:
            raise SourceError(tr("{what} {path} is not a readable .tar.gz archive: {reason}", what=what,
                                 path=given, reason=exc)) from exc
    if not path.is_dir():
        raise SourceError(tr("{what} {path} does not exist", what=what, path=given))
    root = _root_of(path, package)
    if root is None:
        raise SourceError(tr("{what} {path} holds no {marker}", what=what, path=given, marker=MARKERS[package]))
    return root


def installed(package: str) -> Optional[Path]:
    """The folder holding an installed ``package`` (``mindspeed``, ``megatron.training``), without importing it."""
    try:
        spec = importlib.util.find_spec(package.split(".")[0])
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        root = Path(location).parent
        if (root / MARKERS[package.replace(".", "/")]).is_file():
            return root
    return None


def line_of(name: str, asked: Optional[str]) -> tuple[str, str]:
    """The megatron-core release for a MindSpeed release name, and how it was decided."""
    if asked:
        major_minor = ".".join(asked.split(".")[:2])
        if major_minor not in LINES:
            raise SourceError(tr("--megatron-core {value}: choose one of {choices}", value=asked,
                                 choices=", ".join(LINES.values())))
        return LINES[major_minor], "option"
    found = _LINE_IN_NAME.search(name)
    if found:  # a line with no environment here (0.17, 0.18) is returned as named: such sources cannot run
        return LINES.get(found.group(1), found.group(1)), "name"
    return DEFAULT_LINE, "default"


_ADAPTOR_IMPORT = re.compile(r"^\s*(?:import|from)\s+megatron_adaptor\b", re.M)


def unrunnable(mindspeed: Path, release: str, line: str) -> tuple:
    """Why MindSpeed at ``mindspeed`` cannot run in an environment built here (empty when it can), read from
    the sources themselves: the three-layer branches (core_r0.17.0, core_r0.18.0) import MegatronAdaptor's
    ``megatron_adaptor`` first thing, a package published on no package index, and run on megatron-core lines
    for which no environment is built here."""
    reasons = []
    init = mindspeed / "mindspeed" / "__init__.py"
    if init.is_file() and _ADAPTOR_IMPORT.search(init.read_text(errors="replace")):
        reasons.append(tr("MindSpeed {release} imports megatron_adaptor first thing (mindspeed/__init__.py), the "
                          "package of MegatronAdaptor, which no package index publishes", release=release))
    if line not in LINES.values():
        reasons.append(tr("it runs on megatron-core {line}, and the environments built here are megatron-core "
                          "{lines}", line=line, lines=", ".join(LINES.values())))
    return tuple(reasons)


def _digest(path: Path) -> str:
    h = hashlib.sha256(str(path).encode())
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                st = os.stat(os.path.join(root, name))
                h.update(f"{os.path.relpath(os.path.join(root, name), path)}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def _megatron_beside(given: Optional[str], line: str) -> Optional[str]:
    """Megatron-LM's training sources of ``line`` next to a MindSpeed archive or folder, named as upstream names
    them (``megatron-lm-training-core_v0.12.1[.tar.gz]``)."""
    if not given:
        return None
    parent = Path(given).expanduser().resolve().parent
    for name in (f"megatron-lm-training-core_v{line}", f"megatron-lm-training-core_v{line}.tar.gz"):
        if (parent / name).exists():
            return str(parent / name)
    return None


def locate(mindspeed_src: Optional[str] = None, megatron_src: Optional[str] = None,
           megatron_core: Optional[str] = None) -> Sources:
    """The sources of one upstream run: ``mindspeed_src`` (default: the installed ``mindspeed``) and
    ``megatron_src`` (default: Megatron-LM's training sources beside ``mindspeed_src``, else the installed
    ``megatron.training``). Raises :class:`SourceError` with what to give instead."""
    if mindspeed_src:
        mindspeed = folder_of(mindspeed_src, "mindspeed", "--mindspeed-src")
        name = _strip(Path(mindspeed_src).name)
        release = name[len("mindspeed-"):] if name.startswith("mindspeed-") else name
    else:
        found = installed("mindspeed")
        if found is None:
            raise SourceError(tr("no MindSpeed is installed here: give --mindspeed-src with a MindSpeed source "
                                 "folder or release archive"))
        mindspeed, release = found, _installed_version() or found.name
    line, line_from = line_of(release, megatron_core)
    blocked = unrunnable(mindspeed, release, line)
    if blocked:  # what cannot run needs no Megatron-LM sources: the report says why it did not run
        return Sources(mindspeed, None, release, line, line_from, _digest(mindspeed / "mindspeed"), blocked)
    given = megatron_src or _megatron_beside(mindspeed_src, line)
    if given:
        megatron = folder_of(given, "megatron/training", "--megatron-src")
    else:
        found = installed("megatron.training")
        if found is None:
            raise SourceError(tr("Megatron-LM's megatron/training is not installed here: give --megatron-src with a "
                                 "Megatron-LM source folder or archive of megatron-core {line}", line=line))
        megatron = found
    digest = hashlib.sha256(f"{_digest(mindspeed / 'mindspeed')}{_digest(megatron / 'megatron')}".encode())
    return Sources(mindspeed, megatron, release, line, line_from, digest.hexdigest()[:16])


def _installed_version() -> Optional[str]:
    from importlib import metadata

    try:
        return metadata.version("mindspeed")
    except metadata.PackageNotFoundError:
        return None
