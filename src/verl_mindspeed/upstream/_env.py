"""The Python an upstream run uses: the user's own where it fits, else one environment per megatron-core line.

The environment is a virtual environment in the user's cache folder (``$VERL_MINDSPEED_CACHE/upstream-env/
mcore-<line>``, or ``VERL_MINDSPEED_UPSTREAM_ENVS``), built once and reused while its marker names the same
requirements: torch's CPU wheel (pinned), megatron-core of the line, psutil, einops and what Megatron-LM's
``megatron/training`` imports. Never transformers: its lazy modules make MindSpeed's patch scan import
torchvision. The user's own environment is never changed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Optional

from ..i18n import tr
from ._sources import LINES, SourceError, cache_root

#: torch pinned to the CPU wheel: an unpinned torch is a multi-GB CUDA build.
TORCH = "torch==2.13.0"
BASE_REQUIREMENTS = (TORCH, "psutil", "einops")
#: What Megatron-LM's ``megatron/training`` imports beyond megatron-core's own dependencies, per line.
TRAINING_REQUIREMENTS = {"0.12.1": (), "0.16.1": ("six", "regex", "pyyaml", "scipy")}


def envs_dir() -> Path:
    env = os.environ.get("VERL_MINDSPEED_UPSTREAM_ENVS")
    return Path(env) if env else cache_root() / "upstream-env"


def requirements(line: str) -> list[str]:
    return [*BASE_REQUIREMENTS, f"megatron-core=={line}", *TRAINING_REQUIREMENTS[line]]


def python_of(line: str) -> Path:
    return envs_dir() / f"mcore-{line}" / "bin" / "python"


def ready(line: str) -> bool:
    marker = envs_dir() / f"mcore-{line}" / "upstream-requirements.txt"
    return python_of(line).exists() and marker.exists() and marker.read_text() == "\n".join(requirements(line))


def ensure(line: str, progress: Callable[[Any], None] = lambda text: None) -> Path:
    """The environment's python for ``line``, built (with a progress line) if missing or stale."""
    if line not in LINES.values():
        raise SourceError(tr("no upstream environment for megatron-core {line}; known: {choices}", line=line,
                             choices=", ".join(LINES.values())))
    if ready(line):
        return python_of(line)
    path = envs_dir() / f"mcore-{line}"
    progress(tr("building the upstream environment for megatron-core {line} in {path} (once, a few minutes)",
                    line=line, path=path))
    start = time.monotonic()
    if not python_of(line).exists():
        _run([sys.executable, "-m", "venv", "--clear", str(path)])
    pip = [str(python_of(line)), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    # torch's CPU build asked for by name first (a plain torch==2.13.0 can be the multi-GB CUDA build); an index
    # without it: PyTorch's CPU index.
    if subprocess.run([*pip, f"{TORCH}+cpu"], capture_output=True).returncode != 0:
        _run([*pip, TORCH, "--index-url", "https://download.pytorch.org/whl/cpu"])
    _run([*pip, *requirements(line)])
    (path / "upstream-requirements.txt").write_text("\n".join(requirements(line)))
    progress(tr("upstream environment ready in {seconds} s", seconds=round(time.monotonic() - start)))
    return python_of(line)


def _run(args: list[str]) -> None:
    """A setup step with its output kept out of the terminal (the progress lines say what happens); on failure, the
    step and the end of what it printed."""
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise SourceError(tr("setting up the upstream environment failed: {step}\n{output}", step=" ".join(args),
                             output=(done.stdout + done.stderr)[-3000:]))


def own_python_fits(line: str) -> bool:
    """Whether this interpreter can run the release itself: megatron-core of ``line`` and torch installed, and
    no transformers without torchvision (MindSpeed's patch scan would import it and fail)."""

    def version(name: str) -> Optional[str]:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    if version("megatron-core") != line or version("torch") is None:
        return False
    return version("transformers") is None or version("torchvision") is not None


def python_for(line: str, explicit: Optional[str] = None,
               progress: Callable[[Any], None] = lambda text: None) -> tuple[Path, str]:
    """(python, where from) for a run on ``line``: ``explicit``, this interpreter if it fits, the cached
    environment, else a newly built one."""
    if explicit:
        path = Path(explicit).expanduser()
        if not path.exists():
            raise SourceError(tr("--upstream-python {path} does not exist", path=explicit))
        return path, "option"
    if own_python_fits(line):
        return Path(sys.executable), "installed"
    return ensure(line, progress), "environment"
