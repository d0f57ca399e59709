"""Create (or reuse) the virtual environments the conformance oracle runs MindSpeed in.

    python tools/oracle_env.py            # both lines, print their python paths
    python tools/oracle_env.py 0.16.1     # one line

One venv per megatron-core line, under ``.venv-oracle/mcore-<version>`` (gitignored; override the
folder with ``VERL_MINDSPEED_ORACLE_VENVS``). They hold only torch (the CPU wheel, pinned), megatron-core
and psutil: never transformers, whose lazy module makes MindSpeed's patch scan import torchvision and crash.
A venv is reused when its marker file names the same requirements; otherwise the requirements are installed
into it (pip leaves what is already satisfied).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: megatron-core line -> the MindSpeed branches that pair with it (see the upstream README).
LINES = {"0.12.1": "*_core_r0.12.1 branches and master", "0.16.1": "core_r0.16.0"}
#: torch pinned to the CPU wheel: an unpinned torch is a multi-GB CUDA build.
BASE_REQUIREMENTS = ("torch==2.13.0", "psutil", "einops")
#: What Megatron-LM's ``megatron/training`` imports beyond megatron-core's own dependencies, per line.
TRAINING_REQUIREMENTS = {"0.12.1": (), "0.16.1": ("six", "regex", "pyyaml", "scipy")}


def venvs_dir() -> Path:
    return Path(os.environ.get("VERL_MINDSPEED_ORACLE_VENVS", ROOT / ".venv-oracle"))


def requirements(line: str) -> list[str]:
    return [*BASE_REQUIREMENTS, f"megatron-core=={line}", *TRAINING_REQUIREMENTS[line]]


def python_of(line: str) -> Path:
    return venvs_dir() / f"mcore-{line}" / "bin" / "python"


def ready(line: str) -> bool:
    marker = venvs_dir() / f"mcore-{line}" / "oracle-requirements.txt"
    return python_of(line).exists() and marker.exists() and marker.read_text() == "\n".join(requirements(line))


def ensure(line: str, python: str = sys.executable) -> Path:
    """The venv's python for ``line``, created if missing or stale."""
    if line not in LINES:
        raise ValueError(f"unknown megatron-core line {line!r}; known: {', '.join(LINES)}")
    if ready(line):
        return python_of(line)
    path = venvs_dir() / f"mcore-{line}"
    start = time.monotonic()
    if not python_of(line).exists():
        subprocess.run([python, "-m", "venv", "--clear", str(path)], check=True)
    pip = [str(python_of(line)), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, *requirements(line)], check=True)
    (path / "oracle-requirements.txt").write_text("\n".join(requirements(line)))
    print(f"prepared {path} in {time.monotonic() - start:.0f} s", file=sys.stderr)
    return python_of(line)


def main(argv: list[str]) -> int:
    for line in argv or list(LINES):
        print(f"{line} {ensure(line)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
