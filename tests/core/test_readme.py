"""Every ```python and ```bash block of README.md and README.zh.md runs as written.

Skipped, and listed in the test's output (the README's first command, which installs, runs in
``tests/integration/test_readme_main_command.py``): a block right under an HTML comment such as
``<!-- needs: npu -->`` or ``<!-- needs: cluster -->``; a block that installs (``pip install``,
``bash tools/test.sh``); a block with elided arguments (a bare ``...``).

A bash block runs in a subprocess from the repository root with ``verl-mindspeed`` on PATH (this
source tree). Each ``verl-mindspeed`` call must exit 0, or 1 when its own line shows an error mark (``✗``) in
its comment; no block may print a traceback. ``VERL_MINDSPEED_README`` tests another file.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import ROOT

READMES = [Path(os.environ["VERL_MINDSPEED_README"])] if "VERL_MINDSPEED_README" in os.environ else [
    ROOT / "README.md", ROOT / "README.zh.md"]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
NEEDS = re.compile(r"<!--\s*needs:\s*([^>]*?)\s*-->\s*$")
INSTALLS = re.compile(r"\bpip install\b|\btools/test\.sh\b")
ELIDED = re.compile(r"(?<![\w.])\.\.\.(?![\w.])")
SRC = Path(__file__).resolve().parents[2] / "src"


@dataclass
class Block:
    lang: str
    line: int
    code: str
    skip: str = ""
    file: str = "README.md"
    shown: str = ""
    """The output the README prints right under the block (a ``text`` fence), which the command must print."""

    @property
    def id(self) -> str:
        return f"{self.lang}@{self.file}:{self.line}"

    def failing_calls(self) -> set[str]:
        """The arguments of each ``verl-mindspeed`` call whose line is marked ``✗``: those may exit 1."""
        out, marked_next = set(), False
        for line in self.code.replace("\\\n", " ").splitlines():
            command, _, comment = line.partition("#")
            if not command.strip():  # a comment line of its own marks the command under it
                marked_next = "✗" in comment
                continue
            if ("✗" in comment or marked_next) and command.strip().startswith("verl-mindspeed"):
                out.add(" ".join(shlex.split(command)[1:]))
            marked_next = False
        return out


def blocks() -> list[Block]:
    return [b for readme in READMES for b in _blocks(readme)]


def _blocks(readme: Path) -> list[Block]:
    text = readme.read_text(encoding="utf-8")
    out = []
    fences = list(FENCE.finditer(text))
    for n, match in enumerate(fences):
        lang, code = match.group(1), match.group(2)
        if lang not in ("python", "bash"):
            continue
        before = text[: match.start()].rstrip().splitlines()
        after = fences[n + 1] if n + 1 < len(fences) else None
        shown = after.group(2) if after is not None and after.group(1) == "text" and not text[
            match.end():after.start()].strip() else ""
        block = Block(lang, text.count("\n", 0, match.start()) + 1, code, file=readme.name, shown=shown)
        needs = NEEDS.search(before[-1]) if before else None
        commands = "\n".join(ln.split("#", 1)[0] for ln in code.splitlines())
        if needs:
            block.skip = f"needs {needs.group(1)}"
        elif INSTALLS.search(code):
            block.skip = "installs"
        elif ELIDED.search(commands):
            block.skip = "elided arguments (...)"
        out.append(block)
    return out


BLOCKS = blocks()


def test_readme_has_runnable_blocks():
    skipped = [f"{b.id}: {b.skip}" for b in BLOCKS if b.skip]
    print("README blocks skipped:\n  " + "\n  ".join(skipped or ["none"]))
    for readme in READMES:
        assert any(not b.skip for b in BLOCKS if b.file == readme.name), f"{readme.name} has no block this test can run"


def test_the_chinese_readme_covers_the_english_one():
    """README.zh.md keeps in step with README.md: as many sections, the same commands and options in its examples,
    and a Python example."""
    en, zh = (ROOT / "README.md").read_text(encoding="utf-8"), (ROOT / "README.zh.md").read_text(encoding="utf-8")
    assert len(re.findall(r"^## ", en, re.M)) == len(re.findall(r"^## ", zh, re.M))

    def used(text: str) -> set[str]:
        code = "\n".join(m.group(2) for m in FENCE.finditer(text) if m.group(1) in ("bash", "python"))
        return set(re.findall(r"verl-mindspeed [a-z-]+|--[a-z][a-z-]+|\+mindspeed=\w+", code))

    assert sorted(used(en) - used(zh) - {"--lang"}) == []
    assert "```python" in zh


def _shim(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A PATH whose ``verl-mindspeed`` and ``python3`` are this source tree's, logging each exit status."""
    bin_dir, log = tmp_path / "bin", tmp_path / "codes"
    bin_dir.mkdir()
    (bin_dir / "verl-mindspeed").write_text(textwrap.dedent(f"""\
        #!/bin/sh
        {sys.executable} -m verl_mindspeed "$@"
        code=$?
        echo "$code $*" >> {log}
        exit $code
        """))
    (bin_dir / "verl-mindspeed").chmod(0o755)
    (bin_dir / "python3").symlink_to(sys.executable)
    path = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    pythonpath = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PATH": path, "PYTHONPATH": pythonpath}, log


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_block_runs(block, base_cfg, tmp_path, monkeypatch):
    if block.skip:
        pytest.skip(block.skip)
    if block.lang == "python":
        monkeypatch.chdir(ROOT)
        exec(compile(block.code, str(block.id), "exec"), {"__name__": "readme"})  # noqa: S102
        return
    env, log = _shim(tmp_path)
    proc = subprocess.run(["bash", "-c", block.code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    output = proc.stdout + proc.stderr
    assert "Traceback" not in output, output[-3000:]
    marked = block.failing_calls()
    calls = log.read_text().splitlines() if log.exists() else []
    bad = [c for c in calls if not (c.split(" ", 1)[0] == "0" or (c.split(" ", 1)[0] == "1" and
                                                                 c.split(" ", 1)[1] in marked))]
    assert not bad, f"{bad}\n{output[-3000:]}"
    printed = {line.strip() for line in proc.stdout.splitlines()}
    missing = [line for line in block.shown.splitlines() if line.strip() and line.strip() not in printed]
    assert not missing, f"the README shows lines the command does not print: {missing}"
    if not calls:
        assert proc.returncode == 0, output[-3000:]
