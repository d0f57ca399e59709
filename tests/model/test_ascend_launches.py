"""Public Ascend launches against ``plan``: the docs' table is what ``plan --json --args-file`` says of each launch.

``benchmarks/data/ascend_launches/*.args`` are the argv of public verl launch scripts that ran on Ascend NPUs (each
file's header names the script, its commit, the devices and any published peak). For every one, the table of
"Public Ascend launches against the plan" (English and Chinese) must state what plan says of the launch's own
layout (its sizes, stage split, CP algorithm and recompute): whether it fits, the largest term of its peak, the
peak itself (within 5%, so a recalibration that moves a row shows here and in the docs together) and its rank.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from functools import lru_cache

import pytest

from helpers import FIXTURES, ROOT
from verl_mindspeed.cli import main

LAUNCHES = ROOT / "benchmarks" / "data" / "ascend_launches"
FIXTURE_MODELS = FIXTURES / "models"
BENCH_MODELS = ROOT / "benchmarks" / "data" / "models"
MODELS = {
    "run_dapo_moonlight-16b_megatron_npu": FIXTURE_MODELS / "Moonlight-16B-A3B-Instruct",
    "run_gspo_qwen3_30b_megatron_npu": FIXTURE_MODELS / "Qwen3-30B-A3B",
    "run_gspo_qwen3_30b_megatron_npu_multinode": FIXTURE_MODELS / "Qwen3-30B-A3B",
    "run_grpo_qwen3_30b_megatron_sglang_npu": FIXTURE_MODELS / "Qwen3-30B-A3B",
    "run_qwen3_30b_a3b_megatron": FIXTURE_MODELS / "Qwen3-30B-A3B",
    "run_qwen3_06b_grpo_mindspeed": FIXTURE_MODELS / "Qwen3-0.6B",
    "run_qwen3_0_6b_megatron_vllm_ascend": FIXTURE_MODELS / "Qwen3-0.6B",
    "run_qwen3_30b_a3b_sapo_megatron_npu": FIXTURE_MODELS / "Qwen3-30B-A3B",
    "run_qwen3_30b_a3b_dppo_megatron_npu": FIXTURE_MODELS / "Qwen3-30B-A3B",
    "run_qwen2_5_7b_gmpo_megatron_npu": FIXTURE_MODELS / "Qwen2.5-7B-Instruct",
    "run_qwen3_235b_256k_megatron": BENCH_MODELS / "Qwen3-235B-A22B",
}
"""Each launch file and the config.json of the model it trains (same shapes: Qwen3-30B-A3B for its -Base and
-Instruct-2507 variants, Qwen2.5-7B-Instruct for Qwen2.5-7B, Qwen3-235B-A22B for its -Instruct-2507)."""
TERMS = ("weights", "gradients", "optimizer", "ref_weights", "activations", "logits", "optimizer_step")
"""The tensor terms of the breakdown; the table's "deciding term" is the largest of them."""
DOCS = {"en": ROOT / "docs" / "model-checks.md", "zh": ROOT / "docs" / "zh" / "model-checks.md"}
SECTION = {"en": "### Public Ascend launches against the plan", "zh": "### 公开 Ascend 启动脚本与 plan 的对照"}
FITS = {"en": {"yes": True, "no": False}, "zh": {"是": True, "否": False}}
COLUMNS = 9
"""launch, model, devices, author's layout, plan's peak, deciding term, fits, rank among fitting, measured."""


@lru_cache(maxsize=None)
def plan_json(name: str, *extra: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["plan", "--json", "--args-file", str(LAUNCHES / f"{name}.args"), "--model", str(MODELS[name]),
                     *extra])
    data = json.loads(out.getvalue())
    assert code in (0, 1), data
    return data


def launch_layout(data: dict) -> dict:
    row = data["launch"]["row"]
    assert row, "plan did not place the launch's own layout"
    return data["layouts"][row - 1]


