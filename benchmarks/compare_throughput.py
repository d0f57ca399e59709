"""Compare the step-time proxy (``model/throughput.py``) with published measured throughput.

    python benchmarks/compare_throughput.py            # the markdown tables of docs/model-checks.md
    python benchmarks/compare_throughput.py --json     # the same numbers as JSON

Data: ``benchmarks/data/measured_throughput.json`` (each point cites its source, layout and setting).
For each point the proxy's step time for that layout, cluster, sequence length, micro-batch and global
batch becomes tokens/s per device (``global batch x sequence / world / seconds``). A point measured in
TFLOP/s per device is turned into tokens/s with megatron core_r0.8.0's ``num_floating_point_operations``,
the count MindSpeed-LLM printed then. The proxy's rates are its defaults for an Ascend NPU; for an H100 point
they are set here from the H100's published figures by the rules the defaults state (half the dense peak,
80% of a link's nominal bandwidth), never fitted to the measurements.

Per group (points that share model, cluster, sequence length and source) the script says whether the proxy
orders the layouts as the measurements do: agreeing pairs out of all pairs, and Spearman's rho.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))  # the data files' recompute notation, read as calibrate_memory reads it

from calibrate_memory import recompute_of  # noqa: E402

from verl_mindspeed.model import Layout, load_model_spec  # noqa: E402
from verl_mindspeed.model.layouts import plan_layouts, rank_plans  # noqa: E402
from verl_mindspeed.model.memory import MemoryOptions  # noqa: E402
from verl_mindspeed.model.spec import ModelSpec  # noqa: E402
from verl_mindspeed.model.throughput import Rates, step_time  # noqa: E402

DATA = ROOT / "benchmarks" / "data" / "measured_throughput.json"

H100_LINK = 0.8  # the share of a link's nominal bandwidth the NPU defaults take (20 GB/s of 200 Gb/s RoCE)
RATES = {
    "ascend-910b": {"bf16": Rates()},
    # H100 SXM: 989 TFLOP/s dense BF16, 1979 dense FP8 (NVIDIA H100 datasheet); NVLink 4: 450 GB/s each way;
    # DGX H100: one 400 Gb/s ConnectX-7 per GPU. Half the peak, as the NPU default is "about half of the peak".
    "h100-sxm": {precision: Rates(flops=peak / 2, intra_node=H100_LINK * 450e9, inter_node=H100_LINK * 50e9)
                 for precision, peak in (("bf16", 989e12), ("fp8", 1979e12))},
    # H800 SXM: the H100's compute (989 TFLOP/s dense BF16) with NVLink cut to 400 GB/s in total, 200 GB/s each way
    # (NVIDIA H800 datasheet). The network is not stated by the H800 sources: one 400 Gb/s NIC per GPU, as DGX H100.
    "h800-sxm": {"bf16": Rates(flops=989e12 / 2, intra_node=H100_LINK * 200e9, inter_node=H100_LINK * 50e9)},
}
#: Memory of one device in GiB as the device reports it: the 64 GB of an Atlas 800T A2 are 65,536 MiB, the 80 GB
#: of an H100 or H800 SXM 81,559 MiB (nvidia-smi).
DEVICE_GIB = {"ascend-910b": 64.0, "h100-sxm": 81559 / 1024, "h800-sxm": 81559 / 1024}
#: A group ranks in plan when it has at least this many layouts.
RANKED_GROUP = 5
CP_SHORT = {"megatron_cp_algo": "ring", "ulysses_cp_algo": "ulysses", "adaptive_cp_algo": "adaptive",
            "kvallgather_cp_algo": "kvallgather", "hybrid_cp_algo": "hybrid",
            "hybrid_adaptive_cp_algo": "hybrid-adaptive"}


def layout_of(point: dict) -> Layout:
    return Layout(tp=point["tp"], pp=point["pp"], vpp=point.get("vpp"), cp=point["cp"],
                  cp_algo=point.get("cp_algo") or "megatron_cp_algo", ulysses_degree=point.get("ulysses_degree"),
                  ep=point["ep"], etp=point["etp"], recompute=recompute_of(point["recompute"]),
                  first_stage_layers=point.get("first_stage_layers"), last_stage_layers=point.get("last_stage_layers"))


def layout_label(point: dict) -> str:
    parts = [f"TP {point['tp']}", f"PP {point['pp']}"]
    if point.get("vpp"):
        parts.append(f"VPP {point['vpp']}")
    if point["cp"] > 1:
        parts.append(f"CP {point['cp']} {CP_SHORT.get(point['cp_algo'], point['cp_algo'])}")
    if point["ep"] > 1:
        parts.append(f"EP {point['ep']}")
    if point["recompute"] != "none":
        parts.append(point["recompute"])
    return " ".join(parts)


def megatron_flops_per_token(spec: ModelSpec, seq_len: int) -> float:
    """megatron core_r0.8.0 ``num_floating_point_operations`` for one token (dense SwiGLU models): forward and
    backward, attention scores over the full sequence, the output layer."""
    if spec.is_moe or spec.is_mla:
        raise ValueError(f"{spec.architecture}: only dense models are converted from TFLOP/s here")
    h, a, g, d, layers = spec.hidden_size, spec.num_attention_heads, spec.num_query_groups, spec.head_dim, \
        spec.num_layers
    attention = (1 + g / a + seq_len / h) * (a * d / h)
    mlp = spec.ffn_hidden_size / h * 3 / 2
    logits = spec.vocab_size / (2 * layers * h)
    return 12 * layers * h * h * (attention + mlp + logits)


@dataclass(frozen=True)
class Row:
    point: dict
    measured: float
    """Tokens/s per device."""
    proxy: float
    """The proxy's tokens/s per device."""

    @property
    def ratio(self) -> float:
        return self.proxy / self.measured


