"""``plan --args-file``: the proposed layouts keep what the launch turned on, and each block, pasted into that
launch, passes ``check`` in one paste: the dict's sizes and the recompute keys move with the layout."""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from helpers import FIXTURES, ROOT, require
from verl_mindspeed.cli import main
from verl_mindspeed.launch import evaluate, read_args_file

sys.path.insert(0, str(ROOT / "tests" / "conformance"))
import fixpoint  # noqa: E402

LAUNCH = FIXTURES / "plan" / "qwen3_30b_a3b_sp_mc2_2x16.args"
MODEL = str(FIXTURES / "models" / "Qwen3-30B-A3B")


@pytest.mark.parametrize("release", ["26.1.0_core_r0.12.1"])
def test_the_top_layouts_keep_sp_and_mc2_and_paste_into_the_launch(capsys, release):
    require("verl")
    assert main(["plan", "--args-file", str(LAUNCH), "--model", MODEL, "--mindspeed-release", release, "--top", "3",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    shown = [p for p in data["layouts"] if p["fits"]][:3]
    assert len(shown) == 3 and all(p["tensor_model_parallel_size"] >= 2 for p in shown)  # SP and MC2 need TP 2+
    base = read_args_file(str(LAUNCH))
    for plan in shown:
        argv = fixpoint.paste(base, [" ".join(shlex.quote(w) for w in plan["overrides"])])
        res = evaluate(argv, release=release, model_config=MODEL)
        assert not res.errors, (plan["overrides"], [i.line() for i in res.errors])
        assert "ref-lost-inherited" not in {i.rule for i in res.issues}
        otc = "actor_rollout_ref.actor.megatron.override_transformer_config."
        assert f"++{otc}tensor_model_parallel_size={plan['tensor_model_parallel_size']}" in plan["overrides"] or \
            plan["tensor_model_parallel_size"] == 4  # the dict's TP moves with the engine's