def docs_rows(lang: str) -> dict[str, list[str]]:
    text = DOCS[lang].read_text(encoding="utf-8")
    start = text.index(SECTION[lang])
    end = text.find("\n### ", start + len(SECTION[lang]))
    rows = {}
    for line in text[start:end if end > 0 else None].splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        found = re.match(r"`(run_[\w.-]+)`", cells[0])
        if found:
            assert len(cells) == COLUMNS, f"{lang}: {line}"
            rows[found.group(1)] = cells
    return rows


def test_every_launch_file_names_its_source_commit_and_devices():
    files = sorted(p.stem for p in LAUNCHES.glob("*.args"))
    assert files == sorted(MODELS)
    for name in files:
        head = [line for line in (LAUNCHES / f"{name}.args").read_text(encoding="utf-8").splitlines()
                if line.startswith("#")]
        source = next(line for line in head if line.startswith("# source: "))
        assert re.search(r"https://github\.com/verl-project/verl[\w-]*/blob/[0-9a-f]{40}/\S+\.sh", source), name
        assert any(line.startswith("# devices: ") for line in head), name
        assert any(line.startswith("# measured: ") for line in head), name
        assert (MODELS[name] / "config.json").is_file(), name


@pytest.mark.parametrize("lang", sorted(DOCS))
def test_the_docs_table_lists_every_launch(lang):
    assert sorted(docs_rows(lang)) == sorted(MODELS)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_docs_say_what_plan_says(name):
    data = plan_json(name)
    lay = launch_layout(data)
    own = data["launch"]["layout"]
    for key in ("num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage", "recompute"):
        assert lay[key] == own[key], f"{name}: the row's {key} is {lay[key]}, the launch's {own[key]}"
    breakdown = lay["memory_breakdown_gib"]
    largest = max(TERMS, key=lambda term: breakdown[term])
    for lang in DOCS:
        cells = docs_rows(lang)[name]
        peak = float(re.match(r"[\d.]+", cells[4]).group(0))
        term = re.search(r"`(\w+)`", cells[5]).group(1)
        assert FITS[lang][cells[6]] is lay["fits"], f"{lang} {name}: plan says fits={lay['fits']}"
        assert term == largest, f"{lang} {name}: the largest term is {largest} ({breakdown})"
        assert abs(peak - lay["memory_gib_per_device"]) <= 0.05 * lay["memory_gib_per_device"], \
            f"{lang} {name}: plan says {lay['memory_gib_per_device']} GiB, the docs {peak}"
        if lay["fits"]:
            rank = re.match(r"(\d+)\D+(\d+)", cells[7])
            assert rank and int(rank.group(1)) == data["launch"]["row"], f"{lang} {name}: row {data['launch']['row']}"
            assert int(rank.group(2)) == data["fitting_layouts"], f"{lang} {name}: {data['fitting_layouts']} fit"


@pytest.mark.parametrize("name, extra, fits", [
    # the 256k Qwen3-235B launch fits even with the Adam states on the device (its own fraction is 1)
    ("run_qwen3_235b_256k_megatron", ("--optimizer-offload-fraction", "0"), True),
    # the SAPO recipe's 910B3 shows 60.96 GiB: the launch fits there, and would not without its HybridDeviceOptimizer
    ("run_qwen3_30b_a3b_sapo_megatron_npu", ("--device-memory-gib", "60.96"), True),
    ("run_qwen3_30b_a3b_sapo_megatron_npu", ("--device-memory-gib", "60.96", "--optimizer-offload-fraction", "0"),
     False),
    # the 16-NPU GSPO launch needs a device of about 84 GiB at its own budget
    ("run_gspo_qwen3_30b_megatron_npu", ("--device-memory-gib", "84"), True),
    ("run_gspo_qwen3_30b_megatron_npu", ("--device-memory-gib", "83"), False),
    # the multi-node GSPO launch fits at 8192 tokens per micro-batch (8 GSM8K sequences per rank)
    ("run_gspo_qwen3_30b_megatron_npu_multinode", ("--seq-len", "8192"), True),
])
def test_what_the_paragraphs_claim(name, extra, fits):
    assert launch_layout(plan_json(name, *extra))["fits"] is fits
