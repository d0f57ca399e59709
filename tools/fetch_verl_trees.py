#!/usr/bin/env python3
"""Fetch the YAML config trees of older verl releases (their wheels carry them) for the era tests.

    python tools/fetch_verl_trees.py            # the default versions, into the default cache
    python tools/fetch_verl_trees.py 0.6.1 --cache /tmp/trees

Only ``verl/trainer/config/**`` and ``verl/version/version`` are kept, under
``<cache>/<version>/verl/...``; a tree already present is reused. The cache is
``$VERL_MINDSPEED_CACHE/verl-trees`` when that variable is set, else
``~/.cache/verl-mindspeed/verl-trees``. Uses ``python -m pip download`` (PyPI) only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

#: The releases of the first era (``repatch(actor dict)`` from ``megatron_workers.py``) the tests cover.
DEFAULT_VERSIONS = ("0.6.1", "0.7.1", "0.8.0", "0.9.0")
KEEP = ("verl/trainer/config/", "verl/version/version")


def cache_root() -> Path:
    base = os.environ.get("VERL_MINDSPEED_CACHE")
    root = Path(base) if base else Path.home() / ".cache" / "verl-mindspeed"
    return root / "verl-trees"


def config_dir(version: str, root: Path | None = None) -> Path:
    """Where the tree of ``version`` lives (whether or not it was fetched yet)."""
    return (root or cache_root()) / version / "verl" / "trainer" / "config"


def fetch(version: str, root: Path | None = None, python: str = sys.executable) -> Path:
    """Return the ``verl/trainer/config`` directory of ``version``, downloading its wheel once."""
    root = root or cache_root()
    target = config_dir(version, root)
    if (target / "ppo_megatron_trainer.yaml").is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=f".{version}-") as tmp:
        download = Path(tmp) / "wheel"
        cmd = [python, "-m", "pip", "download", f"verl=={version}", "--no-deps", "--only-binary", ":all:",
               "--disable-pip-version-check", "--quiet", "-d", str(download)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        wheels = sorted(download.glob("verl-*.whl"))
        if proc.returncode != 0 or not wheels:
            raise RuntimeError(f"pip download verl=={version} failed: {(proc.stderr or proc.stdout).strip()[-800:]}")
        staging = Path(tmp) / "tree"
        with zipfile.ZipFile(wheels[0]) as wheel:
            members = [m for m in wheel.namelist() if m.startswith(KEEP) and not m.endswith("/")]
            wheel.extractall(staging, members)
        if not (staging / "verl" / "trainer" / "config" / "ppo_megatron_trainer.yaml").is_file():
            raise RuntimeError(f"verl {version}'s wheel has no verl/trainer/config/ppo_megatron_trainer.yaml")
        final = root / version
        if final.exists():  # a partial tree from an interrupted run
            shutil.rmtree(final)
        staging.rename(final)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="*", default=list(DEFAULT_VERSIONS))
    parser.add_argument("--cache", type=Path, help="cache root (default: %(default)s)", default=None)
    args = parser.parse_args(argv)
    for version in args.versions:
        print(f"verl {version}: {fetch(version, args.cache)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
