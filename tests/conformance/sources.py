"""Where the conformance layer finds upstream code, and the switches that make its absence a skip or a failure.

``VERL_MINDSPEED_UPSTREAM`` names a folder holding, per source, either the archive
``<name>.tar.gz`` (as in the project's shared ``upstream/`` folder) or an already extracted folder
``<name>/`` (as ``tools/fetch_upstream.py`` makes from the public repositories). Unset, the folder
``../shared/upstream`` beside the repository is used when it exists. Archives are extracted once into
``$VERL_MINDSPEED_CACHE/upstream/<name>-<sha>`` (default cache ``~/.cache/verl-mindspeed``), by the
project's own ``verl_mindspeed.upstream.extract``.

``VERL_MINDSPEED_CORPUS`` names the folder of real launch lines (``*.args``); unset, ``corpus/real-scripts``
next to the upstream folder. ``VERL_MINDSPEED_REQUIRE_CONFORMANCE=1`` turns every skip of this layer into a
failure (CI).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[2]

#: MindSpeed release branch -> megatron-core line it pairs with.
RELEASES = {
    "2.1.0_core_r0.12.1": "0.12.1",
    "2.2.0_core_r0.12.1": "0.12.1",
    "2.3.0_core_r0.12.1": "0.12.1",
    "26.0.0_core_r0.12.1": "0.12.1",
    "26.1.0_core_r0.12.1": "0.12.1",
    "core_r0.16.0": "0.16.1",
    # master (commit 028de58) imports megatron-core 0.12.1 names that 0.16.1 no longer has
    # (moe/legacy_a2a_token_dispatcher, experts.expert_dist_ckpt_decorator): it is still on the 0.12.1 line.
    "master": "0.12.1",
}
#: megatron-core line -> Megatron-LM tag whose ``megatron/training`` and ``megatron/legacy`` MindSpeed imports.
MEGATRON_TAGS = {"0.12.1": "core_v0.12.1", "0.16.1": "core_v0.16.1"}
#: Upstream commits of each source (the same as the shared archives; tools/fetch_upstream.py clones these).
COMMITS = {
    "mindspeed-2.1.0_core_r0.12.1": ("Ascend/MindSpeed", "2.1.0_core_r0.12.1",
                                     "5a9ee296b4d80991c53f9ee16738788550e5cc08"),
    "mindspeed-2.2.0_core_r0.12.1": ("Ascend/MindSpeed", "2.2.0_core_r0.12.1",
                                     "a654440c14159a68c8a7f1e1665a89bdec8e74f0"),
    "mindspeed-2.3.0_core_r0.12.1": ("Ascend/MindSpeed", "2.3.0_core_r0.12.1",
                                     "674226a15a8214cc0c78f986b0b89fbe6b879ba1"),
    "mindspeed-26.0.0_core_r0.12.1": ("Ascend/MindSpeed", "26.0.0_core_r0.12.1",
                                      "3c44c134f396fc14a22a38934c7d5d8bedb37ff5"),
    "mindspeed-26.1.0_core_r0.12.1": ("Ascend/MindSpeed", "26.1.0_core_r0.12.1",
                                      "57a33053c4eccd5b14aa58e3ca595ab414e65b94"),
    "mindspeed-core_r0.16.0": ("Ascend/MindSpeed", "core_r0.16.0", "e4772499f7eb9fa9a68919dd1eaddef00e915b2d"),
    "mindspeed-master": ("Ascend/MindSpeed", "master", "028de58ca629d035185b00ff7d1eb7eff4f7fd48"),
    "megatron-lm-training-core_v0.12.1": ("NVIDIA/Megatron-LM", "core_v0.12.1",
                                          "a845aa7e12b3a117e24c2352b9e3e60bad2e3a17"),
    "megatron-lm-training-core_v0.16.1": ("NVIDIA/Megatron-LM", "core_v0.16.1",
                                          "55ac7082517c3878ae653c07c09c534b8aed49f6"),
    "megatron-bridge-v0.5.1": ("NVIDIA-NeMo/Megatron-Bridge", "v0.5.1", "5cb3444c43f7499cf3872b2d46870cf8bc2e00ce"),
}
#: Megatron-Bridge's sources (``megatron/bridge``): the oracle reads what its model bridges fix on the provider.
BRIDGE = "megatron-bridge-v0.5.1"


def required() -> bool:
    return os.environ.get("VERL_MINDSPEED_REQUIRE_CONFORMANCE") == "1"


def upstream_dir() -> Optional[Path]:
    env = os.environ.get("VERL_MINDSPEED_UPSTREAM")
    if env:
        return Path(env)
    beside = ROOT.parent / "shared" / "upstream"
    return beside if beside.is_dir() else None


def corpus_dir() -> Optional[Path]:
    env = os.environ.get("VERL_MINDSPEED_CORPUS")
    if env:
        return Path(env)
    up = upstream_dir()
    corpus = up.parent / "corpus" / "real-scripts" if up is not None else None
    return corpus if corpus is not None and corpus.is_dir() else None


def seed_file() -> Optional[Path]:
    """The feature guide the catalogue mirrors (``VERL_MINDSPEED_SEED``, or ``seed/`` beside the upstream folder)."""
    env = os.environ.get("VERL_MINDSPEED_SEED")
    if env:
        return Path(env)
    up = upstream_dir()
    seed = up.parent / "seed" / "mindspeed-feature-guide.zh.md" if up is not None else None
    return seed if seed is not None and seed.is_file() else None


def cache_root() -> Path:
    from verl_mindspeed.upstream import cache_root as root

    return root()


def mindspeed_name(release: str) -> str:
    return f"mindspeed-{release}"


def megatron_name(release: str) -> str:
    return f"megatron-lm-training-{MEGATRON_TAGS[RELEASES[release]]}"


def missing() -> list[str]:
    """Sources named by :data:`COMMITS` that the upstream folder lacks (everything when there is none)."""
    up = upstream_dir()
    if up is None or not up.is_dir():
        return sorted(COMMITS)
    return sorted(n for n in COMMITS if not (up / n).is_dir() and not (up / f"{n}.tar.gz").is_file())


def source(name: str) -> Path:
    """The folder holding ``mindspeed/`` or ``megatron/`` for source ``name``, extracting its archive once."""
    from verl_mindspeed.upstream import extract

    up = upstream_dir()
    if up is None:
        raise FileNotFoundError("no upstream folder: set VERL_MINDSPEED_UPSTREAM")
    folder = up / name
    if folder.is_dir():
        return folder
    archive = up / f"{name}.tar.gz"
    if not archive.is_file():
        raise FileNotFoundError(f"{archive} (nor {folder}/) exists")
    return extract(archive)


def release_sources(release: str) -> tuple[Path, Path]:
    """(folder holding ``mindspeed/``, folder holding ``megatron/training``) for a MindSpeed release."""
    return source(mindspeed_name(release)), source(megatron_name(release))
