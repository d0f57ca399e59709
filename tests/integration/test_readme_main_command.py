"""The README's first command, the main job of a newcomer, run as written in a copy of the repository: a fresh
venv, the project installed from source, verl's config tree from PyPI, and the pre-flight check of a real launch.

It needs PyPI (or the machine's package index); offline it skips, under CI (``VERL_MINDSPEED_FULL_STACK=1``)
it fails. The README's other blocks run in ``tests/core/test_readme.py``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import full_stack

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```bash\n(.*?)^```", re.S | re.M)
IGNORED = shutil.ignore_patterns(".venv*", ".git", "__pycache__", "*.egg-info", "build", "dist", ".pytest_cache")


def main_command(readme: Path) -> str:
    """The first bash block of the README: it must set up and run ``verl-mindspeed check``."""
    block = FENCE.search(readme.read_text(encoding="utf-8")).group(1).strip()
    assert "venv" in block and "verl-mindspeed check" in block, block
    return block


@pytest.mark.parametrize("readme", ["README.md", "README.zh.md"])
def test_readmes_give_the_same_main_command(readme):
    assert main_command(ROOT / readme) == main_command(ROOT / "README.md")


def test_the_readme_main_command_runs_from_a_copy_of_the_repository(tmp_path):
    repo = tmp_path / "verl-mindspeed"
    shutil.copytree(ROOT, repo, ignore=IGNORED)
    proc = subprocess.run(["bash", "-c", main_command(ROOT / "README.md")], cwd=repo, capture_output=True, text=True,
                          timeout=900)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0 and not full_stack() and re.search(r"No matching distribution|Could not find a version|"
                                                               r"Failed to establish|Network is unreachable", output):
        pytest.skip(f"no package index here: {output[-300:]}")
    assert proc.returncode == 0, output[-3000:]
    assert "Traceback" not in output
    assert re.search(r"^OK: 0 errors, \d+ warnings?; roles checked: actor, ref", proc.stdout, re.M), output
    # the check read the installed verl's tree, not this source checkout's
    assert (repo / ".venv" / "bin" / "verl-mindspeed").exists()
