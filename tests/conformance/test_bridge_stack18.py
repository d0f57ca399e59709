"""The third stack, judged on its executed part: MindSpeed core_r0.18.0's verdicts against Megatron-Bridge 0.5.1 on
megatron-core 0.18.2, over the differential's generated space (``bridge18``). CI judges a sample; the full run is
``VERL_MINDSPEED_BRIDGE18_CASES=2000`` (figures in docs/conformance.md)."""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.conformance

CASES = int(os.environ.get("VERL_MINDSPEED_BRIDGE18_CASES", "40"))


@pytest.fixture(scope="module")
def judged(bridge_18):
    import bridge18
    import differential

    rows = bridge18.judge(differential.corpus(CASES), print)
    print("\ncore_r0.18.0 (Megatron-Bridge 0.5.1 on megatron-core 0.18.2):", bridge18.table(rows))
    for message in sorted({r["bridge"] for r in rows if r["klass"] == "mindspeed-absent"}):
        print("  megatron-core's own check, without MindSpeed:", message)
    return rows


def test_the_sample_reaches_the_bridge_and_some_launches_are_refused(judged):
    import bridge18

    counts = bridge18.table(judged)
    assert counts["configs"] >= CASES // 2 and counts["refused"] >= 1, counts


@pytest.mark.parametrize("klass", ["missed", "stricter"])
def test_no_disagreement_with_the_executed_bridge(judged, klass):
    found = [r for r in judged if r["klass"] == klass]
    assert not found, found[:5]
