"""Compare verl-mindspeed's memory estimate with published measured peaks and with mbridge's estimator.

    python benchmarks/calibrate_memory.py                 # recorded mbridge figures
    python benchmarks/calibrate_memory.py --mbridge-python /path/venv/bin/python --mbridge-dir /path/mbridge/memory_estimator
    python benchmarks/calibrate_memory.py --fit-slack     # refit the dynamic allocator slack on the fit points

Data: ``benchmarks/data/measured_peaks.json`` (each point cites its source and setting; optional
``first_stage_layers`` / ``last_stage_layers`` give megatron's uneven pipeline split; a point without
``mbridge_gib`` shows ``-`` and stays out of mbridge's median; ``cross_entropy_loss_fusion`` marks megatron's
fused cross entropy).
For a point measured as ``allocated`` (torch ``max_memory_allocated``) the comparison uses
our tensor total; for ``device`` it uses the whole peak, non-tensor terms included.
mbridge's estimator counts tensors only. Prints one row per point, the ratios and their medians.
"""  # noqa: E501  (a docstring: re-wrapping would change its value)

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from verl_mindspeed.model import Layout, load_model_spec  # noqa: E402
from verl_mindspeed.model.memory import GIB, MemoryOptions, estimate_memory  # noqa: E402
from verl_mindspeed.model.overhead import DEVICES  # noqa: E402
from verl_mindspeed.model.recompute import NO_RECOMPUTE, Recompute  # noqa: E402

DATA = ROOT / "benchmarks" / "data" / "measured_peaks.json"
FIT_POINTS = ("ms-swift-qwen2.5-7b-32k-tp4", "ms-swift-qwen3-30b-a3b-pp2-ep8", "ms-swift-qwen3-32b-tp8")
"""The device-level points the allocator slack is fitted on (docs/model-checks.md); the others are out of sample."""


def recompute_of(text: str) -> Recompute:
    if text == "none":
        return NO_RECOMPUTE
    kind, _, rest = text.partition(":")
    if kind == "full":
        method, _, n = rest.partition("/")
        return Recompute("full", method, int(n))
    return Recompute("selective", modules=tuple(rest.split("+")))


def ours(point: dict) -> tuple[float, dict]:
    spec, note = load_model_spec(ROOT / point["model"])
    if spec is None:
        raise SystemExit(note)
    layout = Layout(tp=point["tp"], pp=point["pp"], cp=point["cp"], ep=point["ep"], etp=point["etp"],
                    first_stage_layers=point.get("first_stage_layers"),
                    last_stage_layers=point.get("last_stage_layers"), recompute=recompute_of(point["recompute"]))
    legacy = point.get("legacy_model", False)
    options = MemoryOptions(seq_len=point["seq_len"], micro_batch_size=point["micro_batch_size"],
                            sequence_parallel=point["sequence_parallel"], workload="pretrain", device="gpu",
                            hidden_dropout=legacy, fused_swiglu=not legacy,
                            cross_entropy_fusion=point.get("cross_entropy_loss_fusion", False))
    estimate = estimate_memory(spec, layout, point["world"], options)
    if estimate is None:
        raise SystemExit(f"{point['id']}: the layers do not split over PP {point['pp']} as given")
    value = estimate.tensors if point["kind"] == "allocated" else estimate.peak
    return value / GIB, {k: round(v / GIB, 2) for k, v in estimate.breakdown().items()}


def mbridge(point: dict, python: str, directory: str) -> float:
    args = [python, str(ROOT / "benchmarks" / "mbridge_estimate.py"), "--estimator-dir", directory,
            "--model", str(ROOT / point["model"]), "--world", str(point["world"]), "--seq", str(point["seq_len"]),
            "--mbs", str(point["micro_batch_size"])]
    for key in ("tp", "pp", "cp", "ep", "etp"):
        args += [f"--{key}", str(point[key])]
    for key, flag in (("first_stage_layers", "--first"), ("last_stage_layers", "--last")):
        if point.get(key) is not None:
            args += [flag, str(point[key])]
    if point["recompute"].startswith("full"):
        args += ["--recompute", "full"]
    if not point["sequence_parallel"]:
        args.append("--no-sp")
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    return json.loads(out)["peak_gib"]


def fit_slack(points: list[dict]) -> float:
    """The GPU ``slack_dynamic`` (steps of 0.01, ``slack_static`` held) with the smallest largest deviation on
    ``FIT_POINTS``; prints each point's ratio at it."""
    fit = [p for p in points if p["id"] in FIT_POINTS]
    saved, best = DEVICES["gpu"], None
    try:
        for step in range(101):
            DEVICES["gpu"] = dataclasses.replace(saved, slack_dynamic=step / 100)
            ratios = {p["id"]: ours(p)[0] / p["measured"] for p in fit}
            worst = max(abs(r - 1) for r in ratios.values())
            if best is None or worst < best[0] - 1e-12:
                best = (worst, step / 100, ratios)
    finally:
        DEVICES["gpu"] = saved
    worst, value, ratios = best
    print(f"slack_dynamic {value:.2f} (slack_static {saved.slack_static}): largest deviation {worst:.1%} on "
          + ", ".join(f"{k} {r:.3f}" for k, r in ratios.items()))
    return value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mbridge-python", help="a Python where mbridge 0.15.1 and megatron-core 0.13 import")
    parser.add_argument("--mbridge-dir", help="mbridge's memory_estimator directory (repository tag v0.15.1)")
    parser.add_argument("--breakdown", action="store_true", help="print our components per point")
    parser.add_argument("--fit-slack", action="store_true", help="refit the dynamic allocator slack on FIT_POINTS")
    args = parser.parse_args()
    points = json.loads(DATA.read_text(encoding="utf-8"))["points"]
    if args.fit_slack:
        fit_slack(points)
        return 0
    rows, ratios, mb_ratios = [], [], []
    for point in points:
        value, parts = ours(point)
        mb = mbridge(point, args.mbridge_python, args.mbridge_dir) if args.mbridge_python else point.get("mbridge_gib")
        ratio = value / point["measured"]
        mb_ratio = mb / point["measured"] if mb else None
        if point["reproducible"]:
            ratios.append(ratio)
            if mb_ratio:
                mb_ratios.append(mb_ratio)
        rows.append((point["id"], point["kind"], point["measured"], value, ratio, mb, mb_ratio, point["reproducible"],
                     parts))
    print(f"{'setup':34} {'kind':9} {'measured':>8} {'ours':>7} {'ratio':>6} {'mbridge':>8} {'ratio':>6}  reproducible")
    for ident, kind, measured, value, ratio, mb, mb_ratio, repro, parts in rows:
        mb_text = f"{mb:8.2f} {mb_ratio:6.3f}" if mb else f"{'-':>8} {'-':>6}"
        flag = "yes" if repro else "no"
        ok = "" if not repro else ("  within 10%" if abs(ratio - 1) <= 0.10 else "  OFF BY MORE THAN 10%")
        print(f"{ident:34} {kind:9} {measured:8.2f} {value:7.2f} {ratio:6.3f} {mb_text}  {flag}{ok}")
        if args.breakdown:
            print("    " + ", ".join(f"{k} {v}" for k, v in parts.items() if v))
    print(f"\nmedian ratio over reproducible setups: ours {statistics.median(ratios):.3f}"
          + (f", mbridge {statistics.median(mb_ratios):.3f}" if mb_ratios else ""))
    print(f"largest deviation: ours {max(abs(r - 1) for r in ratios):.1%}"
          + (f", mbridge {max(abs(r - 1) for r in mb_ratios):.1%}" if mb_ratios else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
