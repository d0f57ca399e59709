"""How long ``plan_layouts`` takes for DeepSeek-V3 on 1,024 devices with every option enumerated.

    python benchmarks/plan_speed.py [--runs 7]

Each run is a fresh process (cold caches, as a user's ``verl-mindspeed plan`` is), timing
only the planning call; prints every run, the medians of wall and CPU seconds, and the
number of layouts. Target: under 2 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import json, sys, time
sys.path.insert(0, {src!r})
from verl_mindspeed.model import load_model_spec
from verl_mindspeed.model.layouts import plan_layouts
spec, _ = load_model_spec({model!r})
wall, cpu = time.perf_counter(), time.process_time()
plans = plan_layouts(spec, 128, 8)
print(json.dumps({{"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "layouts": len(plans),
                  "fitting": sum(p.fits for p in plans)}}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    code = CHILD.format(src=str(ROOT / "src"), model=str(ROOT / "tests" / "fixtures" / "models" / "DeepSeek-V3"))
    results = []
    for i in range(args.runs):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        results.append(json.loads(out))
        print(f"run {i + 1}: {results[-1]['wall']:.2f} s wall, {results[-1]['cpu']:.2f} s CPU, "
              f"{results[-1]['layouts']} layouts, {results[-1]['fitting']} fit")
    wall = statistics.median(r["wall"] for r in results)
    cpu = statistics.median(r["cpu"] for r in results)
    print(f"median: {wall:.2f} s wall, {cpu:.2f} s CPU (target: under 2 s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
