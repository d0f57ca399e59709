"""Median wall time of `verl-mindspeed check` against verl's own `main_ppo --cfg job`, same argv, side by side.

    python benchmarks/check_vs_verl_cfg.py [--runs 7] [--args-file PATH]

Both commands compose the same config; verl's also imports its trainer (torch, ray...).
The runs are interleaved (check, verl, check, verl...) so machine load hits both alike.
Prints every run, the medians and the ratio. Needs verl installed in this Python.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ARGS = ROOT / "examples" / "qwen3_30b_a3b_moe_grpo.args"  # --args-file for another launch line


def read_args(path: Path) -> list[str]:
    return [ln.strip() for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        sys.exit(f"command failed ({proc.returncode}): {' '.join(cmd[:4])}...\n{proc.stderr[-2000:]}")
    return elapsed


def interleaved(first: list[str], second: list[str], runs: int, names: tuple[str, str]) -> tuple[float, float]:
    """Medians of ``runs`` timings of each command, run in turn (first, second, first...) after one warm-up each,
    printing every run."""
    timed(first), timed(second)  # warm the file cache once for both
    a, b = [], []
    for i in range(runs):
        a.append(timed(first))
        b.append(timed(second))
        print(f"run {i + 1}: {names[0]} {a[-1]:.3f} s   {names[1]} {b[-1]:.3f} s", flush=True)
    return statistics.median(a), statistics.median(b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--args-file", type=Path, default=DEFAULT_ARGS)
    ns = parser.parse_args()
    argv = read_args(ns.args_file)
    ours = [sys.executable, "-m", "verl_mindspeed", "check", *argv]
    verl = [sys.executable, "-m", "verl.trainer.main_ppo", *argv, "--cfg", "job"]
    ma, mb = interleaved(ours, verl, ns.runs, ("check", "verl --cfg job"))
    print(f"\nargv: {ns.args_file.name} ({len(argv)} arguments), {ns.runs} runs each, interleaved")
    print(f"median  verl-mindspeed check     {ma:.3f} s")
    print(f"median  verl main_ppo --cfg job  {mb:.3f} s")
    print(f"ratio   check / verl             {ma / mb:.2f}x")


if __name__ == "__main__":
    main()
