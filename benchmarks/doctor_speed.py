"""Median wall time of `verl-mindspeed doctor` on failed runs' logs against `check` on a launch: "about as fast".

    python benchmarks/doctor_speed.py [--runs 7] [--log PATH ...]

Each log (by default three from the corpus of real failures: a Megatron-Bridge raise placed by its message, a
Hydra refusal whose fix `check` gives, a verl worker's traceback through Ray) is diagnosed in a fresh process, in
turn with `check` on the Qwen3-8B example launch, so machine load hits both alike. Prints every run, the medians
and each ratio (target: at most 1.5x `check`). Both start the same Python and import the same Hydra and verl
config code; the doctor's own cost on top is the raise-site index and, where a log names a key Hydra refused, the
`check` it runs on that argument.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from check_vs_verl_cfg import interleaved

ROOT = Path(__file__).resolve().parents[1]
FAILURES = ROOT / "tests" / "fixtures" / "failures"
DEFAULT_LOGS = [FAILURES / "megatron_bridge_pr5884_qwen35vl_397b_layers_not_divisible_by_pp" / "log.txt",
                FAILURES / "verl_4672_enable_activation_offloading_not_in_hfmodelconfig" / "log.txt",
                FAILURES / "verl_1004_megatron_batch_dispatch_divisibility" / "log.txt"]
LAUNCH = ROOT / "examples" / "qwen3_8b_dense_grpo.args"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--log", type=Path, action="append")
    ns = parser.parse_args()
    check = [sys.executable, "-m", "verl_mindspeed", "check", "--args-file", str(LAUNCH)]
    rows = []
    for log in ns.log or DEFAULT_LOGS:
        doctor = [sys.executable, "-m", "verl_mindspeed", "doctor", str(log)]
        print(f"\n{log.parent.name}")
        md, mc = interleaved(doctor, check, ns.runs, ("doctor", "check"))
        rows.append((log.parent.name, md, mc))
    print(f"\n{ns.runs} runs each, interleaved; check on {LAUNCH.name}")
    for name, md, mc in rows:
        print(f"{name[:60]:60}  doctor {md:.3f} s  check {mc:.3f} s  {md / mc:.2f}x")


if __name__ == "__main__":
    main()
