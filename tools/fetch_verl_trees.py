#!/usr/bin/env python3
"""Fetch the config trees of verl releases (their wheels carry them) into the cache, for the era tests.

    python tools/fetch_verl_trees.py            # the default versions, into the default cache
    python tools/fetch_verl_trees.py 0.6.1 --cache /tmp/trees

The work is done by ``verl_mindspeed.compose._trees`` (the same code ``check --verl-version`` uses):
each release is downloaded once with ``python -m pip download`` and only what a check reads is kept,
under ``<cache>/<version>/verl/...``. The cache is ``$VERL_MINDSPEED_CACHE/verl-trees`` when that
variable is set, else ``~/.cache/verl-mindspeed/verl-trees``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

try:
    from verl_mindspeed.compose import _trees
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from verl_mindspeed.compose import _trees

#: The releases of the first era (``repatch(actor dict)`` from ``megatron_workers.py``) the tests cover.
DEFAULT_VERSIONS = ("0.6.1", "0.7.1", "0.8.0", "0.9.0")
#: Every release from 0.4.1 on: the key history (tools/build_key_history.py) is built from them.
ALL_VERSIONS = ("0.4.1", "0.5.0", "0.6.0", "0.6.1", "0.7.0", "0.7.1", "0.8.0", "0.9.0", "0.9.1")


def cache_root() -> Path:
    return _trees.cache_root()


def config_dir(version: str, root: Path | None = None) -> Path:
    """Where the ``verl/trainer/config`` of ``version`` lives (whether or not it was fetched yet)."""
    return _trees.tree_dir(version, root) / "verl" / "trainer" / "config"


def fetch(version: str, root: Path | None = None, python: str = sys.executable) -> Path:
    """Return the ``verl/trainer/config`` directory of ``version``, downloading its wheel once."""
    return _trees.fetch_tree(version, root, python) / "verl" / "trainer" / "config"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="*", default=list(DEFAULT_VERSIONS),
                        help="releases to fetch, or 'all' for every release of the key history")
    parser.add_argument("--cache", type=Path, help="cache root (default: %(default)s)", default=None)
    args = parser.parse_args(argv)
    versions = ALL_VERSIONS if args.versions == ["all"] else args.versions
    for version in versions:
        print(f"verl {version}: {fetch(version, args.cache)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
