"""``plan``'s one-line reasons: one per shown layout, in text and JSON, naming every parallel dimension above 1."""

from __future__ import annotations

import json
import re

from helpers import FIXTURES
from verl_mindspeed.cli import main
from verl_mindspeed.model import Layout, load_model_spec
from verl_mindspeed.model.throughput import layout_reasons, step_time

MODELS = FIXTURES / "models"
ARGS = ["--model", str(MODELS / "Qwen3-30B-A3B"), "--nnodes", "2", "--n-gpus-per-node", "8", "--seq-len", "8192"]
WORLD = 16
LABEL = re.compile(r"TP(\d+) PP(\d+)(?: VPP(\d+))? CP(\d+)(?:/\S+)?(?: EP(\d+) ETP(\d+))?")


def run(capsys, *argv):
    code = main(["plan", *argv])
    return code, capsys.readouterr().out


def sizes(tp, pp, vpp, cp, ep, etp) -> dict[str, int]:
    """The dimensions above 1 of a layout, DP included."""
    dims = {"TP": tp, "PP": pp, "VPP": vpp or 1, "CP": cp, "EP": ep, "ETP": etp, "DP": WORLD // (tp * pp * cp)}
    return {name: n for name, n in dims.items() if n > 1}


def blocks(text: str) -> list[tuple[dict[str, int], str]]:
    """(dimensions above 1, reasons line) of every ``# layout N`` block."""
    lines, found = text.splitlines(), []
    for i, line in enumerate(lines):
        head = re.match(r"# (?:layout|布局) \d+: (.*)", line)
        if head:
            m = LABEL.match(head.group(1))
            assert m, head.group(1)
            tp, pp, vpp, cp, ep, etp = (int(g) if g else None for g in m.groups())
            found.append((sizes(tp, pp, vpp, cp, ep or 1, etp or 1), lines[i + 2]))
    return found


def test_every_override_block_has_a_reasons_line_naming_each_dimension(capsys):
    code, out = run(capsys, *ARGS, "--top", "6", "--lang", "en")
    found = blocks(out)
    assert code == 0 and len(found) >= 3
    kinds = set()
    for dims, line in found:
        assert line.startswith("#   ")
        for name, n in dims.items():
            assert f"{name} {n}:" in line, (name, n, line)
            kinds.add(name)
        extra = 1 if "DP" not in dims and re.search(r"\bDP 1:", line) else 0  # DP 1 reducing over CP or experts
        assert len(re.findall(r"\b(?:V?PP|E?TP|CP|EP|DP) \d+:", line)) == len(dims) + extra, line
    assert {"TP", "PP"} <= kinds


def test_the_reasons_line_is_translated(capsys):
    code, out = run(capsys, *ARGS, "--top", "3", "--lang", "zh")
    found = blocks(out)
    assert code == 0 and found
    for dims, line in found:
        for name, n in dims.items():
            assert f"{name} {n}：" in line, (name, n, line)
        assert "占步时" in line or set(dims) <= {"VPP", "ETP"}


def test_json_lists_the_reasons_of_every_layout(capsys):
    code, out = run(capsys, *ARGS, "--top", "12", "--json")
    layouts = json.loads(out)["layouts"]
    assert code == 0 and len(layouts) == 12
    for lay in layouts:
        dims = sizes(lay["tensor_model_parallel_size"], lay["pipeline_model_parallel_size"],
                     lay["virtual_pipeline_model_parallel_size"], lay["context_parallel_size"],
                     lay["expert_model_parallel_size"], lay["expert_tensor_parallel_size"])
        got = {r["dimension"].upper(): r for r in lay["reasons"]}
        if lay["step_time_proxy"]["shares"]["dp"] > 0:  # DP's reduction costs even at DP 1 (over CP, or the experts)
            dims.setdefault("DP", got["DP"]["size"])
        assert {name: r["size"] for name, r in got.items()} == dims
        for name, r in got.items():
            assert r["text"].startswith(f"{name} {r['size']}:") and 0.0 <= r["share"] <= 1.0


def test_a_single_device_says_it_has_no_parallel_dimension(capsys):
    code, out = run(capsys, "--model", str(MODELS / "Qwen3-0.6B"), "--nnodes", "1", "--n-gpus-per-node", "1",
                    "--seq-len", "1024", "--lang", "en")
    assert code == 0 and "no parallel dimension above 1: one device runs the whole model" in out


def test_reasons_read_the_proxys_own_terms():
    spec, _ = load_model_spec(MODELS / "Qwen3-30B-A3B")
    lay = Layout(tp=2, pp=4, cp=2, ep=4, cp_algo="ulysses_cp_algo")
    time = step_time(spec, lay, WORLD, 8, 8192)
    by = {r.dimension: r for r in layout_reasons(spec, lay, WORLD, 8, 8192, time=time)}
    assert list(by) == ["ep", "tp", "cp", "pp", "dp"]  # DP is 1; the weights still reduce over its x CP ranks
    assert by["dp"].size == 1 and by["dp"].facts["group"] == 2 and by["dp"].share == time.dp / time.total
    assert by["ep"].share == time.ep / time.total and by["ep"].facts["experts_per_rank"] == 128 // 4
    # two around attention per pass: the experts take their tokens by all-to-all
    assert by["tp"].share == time.tp / time.total and by["tp"].facts["collectives_per_layer"] == 4
    assert by["cp"].facts == {"tokens_per_rank": 4096, "algorithm": "ulysses_cp_algo", "span": "intra"}
    assert by["pp"].share == (time.bubble + time.pp) / time.total and by["pp"].facts["layers_max"] == 12
    across = {r.dimension: r for r in layout_reasons(spec, Layout(ep=16), WORLD, 8, 8192)}
    assert across["ep"].facts["span"] == "inter" and "dp" in across


def test_etp_carries_its_own_gather_and_dp_one_still_reduces_the_experts():
    spec, _ = load_model_spec(MODELS / "Qwen3-30B-A3B")
    lay = Layout(tp=4, ep=1, etp=4)
    time = step_time(spec, lay, 32, 16, 8192)
    by = {r.dimension: r for r in layout_reasons(spec, lay, 32, 16, 8192, time=time)}
    assert "ep" not in by and time.ep == 0 and by["etp"].share == time.etp / time.total > 0