def evaluate(point: dict) -> Row:
    spec, note = load_model_spec(ROOT / point["model"])
    if spec is None:
        raise SystemExit(f"{point['id']}: {note}")
    rates = RATES[point["device"]][point.get("precision", "bf16")]
    gbs, seq, world = point["global_batch_size"], point["seq_len"], point["world"]
    time = step_time(spec, layout_of(point), world, point["gpus_per_node"], seq, point["micro_batch_size"],
                     rates=rates, global_batch=gbs)
    proxy = gbs * seq / world / time.total
    measured = point["measured"]
    if point["unit"] == "TFLOP/s/device":
        measured = measured * 1e12 / megatron_flops_per_token(spec, seq)
    elif point["unit"] != "tokens/s/device":
        raise SystemExit(f"{point['id']}: unknown unit {point['unit']}")
    return Row(point, measured, proxy)


def _ranks(values: list[float]) -> list[float]:
    """1 for the largest; tied values share their mean rank."""
    order = sorted(range(len(values)), key=lambda i: -values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and _same(values[order[j + 1]], values[order[i]]):
            j += 1
        for k in order[i:j + 1]:
            ranks[k] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def spearman(x: list[float], y: list[float]) -> Optional[float]:
    rx, ry = _ranks(x), _ranks(y)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    sx = sum((a - mx) ** 2 for a in rx) ** 0.5
    sy = sum((b - my) ** 2 for b in ry) ** 0.5
    if not sx or not sy:
        return None
    return sum((a - mx) * (b - my) for a, b in zip(rx, ry)) / (sx * sy)


@dataclass(frozen=True)
class Agreement:
    group: str
    points: int
    agree: int
    disagree: int
    tied: int
    """Pairs the proxy ties (the same layout cost) while the measurements differ."""
    rho: Optional[float]
    micro: Optional[int] = None
    """The micro-batch size of a group's subset (the pairs plan compares); ``None`` for the whole group."""

    @property
    def pairs(self) -> int:
        return self.agree + self.disagree + self.tied


def agreement(group: str, rows: list[Row], micro: Optional[int] = None) -> Agreement:
    agree = disagree = tied = 0
    for a, b in itertools.combinations(rows, 2):
        if _same(a.measured, b.measured):
            continue
        if _same(a.proxy, b.proxy):
            tied += 1
        elif (a.measured > b.measured) == (a.proxy > b.proxy):
            agree += 1
        else:
            disagree += 1
    return Agreement(group, len(rows), agree, disagree, tied,
                     spearman([r.measured for r in rows], [r.proxy for r in rows]), micro)


def compare(points: Optional[list[dict]] = None) -> tuple[list[Row], list[Agreement]]:
    points = points if points is not None else json.loads(DATA.read_text(encoding="utf-8"))["points"]
    rows = [evaluate(p) for p in points]
    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(row.point["group"], []).append(row)
    found = []
    for name, members in groups.items():
        if len(members) < 2:
            continue
        found.append(agreement(name, members))
        micro = sorted({r.point["micro_batch_size"] for r in members})
        if len(micro) > 1:  # plan ranks layouts at one micro-batch size: the pairs it compares, per size
            for m in micro:
                same = [r for r in members if r.point["micro_batch_size"] == m]
                if len(same) > 1:
                    found.append(agreement(f"{name}, micro-batch {m}", same, m))
    return rows, found


@dataclass(frozen=True)
class PlanRow:
    group: str
    point: str
    """The measured fastest layout of the group."""
    row: int
    """Its place among plan's fitting layouts, by the proxy (1 + the layouts the proxy puts ahead of it)."""
    fitting: int


def plan_row(group: str, rows: list[Row]) -> PlanRow:
    """Where the group's measured fastest layout ranks among every layout ``plan`` lists for that model and
    cluster (pre-training memory, the device's memory, the point's micro-batch), every one timed by the proxy at
    the point's rates and global batch. The layout itself is timed as measured (the source's own split, which
    plan may not enumerate) and placed among the fitting layouts."""
    best = max(rows, key=lambda r: r.measured).point
    spec, _note = load_model_spec(ROOT / best["model"])
    rates = RATES[best["device"]][best.get("precision", "bf16")]
    options = MemoryOptions(seq_len=best["seq_len"], micro_batch_size=best["micro_batch_size"], workload="pretrain",
                            device="npu" if best["device"].startswith("ascend") else "gpu", ref_model=False)
    world, per_node = best["world"], best["gpus_per_node"]
    plans = plan_layouts(spec, world // per_node, per_node, device_memory_gib=DEVICE_GIB[best["device"]],
                         options=options, interleave=True)

    def seconds(layout: Layout) -> float:
        return step_time(spec, layout, world, per_node, best["seq_len"], best["micro_batch_size"], rates=rates,
                         global_batch=best["global_batch_size"]).total

    own = seconds(layout_of(best))
    fitting = [seconds(p.layout) for p in rank_plans(spec, plans) if p.fits]
    return PlanRow(group, best["id"], 1 + sum(t < own for t in fitting), len(fitting))


def plan_rows(rows: list[Row]) -> list[PlanRow]:
    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(row.point["group"], []).append(row)
    return [plan_row(name, members) for name, members in groups.items() if len(members) >= RANKED_GROUP]


def plan_table(found: list[PlanRow]) -> list[str]:
    return [f"| {r.group} | `{r.point}` | {r.row} of {r.fitting} | {100 * r.row / r.fitting:.1f}% |" for r in found]


def table(rows: list[Row]) -> list[str]:
    """The rows of the comparison table (no header): point, layout, measured, proxy, ratio."""
    out = []
    for r in rows:
        p = r.point
        measured = f"{r.measured:,.0f}"
        if p["unit"] == "TFLOP/s/device":
            measured += f" ({p['measured']:g} TFLOP/s)"
        out.append(f"| `{p['id']}` | {p['world']} x {p['device']}, {p['precision']}, seq {p['seq_len']}, "
                   f"gbs {p['global_batch_size']} | {layout_label(p)} | {measured} | {r.proxy:,.0f} | "
                   f"{r.ratio:.2f} |")
    return out


def agreement_rows(found: list[Agreement]) -> list[str]:
    out = []
    for a in found:
        rho = "n/a" if a.rho is None else f"{a.rho:+.2f}"
        out.append(f"| {a.group} | {a.points} | {a.agree} of {a.pairs} | {a.tied} | {rho} |")
    return out


def summary(rows: list[Row]) -> list[str]:
    """One line per device: the median ratio and its range."""
    out = []
    for device in sorted({r.point["device"] for r in rows}):
        ratios = [r.ratio for r in rows if r.point["device"] == device]
        out.append(f"| {device} | {len(ratios)} | {statistics.median(ratios):.2f} | {min(ratios):.2f} | "
                   f"{max(ratios):.2f} |")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args()
    rows, found = compare()
    if args.json:
        ranked = plan_rows(rows)
        print(json.dumps({"plan_rows": [{"group": r.group, "point": r.point, "row": r.row, "fitting": r.fitting}
                                        for r in ranked],
                          "points": [{"id": r.point["id"], "group": r.point["group"], "measured": round(r.measured, 1),
                                      "proxy": round(r.proxy, 1), "ratio": round(r.ratio, 3)} for r in rows],
                          "groups": [{"group": a.group, "points": a.points, "agree": a.agree,
                                      "disagree": a.disagree, "tied": a.tied,
                                      "spearman": None if a.rho is None else round(a.rho, 3)} for a in found]},
                         indent=2))
        return 0
    print("| point | cluster | layout | measured tokens/s/device | proxy | proxy / measured |")
    print("| --- | --- | --- | --- | --- | --- |")
    print("\n".join(table(rows)))
    print()
    print("| group | points | pairs in the measured order | pairs the proxy ties | Spearman |")
    print("| --- | --- | --- | --- | --- |")
    print("\n".join(agreement_rows(found)))
    print()
    print("| group | measured fastest | its row among plan's fitting layouts | top |")
    print("| --- | --- | --- | --- |")
    print("\n".join(plan_table(plan_rows(rows))))
    print()
    print("| device | points | median proxy / measured | lowest | highest |")
    print("| --- | --- | --- | --- | --- |")
    print("\n".join(summary(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
