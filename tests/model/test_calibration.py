"""The memory estimate against the published measured peaks of ``benchmarks/data/measured_peaks.json``.

Runs ``benchmarks/calibrate_memory.py``'s own comparison: every reproducible point must be within 10%
of its measured figure (tensors for ``allocated``, the whole peak for ``device``), the MLA points
(Moonlight, DeepseekV3ForCausalLM) included, except the known open gaps of ``KNOWN_GAPS``, each held
to its own bound by a separate test.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from helpers import ROOT
from verl_mindspeed.model import load_model_spec

DATA = ROOT / "benchmarks" / "data" / "measured_peaks.json"
POINTS = json.loads(DATA.read_text(encoding="utf-8"))["points"]
BASIC = ("id", "source", "hardware", "framework", "model", "world", "tp", "pp", "cp", "ep", "etp", "seq_len",
            "micro_batch_size", "recompute", "sequence_parallel", "measured", "kind", "reproducible", "notes")


def _calibrate():
    spec = importlib.util.spec_from_file_location("calibrate_memory", ROOT / "benchmarks" / "calibrate_memory.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CALIBRATE = _calibrate()


@pytest.mark.parametrize("point", POINTS, ids=[p["id"] for p in POINTS])
def test_point_names_its_source_and_setting(point):
    assert all(key in point for key in BASIC), [key for key in BASIC if key not in point]
    assert "https://" in point["source"]
    assert point["kind"] in ("allocated", "device")
    assert (ROOT / point["model"] / "config.json").is_file()


REPRODUCIBLE = [p for p in POINTS if p["reproducible"]]
KNOWN_GAPS = {
    # Known open gap, not a fitted exception: ms-swift 9052fc0's Moonlight example (TP 2 + SP, EP 4, ETP 2, PP 1,
    # '# 8 * 56GiB') is estimated 10.1% low (50.3 GiB). Every term was checked against megatron-core 0.12.1:
    # per-rank parameters (the full-size oracle in test_params_megatron_oracle.py), optimizer sharding (expert
    # data-parallel size 1), the activations kept by full recompute, the logits of the fused cross entropy
    # (10 bytes per entry, counted). The later version of the same example (PP 2, EP 4; the point above) is at
    # 0.96. What the estimate does not model: this run had no expandable_segments (the only point without) and
    # ran megatron-core core_r0.12.0, the later one 0.13. The bound keeps the gap from growing unnoticed.
    "ms-swift-moonlight-16b-a3b-tp2-ep4": (0.88, 1.0),
}
WITHIN_TEN = [p for p in REPRODUCIBLE if p["id"] not in KNOWN_GAPS]


@pytest.mark.parametrize("point", WITHIN_TEN, ids=[p["id"] for p in WITHIN_TEN])
def test_estimate_within_ten_percent_of_the_measured_peak(point):
    value, _ = CALIBRATE.ours(point)
    assert abs(value / point["measured"] - 1) <= 0.10, (point["id"], round(value, 2), point["measured"])


@pytest.mark.parametrize("ident", list(KNOWN_GAPS))
def test_known_open_gap_stays_within_its_own_bound(ident):
    point = next(p for p in REPRODUCIBLE if p["id"] == ident)
    low, high = KNOWN_GAPS[ident]
    value, _ = CALIBRATE.ours(point)
    assert low <= value / point["measured"] < high, (ident, round(value, 2), point["measured"])


def test_the_mla_points_are_calibrated():
    mla = {p["id"]: p for p in REPRODUCIBLE if load_model_spec(ROOT / p["model"])[0].is_mla}
    assert sorted(mla) == ["ms-swift-moonlight-16b-a3b-pp2-ep4", "ms-swift-moonlight-16b-a3b-tp2-ep4"]
    # The source's uneven split (decoder_last_pipeline_num_layers 13): 27 layers do not split evenly over PP 2.
    assert mla["ms-swift-moonlight-16b-a3b-pp2-ep4"]["last_stage_layers"] == 13
    # The earlier version: ETP is megatron's default (= TP), so the expert data-parallel size is 8 / (4 x 2) = 1.
    tp2 = mla["ms-swift-moonlight-16b-a3b-tp2-ep4"]
    assert (tp2["tp"], tp2["pp"], tp2["ep"], tp2["etp"], tp2["sequence_parallel"]) == (2, 1, 4, 2, True)


def test_the_slack_constant_is_the_fit_of_the_calibration_script(capsys):
    """``overhead.SLACK_DYNAMIC`` is what ``calibrate_memory.py --fit-slack`` gives on its fit points."""
    from verl_mindspeed.model.overhead import SLACK_DYNAMIC

    assert CALIBRATE.fit_slack(POINTS) == SLACK_DYNAMIC
    assert all(ident in {p["id"] for p in POINTS} for ident in CALIBRATE.FIT_POINTS)
