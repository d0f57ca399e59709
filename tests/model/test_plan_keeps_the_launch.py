"""``plan --args-file``: the proposed layouts keep what the launch turned on, and each block, pasted into that
launch, passes ``check`` in one paste: the dict's sizes and the recompute keys move with the layout."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import sys

import pytest

from helpers import FIXTURES, ROOT, require
from verl_mindspeed.cli import main
from verl_mindspeed.launch import evaluate, read_args_file, read_launch_file

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


def _ascend_launches() -> dict:
    path = ROOT / "tests" / "model" / "test_ascend_launches.py"
    spec = importlib.util.spec_from_file_location("ascend_launches", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {name: (module.LAUNCHES / f"{name}.args", model) for name, model in module.MODELS.items()}


ASCEND = _ascend_launches()
_F, _B = FIXTURES / "models", ROOT / "benchmarks" / "data" / "models"
#: Public launches by others (tests/fixtures/public) whose model has a config here, by the model they train.
PUBLIC = {name: (FIXTURES / "public" / f"{name}.sh", model) for name, model in {
    "ci_dapo_qwen3_30b_mindspeed_main_dapo_npu": _F / "Qwen3-30B-A3B",
    "dapo_deepseekv3_671b_8k_ascend_recipe_npu": _F / "DeepSeek-V3",
    "dapo_qwen3_moe_30b_megatron_recipe_npu": _F / "Qwen3-30B-A3B",
    "dapo_transfer_queue_qwen3_30b_megatron_npu": _F / "Qwen3-30B-A3B",
    "dppo_qwen3_30b_a3b_megatron_npu": _F / "Qwen3-30B-A3B",
    "grpo_qwen3_235b_256k_ascend_extras_npu": _B / "Qwen3-235B-A22B",
    "mindspeed_rl_dapo_qwen3_235b_megatron_a3_npu": _B / "Qwen3-235B-A22B",
    "mindspeed_rl_st_moonlight_16b_dapo_npu": _F / "Moonlight-16B-A3B-Instruct",
    "nightly_grpo_qwen3_30b_megatron_sglang_npu": _F / "Qwen3-30B-A3B",
    "nightly_gspo_qwen3_30b_multinode_npu": _F / "Qwen3-30B-A3B",
    "pr3628_qwen3_ascend_235b_r1_ascend_entry_npu": _B / "Qwen3-235B-A22B",
    "pr4855_grpo_qwen3_235b_64card_npu": _B / "Qwen3-235B-A22B",
    "pr5497_grpo_qwen3_32b_1k_256k_megatron_npu": _B / "Qwen3-32B",
    "pr6585_grpo_qwen3_30b_megatron_r3_npu": _F / "Qwen3-30B-A3B",
    "r1_ascend_deepseekv3_671b_grpo_npu": _F / "DeepSeek-V3",
    "true_on_policy_gspo_qwen3_30b_megatron_npu": _F / "Qwen3-30B-A3B",
}.items()}


@pytest.mark.parametrize("name", sorted(ASCEND) + sorted(PUBLIC))
def test_plans_top_layouts_paste_into_every_real_launch_in_one_round(capsys, name):
    """Over the public Ascend launches and the public launches by others with a model here: each of plan's top three
    fitting layouts, pasted as printed, leaves an Ascend launch with no error and brings a launch by others no error
    it did not have, keeping SP and MC2 and the launch's recompute where the layout fits with it."""
    require("verl")
    launch, model = ASCEND.get(name) or PUBLIC[name]
    main(["plan", "--args-file", str(launch), "--model", str(model), "--top", "3", "--json"])
    data = json.loads(capsys.readouterr().out)
    shown = [p for p in data["layouts"] if p["fits"]][:3]
    source = read_launch_file(str(launch), {"HOME": "/home/user"})
    before = {(i.rule, i.key) for i in evaluate(list(source.argv), model_config=str(model), entry=source.entry).errors}
    own = data["launch"]["layout"]
    for plan in shown:
        argv = fixpoint.paste(list(source.argv), [" ".join(shlex.quote(w) for w in plan["overrides"])])
        res = evaluate(argv, model_config=str(model), entry=source.entry)
        brought = [i.line() for i in res.errors if name in ASCEND or (i.rule, i.key) not in before]
        assert not brought, (name, plan["overrides"], brought)  # an Ascend launch is left with no error at all
        tried = {t["recompute"]: t["memory_gib_per_device"] for t in plan["recompute_tried"]}
        if own["recompute"] != "none" and own["recompute"] in tried:  # tried first: kept unless it does not fit
            assert plan["recompute"] == own["recompute"] or \
                tried[own["recompute"]] > data["cluster"]["device_memory_gib"], (name, plan["recompute"], tried)


def test_plan_and_check_give_the_launch_the_same_peak_stage_and_phase(capsys):
    """One memory model: the launch's own row in plan and check's estimate for the same launch agree within 1%,
    on the same device size and usable share, and name the same stage and phase."""
    require("verl")
    main(["plan", "--args-file", str(LAUNCH), "--model", MODEL, "--json"])
    data = json.loads(capsys.readouterr().out)
    own = data["layouts"][data["launch"]["row"] - 1]
    main(["check", "--args-file", str(LAUNCH), "--model-config", MODEL, "--format", "json"])
    (note,) = [n for n in json.loads(capsys.readouterr().out)["notes"] if n["rule"] == "model-memory"]
    found = re.search(r"peak ([\d.]+) GiB .* on stage (\d+) in its (\w+) phase .* has (\d+) GiB, ([\d.]+) usable",
                      note["message"])
    peak, stage, phase, device, usable = found.groups()
    assert abs(float(peak) - own["memory_gib_per_device"]) <= 0.01 * own["memory_gib_per_device"]
    assert (int(stage), phase) == (own["peak_stage"], own["peak_phase"])
    assert float(device) == 64 and float(usable) == data["cluster"]["device_memory_gib"]


def test_a_kept_full_recompute_fits_each_stage_and_a_check_fix_never_undoes_the_block(tmp_path, capsys):
    """A launch's full/uniform/N is kept only where N divides every stage's layers (megatron-core 0.12 steps through
    them unclamped); and on an older verl a companion from check never sets a key the block itself sets."""
    require("verl")
    text = LAUNCH.read_text(encoding="utf-8").replace("recompute_num_layers=1", "recompute_num_layers=24")
    assert text != LAUNCH.read_text(encoding="utf-8")
    launch = tmp_path / "n24.args"
    launch.write_text(text, encoding="utf-8")
    main(["plan", "--args-file", str(launch), "--model", MODEL, "--top", "20", "--json"])
    for plan in json.loads(capsys.readouterr().out)["layouts"]:
        if plan["recompute"] == "full:uniform/24":
            assert 48 // plan["pipeline_model_parallel_size"] % 24 == 0, plan["pipeline_model_parallel_size"]
    main(["plan", "--args-file", str(LAUNCH), "--model", MODEL, "--verl-version", "0.6.0", "--top", "4", "--json"])
    for plan in json.loads(capsys.readouterr().out)["layouts"][:4]:
        keys = [w.lstrip("+").split("=", 1)[0] for w in plan["overrides"]]
        assert len(keys) == len(set(keys)), [k for k in keys if keys.count(k) > 1]
