"""Fetch the upstream sources the conformance layer runs, from the public repositories, at pinned commits.

    python tools/fetch_upstream.py DEST        # then: export VERL_MINDSPEED_UPSTREAM=DEST

For people outside the project's own setup (where the archives sit in ``../shared/upstream``). Makes one
folder per source, named as the archives are (``mindspeed-<branch>/mindspeed``,
``megatron-lm-training-<tag>/megatron/{training,legacy}``), by ``git clone --filter=blob:none`` of the branch or
tag and ``git checkout`` of the commit listed in ``tests/conformance/sources.py``. Needs git and network.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "conformance"))
import sources  # noqa: E402

#: What each source keeps: (path in the repository, path in the source folder).
KEEP = {"Ascend/MindSpeed": (("mindspeed", "mindspeed"),),
        "NVIDIA/Megatron-LM": (("megatron/training", "megatron/training"), ("megatron/legacy", "megatron/legacy")),
        "NVIDIA-NeMo/Megatron-Bridge": (("src/megatron/bridge", "megatron/bridge"),)}


def fetch(name: str, dest: Path) -> Path:
    repo, ref, commit = sources.COMMITS[name]
    target = dest / name
    if target.is_dir():
        return target
    with tempfile.TemporaryDirectory() as tmp:
        clone = Path(tmp) / "repo"
        subprocess.run(["git", "clone", "-q", "--filter=blob:none", "--no-checkout", "-b", ref,
                        f"https://github.com/{repo}", str(clone)], check=True)
        subprocess.run(["git", "-C", str(clone), "checkout", "-q", commit], check=True)
        staging = Path(tmp) / name
        for part, kept in KEEP[repo]:
            shutil.copytree(clone / part, staging / kept)
        shutil.copy(clone / "LICENSE", staging / "LICENSE")
        dest.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging), str(target))
    return target


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    dest = Path(argv[0]).resolve()
    for name in sources.COMMITS:
        print(fetch(name, dest))
    print(f"export VERL_MINDSPEED_UPSTREAM={dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
