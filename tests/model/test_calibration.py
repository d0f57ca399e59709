"""The memory estimate against the published measured peaks of ``benchmarks/data/measured_peaks.json``.

Runs ``benchmarks/calibrate_memory.py``'s own comparison: every reproducible point must be within 10%
of its measured figure (tensors for ``allocated``, the whole peak for ``device``), the MLA point
(Moonlight, DeepseekV3ForCausalLM) included.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from helpers import ROOT
from verl_mindspeed.model import load_model_spec

DATA = ROOT / "benchmarks" / "data" / "measured_peaks.json"
POINTS = json.loads(DATA.read_text(encoding="utf-8"))["points"]
REQUIRED = ("id", "source", "hardware", "framework", "model", "world", "tp", "pp", "cp", "ep", "etp", "seq_len",
            "micro_batch_size", "recompute", "sequence_parallel", "measured", "kind", "reproducible", "notes")


def _calibrate():
    spec = importlib.util.spec_from_file_location("calibrate_memory", ROOT / "benchmarks" / "calibrate_memory.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CALIBRATE = _calibrate()


@pytest.mark.parametrize("point", POINTS, ids=[p["id"] for p in POINTS])
def test_point_names_its_source_and_setting(point):
    assert all(key in point for key in REQUIRED), [key for key in REQUIRED if key not in point]
    assert "https://" in point["source"]
    assert point["kind"] in ("allocated", "device")
    assert (ROOT / point["model"] / "config.json").is_file()


REPRODUCIBLE = [p for p in POINTS if p["reproducible"]]


@pytest.mark.parametrize("point", REPRODUCIBLE, ids=[p["id"] for p in REPRODUCIBLE])
def test_estimate_within_ten_percent_of_the_measured_peak(point):
    value, _ = CALIBRATE.ours(point)
    assert abs(value / point["measured"] - 1) <= 0.10, (point["id"], round(value, 2), point["measured"])


def test_an_mla_point_is_calibrated():
    mla = [p for p in REPRODUCIBLE if load_model_spec(ROOT / p["model"])[0].is_mla]
    assert [p["id"] for p in mla] == ["ms-swift-moonlight-16b-a3b-pp2-ep4"]
    # The source's uneven split (decoder_last_pipeline_num_layers 13): 27 layers do not split evenly over PP 2.
    assert mla[0]["last_stage_layers"] == 13
