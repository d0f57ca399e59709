"""The step-time proxy against published measured throughput: the data, its layouts, and the docs' table."""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import replace

import pytest

from helpers import ROOT
from verl_mindspeed.catalog.universe import DEFAULT_RELEASE
from verl_mindspeed.model import Layout, enumerate_layouts, load_model_spec
from verl_mindspeed.model.throughput import MICROBATCHES_PER_DEVICE, step_time

DATA = ROOT / "benchmarks" / "data" / "measured_throughput.json"
POINTS = json.loads(DATA.read_text(encoding="utf-8"))["points"]
DOCS = {lang: (ROOT / path).read_text(encoding="utf-8")
        for lang, path in (("en", "docs/model-checks.md"), ("zh", "docs/zh/model-checks.md"))}


def _script():
    spec = importlib.util.spec_from_file_location("compare_throughput", ROOT / "benchmarks" / "compare_throughput.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


COMPARE = _script()


def test_every_point_cites_its_source_and_states_its_setting():
    ids = [p["id"] for p in POINTS]
    assert len(ids) == len(set(ids))
    for p in POINTS:
        assert "https://" in p["source"] and p["hardware"] and p["framework"], p["id"]
        assert p["device"] in COMPARE.RATES and p["precision"] in COMPARE.RATES[p["device"]], p["id"]
        assert p["unit"] in ("tokens/s/device", "TFLOP/s/device") and p["measured"] > 0, p["id"]
        assert p["world"] % p["gpus_per_node"] == 0 and p["global_batch_size"] % p["micro_batch_size"] == 0
        assert (ROOT / p["model"] / "config.json").is_file(), p["id"]


@pytest.mark.parametrize("point", POINTS, ids=[p["id"] for p in POINTS])
def test_every_layout_is_one_the_enumerator_accepts(point):
    spec, note = load_model_spec(ROOT / point["model"])
    assert spec is not None, note
    lay = COMPARE.layout_of(point)
    want = replace(lay, recompute=Layout().recompute)
    found = enumerate_layouts(spec, point["world"] // point["gpus_per_node"], point["gpus_per_node"],
                              point["seq_len"], release=DEFAULT_RELEASE, interleave=True)
    if point.get("outside_enumerator"):  # a measured layout plan cannot propose: said, and kept true
        assert want not in set(found), f"{point['id']}: enumerated now; drop its outside_enumerator"
        assert step_time(spec, lay, point["world"], point["gpus_per_node"], point["seq_len"],
                         point["micro_batch_size"], global_batch=point["global_batch_size"]).total > 0
    else:
        assert want in set(found), f"{point['id']}: {want} is not enumerated"
    dp = point["world"] // (lay.tp * lay.pp * lay.cp)
    assert point["global_batch_size"] % (dp * point["micro_batch_size"]) == 0, "whole micro-batches per replica"


def test_a_group_shares_model_cluster_sequence_and_device():
    groups: dict[str, set] = {}
    for p in POINTS:
        groups.setdefault(p["group"], set()).add((p["model"], p["world"], p["device"], p["seq_len"], p["unit"]))
    assert all(len(members) == 1 for members in groups.values()), groups
    assert sum(sum(p["group"] == g for p in POINTS) > 1 for g in groups) >= 2, "at least two groups to rank"


def test_the_docs_tables_are_what_the_script_computes():
    rows, found = COMPARE.compare()
    lines = COMPARE.table(rows) + COMPARE.agreement_rows(found) + COMPARE.summary(rows) + \
        COMPARE.plan_table(COMPARE.plan_rows(rows))
    assert len(COMPARE.table(rows)) == len(POINTS)
    for lang, text in DOCS.items():
        missing = [line for line in lines if line not in text]
        assert not missing, f"docs ({lang}) differ from benchmarks/compare_throughput.py: {missing}"


def test_agreement_counts_pairs_and_ties():
    rows, found = COMPARE.compare()
    for a in found:
        members = [r for r in rows if a.group in (r.point["group"], f"{r.point['group']}, micro-batch {a.micro}")
                   and a.micro in (None, r.point["micro_batch_size"])]
        assert a.points == len(members) and a.agree + a.disagree + a.tied <= a.points * (a.points - 1) // 2
        if a.rho is not None:
            assert -1.0 <= a.rho <= 1.0
    assert COMPARE.spearman([3.0, 2.0, 1.0], [30.0, 20.0, 10.0]) == pytest.approx(1.0)
    assert COMPARE.spearman([3.0, 2.0, 1.0], [10.0, 20.0, 30.0]) == pytest.approx(-1.0)
    assert COMPARE.spearman([1.0, 2.0], [5.0, 5.0]) is None


def test_the_tflops_conversion_is_megatrons_count():
    spec, _ = load_model_spec(ROOT / "benchmarks" / "data" / "models" / "Llama-2-7b")
    # 12 L h^2 (1 + 1 + s/h + 1.5 ffn/h + V/(2 L h)) for Llama-2-7B at 32k: 9.12e10 FLOP per token
    assert COMPARE.megatron_flops_per_token(spec, 32768) == pytest.approx(9.118e10, rel=1e-3)


def test_global_batch_defaults_to_the_planners_step():
    spec, _ = load_model_spec(ROOT / "tests" / "fixtures" / "models" / "Qwen3-30B-A3B")
    lay = Layout(tp=2, pp=4, ep=4)
    assert step_time(spec, lay, 16, 8, 4096) == step_time(spec, lay, 16, 8, 4096,
                                                         global_batch=MICROBATCHES_PER_DEVICE * 16)
    fewer = step_time(spec, lay, 16, 8, 4096, global_batch=32)
    assert fewer.bubble / fewer.total > step_time(spec, lay, 16, 8, 4096).bubble / step_time(spec, lay, 16, 8,
                                                                                             4096).total


def test_the_proxy_orders_every_large_set_better_than_chance_and_plan_lists_its_fastest_near_the_top():
    """Every set of at least five measured layouts (and each of its micro-batch sizes with five, the pairs plan
    compares) is ordered better than chance, and the measured fastest of each is in the top tenth of the layouts
    plan lists for that model and cluster."""
    rows, found = COMPARE.compare()
    large = [a for a in found if a.points >= COMPARE.RANKED_GROUP]
    assert large and all(a.rho is not None and a.rho > 0 for a in large), [(a.group, a.rho) for a in large]
    ranked = COMPARE.plan_rows(rows)
    assert ranked and all(r.row <= 0.1 * r.fitting for r in ranked), ranked
