"""Fixtures for the proof on real verl: the YAML trees of several verl releases.

The installed verl (0.9.1) gives its own tree; the trees of verl 0.6.1, 0.7.1 and 0.8.0 come from
their wheels on PyPI (``tools/fetch_verl_trees.py``, which ``.ci/run`` runs beforehand; a
cached tree is reused). Offline on a laptop they skip; under CI
(``VERL_MINDSPEED_FULL_STACK=1``) a tree that cannot be had is a failure.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from helpers import full_stack, require  # noqa: F401  (re-exported for the fixtures below)

ROOT = Path(__file__).resolve().parents[2]
OLD_VERSIONS = ("0.6.1", "0.7.1", "0.8.0", "0.9.0")
INSTALLED = "0.9.1"


def _tool(name: str):
    """``tools/<name>.py`` as a module (the tools are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _unavailable(message: str):
    if full_stack():
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def installed_verl_tree() -> Path:
    """``verl/trainer/config`` of the installed verl (never imported here)."""
    from verl_mindspeed.compose import find_verl_tree
    from verl_mindspeed.errors import EvaluationError

    try:
        return find_verl_tree().config_dir
    except EvaluationError as exc:
        _unavailable(f"installed verl tree: {exc}")


@pytest.fixture(scope="session")
def old_verl_trees() -> dict[str, Path]:
    """``{version: verl/trainer/config}`` for verl 0.6.1, 0.7.1 and 0.8.0, fetched once into the cache."""
    fetcher = _tool("fetch_verl_trees")
    trees = {}
    for version in OLD_VERSIONS:
        try:
            trees[version] = fetcher.fetch(version)
        except Exception as exc:  # noqa: BLE001 - offline, PyPI down, pip missing
            _unavailable(f"verl {version}'s config tree: {exc}")
    return trees


@pytest.fixture(scope="session")
def verl_trees(installed_verl_tree, old_verl_trees) -> dict[str, Path]:
    """Every tree under test, oldest first; the installed one under its version."""
    return {**old_verl_trees, INSTALLED: installed_verl_tree}


@pytest.fixture(params=[*OLD_VERSIONS, INSTALLED])
def verl_tree(request, verl_trees) -> tuple[str, Path]:
    """One ``(version, config_dir)`` per verl release under test."""
    return request.param, verl_trees[request.param]


class VerlSource:
    """The Python source of one verl release: the installed package's files, or those of the release's wheel (the
    fetched trees keep configuration only)."""

    def __init__(self, version: str, tree: Path):
        self.version, self._files = version, None
        if version == INSTALLED:
            package = tree.parents[1]  # verl/trainer/config -> verl
            self._read = lambda name: (package.parent / name).read_text(encoding="utf-8")
            self._names = lambda: [p.relative_to(package.parent).as_posix() for p in package.rglob("*.py")]
            return
        import zipfile

        try:
            archive = zipfile.ZipFile(_tool("build_verl_choices").wheel(version))
        except Exception as exc:  # noqa: BLE001 - offline, PyPI down
            _unavailable(f"verl {version}'s wheel: {exc}")
        self._read = lambda name: archive.read(name).decode("utf-8")
        self._names = lambda: [n for n in archive.namelist() if n.endswith(".py")]

    def read(self, name: str) -> str:
        """``name`` relative to the package's parent (``verl/...``)."""
        return self._read(name)

    def everything(self) -> str:
        """Every Python file of the package, joined."""
        if self._files is None:
            self._files = "\n".join(self._read(n) for n in self._names())
        return self._files


_SOURCES: dict[str, VerlSource] = {}


@pytest.fixture
def verl_source(verl_tree) -> VerlSource:
    """The source of ``verl_tree``'s release (read once a session)."""
    version, tree = verl_tree
    if version not in _SOURCES:
        _SOURCES[version] = VerlSource(version, tree)
    return _SOURCES[version]
