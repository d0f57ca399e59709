"""``verl-mindspeed plan``: JSON shape, exit codes, robustness, the chart, and a start that imports no torch/megatron/verl."""  # noqa: E501  (a docstring: re-wrapping would change its value)

from __future__ import annotations

import json
import math
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from helpers import FIXTURES, ROOT
from verl_mindspeed.cli import main, plan
from verl_mindspeed.model.memory import COMPONENTS

MODELS = FIXTURES / "models"
KEYS = {"tensor_model_parallel_size", "pipeline_model_parallel_size", "virtual_pipeline_model_parallel_size",
        "context_parallel_size", "context_parallel_algo", "ulysses_degree_in_cp", "expert_model_parallel_size",
        "expert_tensor_parallel_size", "recompute", "memory_gib_per_device", "memory_breakdown_gib", "stages",
        "step_time_proxy", "fits", "overrides"}
SVG = "{http://www.w3.org/2000/svg}"


def run(capsys, *argv):
    code = main(["plan", *argv])
    return code, capsys.readouterr()


def model_args(name="Qwen3-0.6B", nnodes="1", gpus="8"):
    return ["--model", str(MODELS / name), "--nnodes", nnodes, "--n-gpus-per-node", gpus]


def test_json_shape_and_breakdown_sums_to_the_peak(capsys):
    code, out = run(capsys, *model_args("Qwen3-30B-A3B", "1", "16"), "--top", "5", "--json")
    data = json.loads(out.out)
    assert code == 0 and len(data["layouts"]) == 5 and KEYS <= set(data["layouts"][0])
    assert data["model"]["architecture"] == "Qwen3MoeForCausalLM"
    assert data["model"]["parameters_total"] > data["model"]["parameters_active"]
    for layout in data["layouts"]:
        parts = layout["memory_breakdown_gib"]
        assert set(parts) == set(COMPONENTS)
        assert math.isclose(sum(parts.values()), layout["memory_gib_per_device"], abs_tol=0.02)
        assert len(layout["stages"]) == layout["pipeline_model_parallel_size"]


def test_text_table_in_both_languages(capsys):
    code, out = run(capsys, *model_args(), "--lang", "en")
    assert code == 0 and "TP  PP  VPP  CP" in out.out and "actor_rollout_ref.ref.megatron" in out.out
    assert "memory bar: W weights" in out.out and "|" in out.out
    code, out = run(capsys, *model_args(), "--lang", "zh")
    assert code == 0 and "有效布局" in out.out and "显存条" in out.out


@pytest.mark.parametrize("flags, fragment", [
    (["--device-memory-gib", "-1"], "--device-memory-gib must be a number in (0, 1e+06]"),
    (["--device-memory-gib", "0"], "--device-memory-gib must be a number in (0, 1e+06]"),
    (["--device-memory-gib", "nan"], "--device-memory-gib must be a number"),
    (["--seq-len", "0"], "--seq-len must be a whole number >= 1"),
    (["--seq-len", "abc"], "--seq-len must be a whole number >= 1"),
    (["--micro-batch-size", "-2"], "--micro-batch-size must be a whole number >= 1"),
    (["--top", "0"], "--top must be a whole number >= 1"),
    (["--optimizer-offload-fraction", "1.5"], "--optimizer-offload-fraction must be a number in [0, 1]"),
])
def test_bad_flags_exit_2_with_one_line(capsys, flags, fragment):
    code, out = run(capsys, *model_args(), *flags)
    assert code == 2 and out.out == "" and fragment in out.err and out.err.count("\n") == 1


@pytest.mark.parametrize("flags, fragment", [
    (["--seq-len", "0"], "--seq-len must be a whole number >= 1 (got 0)"),
    (["--nnodes", "70000"], "--nnodes must be at most 65536 (got 70000)"),
    (["--headroom", "inf"], "--headroom must be a number in (0, 1]"),
    (["--sort", "fastest"], "invalid value 'fastest'"),
])
def test_bad_flags_under_json_are_one_json_object_and_one_line(capsys, flags, fragment):
    """As check: exit 2, one JSON object on stdout (exit_code 2, the message as 'fatal'), one line on stderr."""
    code, out = run(capsys, *model_args(), "--json", *flags)
    data = json.loads(out.out)
    assert code == 2 and data["ok"] is False and data["exit_code"] == 2 and fragment in data["fatal"]
    assert fragment in out.err and out.err.count("\n") == 1 and out.err.startswith("verl-mindspeed plan: ")


def test_a_bad_number_is_in_the_users_language(capsys):
    code, out = run(capsys, *model_args(), "--seq-len", "abc", "--lang", "zh")
    assert code == 2 and out.err == "verl-mindspeed plan: --seq-len 必须是 >= 1 的整数（收到 abc）\n"


def test_values_the_args_file_fills_in_get_the_command_lines_checks(capsys, tmp_path):
    """--args-file fills options as text after parsing: the same check refuses a bad one, with the same line."""
    launch = tmp_path / "launch.args"
    launch.write_text((ROOT / "examples" / "qwen3_8b_dense_grpo.args").read_text() + "trainer.nnodes=0\n")
    code, out = run(capsys, "--args-file", str(launch), "--model", str(MODELS / "Qwen3-8B"))
    assert code == 2 and out.err == "verl-mindspeed plan: --nnodes must be a whole number >= 1 (got 0)\n"


def test_help_is_in_the_users_language(capsys):
    code, out = run(capsys, "--help", "--lang", "zh")
    helps = {"--model": "config.json", "--seq-len": "序列", "--headroom": "0.9", "--top": "K", "--tp": "TP",
             "--chart": "SVG", "--json": "JSON", "--lang": "语言"}
    assert code == 0 and out.out.startswith("用法：verl-mindspeed plan")
    lines = out.out.splitlines()
    for flag, word in helps.items():  # each option's help (on its line or the next) is Chinese
        at = next(i for i, line in enumerate(lines) if line.strip().startswith(flag + " "))
        text = " ".join(lines[at:at + 2])
        assert word in text and any("\u4e00" <= ch <= "\u9fff" for ch in text), flag
    english = main(["plan", "--help", "--lang", "en"]) == 0 and capsys.readouterr().out
    assert "tokens of one sequence" in english and "tokens of one sequence" not in out.out


@pytest.mark.parametrize("key, value, fragment", [
    ("num_attention_heads", 0, "num_attention_heads is 0"),
    ("num_hidden_layers", "28", 'num_hidden_layers is "28"'),
    ("num_hidden_layers", None, "num_hidden_layers is null"),
    ("hidden_size", 1024.0, "hidden_size is 1024.0"),
    ("hidden_size", float("nan"), "hidden_size is NaN"),
    ("vocab_size", [151936], "vocab_size is [151936]"),
    ("architectures", "Qwen3ForCausalLM", "architectures must be a list"),
])
def test_bad_config_values_exit_2_with_one_line(capsys, tmp_path, key, value, fragment):
    cfg = json.loads((MODELS / "Qwen3-0.6B" / "config.json").read_text())
    cfg[key] = value
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    code, out = run(capsys, "--model", str(tmp_path), "--nnodes", "1", "--n-gpus-per-node", "8")
    assert code == 2 and fragment in out.err and out.err.count("\n") == 1 and "Traceback" not in out.err


def test_a_huge_layer_count_is_refused_quickly(capsys, tmp_path):
    cfg = json.loads((MODELS / "Qwen3-0.6B" / "config.json").read_text())
    cfg["num_hidden_layers"] = 100_000
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    code, out = run(capsys, "--model", str(tmp_path), "--nnodes", "1", "--n-gpus-per-node", "8")
    assert code == 2 and "100000 layers: plan handles at most 1024" in out.err


def test_nothing_fits_exits_1_without_override_blocks(capsys):
    code, out = run(capsys, *model_args("DeepSeek-V3", "8", "8"))
    assert code == plan.NO_FIT == 1 and "nothing fits" in out.out
    assert "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=" not in out.out
    code, out = run(capsys, *model_args("DeepSeek-V3", "8", "8"), "--json", "--top", "3")
    data = json.loads(out.out)
    assert code == 1 and data["fitting_layouts"] == 0 and not any(lay["fits"] for lay in data["layouts"])


def test_unreadable_model_exits_2(capsys, tmp_path):
    code, out = run(capsys, "--model", str(tmp_path), "--nnodes", "1", "--n-gpus-per-node", "8")
    assert code == 2 and "no model config" in out.err


@pytest.mark.parametrize("suffix", ["svg", "html"])
def test_chart_has_one_bar_per_layout_every_component_and_the_limit(capsys, tmp_path, suffix):
    path = tmp_path / f"plan.{suffix}"
    code, out = run(capsys, *model_args(), "--top", "6", "--chart", str(path))
    assert code == 0 and str(path) in out.out
    text = path.read_text(encoding="utf-8")
    if suffix == "html":
        assert text.startswith("<!DOCTYPE html>")
        text = text[text.index("<svg"):text.index("</svg>") + len("</svg>")]
    root = ET.fromstring(text)
    bars = [g for g in root.iter(f"{SVG}g") if g.get("class") == "bar"]
    assert len(bars) == 6 and all(b.get("data-layout") for b in bars)
    legend = {g.get("data-component") for g in root.iter(f"{SVG}g") if g.get("class") == "legend"}
    assert legend == set(COMPONENTS)
    limits = [line for line in root.iter(f"{SVG}line") if line.get("class") == "limit"]
    assert len(limits) == 1
    segments = {r.get("data-component") for r in root.iter(f"{SVG}rect") if r.get("class") == "segment"}
    assert {"weights", "gradients", "optimizer", "activations", "logits", "ref_weights", "runtime"} <= segments
    labels = "".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert "usable limit 57.6 GiB" in labels and "optimizer states" in labels  # 90% of 64 GiB (--headroom)


def test_plan_imports_no_heavy_stack():
    code = ("import sys, verl_mindspeed.cli.plan; "
            "print([m for m in ('torch', 'megatron', 'verl', 'ray') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT / "src")})
    assert out.stdout.strip() == "[]"


def test_no_layout_plan_calls_fitting_draws_checks_memory_warning(capsys):
    """plan's headroom is check's warning threshold: the top layout it calls fitting, pasted into check, gets no
    model-memory warning."""
    import json

    from verl_mindspeed.cli import main as cli_main

    model = str(ROOT / "tests" / "fixtures" / "models" / "Qwen3-8B")
    assert cli_main(["plan", "--model", model, "--nnodes", "1", "--n-gpus-per-node", "8", "--json", "--top", "1"]) == 0
    best = json.loads(capsys.readouterr().out)["layouts"][0]
    assert best["fits"] and best["memory_gib_per_device"] <= 0.9 * 64


def test_pinned_dimensions_keep_only_layouts_with_them(capsys):
    import json

    from verl_mindspeed.cli import main as cli_main

    model = str(ROOT / "tests" / "fixtures" / "models" / "Qwen3-30B-A3B")
    assert cli_main(["plan", "--model", model, "--nnodes", "2", "--n-gpus-per-node", "8", "--json",
                     "--tp", "2", "--ep", "8"]) == 0
    layouts = json.loads(capsys.readouterr().out)["layouts"]
    assert layouts and {(p["tensor_model_parallel_size"], p["expert_model_parallel_size"]) for p in layouts} == {(2, 8)}
    assert cli_main(["plan", "--model", model, "--nnodes", "2", "--n-gpus-per-node", "8", "--tp", "x"]) == 2


def test_every_fitting_row_of_top_k_gets_its_overrides_numbered_like_the_table(capsys):
    import re

    code, out = run(capsys, *model_args("Qwen3-8B"), "--top", "5")
    table = [int(line.split()[0]) for line in out.out.splitlines() if re.match(r"^\d+\s+\d+\s+\d+", line)]
    fitting = [int(line.split()[0]) for line in out.out.splitlines()
               if re.match(r"^\d+\s+\d+\s+\d+", line) and " yes " in line]
    blocks = [int(n) for n in re.findall(r"^# layout (\d+):", out.out, re.M)]
    assert code == 0 and len(table) == 5 and blocks == fitting
    code, out = run(capsys, *model_args("Qwen3-8B"))
    assert len(re.findall(r"^# layout \d+:", out.out, re.M)) == 3 and "--top K shows them" in out.out


def test_args_file_fills_the_options_and_places_the_launchs_own_layout(capsys):
    """The repository's dense example: 8 devices, 1024 + 2048 tokens, micro-batch 2, TP4 PP2."""
    example = str(ROOT / "examples" / "qwen3_8b_dense_grpo.args")
    code, out = run(capsys, "--args-file", example, "--model", str(MODELS / "Qwen3-8B"), "--json")
    data = json.loads(out.out)
    assert code == 0 and data["cluster"]["world_size"] == 8
    assert data["assumptions"]["seq_len"] == 3072 and data["assumptions"]["micro_batch_size"] == 2
    assert data["launch"]["layout"]["tp"] == 4 and data["launch"]["layout"]["pp"] == 2
    row = data["launch"]["row"]
    assert row is not None and data["layouts"][row - 1]["tensor_model_parallel_size"] == 4
    code, out = run(capsys, "--args-file", example, "--model", str(MODELS / "Qwen3-8B"), "--seq-len", "8192")
    assert "(8192 x 2)" in out.out and "is row " in out.out.splitlines()[2]  # the launch's own layout first
    code, out = run(capsys, "--args-file", example)  # the example's model path is not on this machine
    assert code == 2 and "give --model" in out.err


def test_args_file_places_the_launchs_own_split_and_recompute(capsys):
    """Moonlight's nightly launch sets PP 4 with a 7/6 split and full/uniform/1: its row is that layout, estimated with
    the options verl reads from it (log-prob tokens, offloads); a --seq-len on the command line sets every phase."""
    launch = str(ROOT / "benchmarks" / "data" / "ascend_launches" / "run_dapo_moonlight-16b_megatron_npu.args")
    model = str(MODELS / "Moonlight-16B-A3B-Instruct")
    code, out = run(capsys, "--args-file", launch, "--model", model, "--json")
    data = json.loads(out.out)
    row = data["layouts"][data["launch"]["row"] - 1]
    assert (row["pipeline_model_parallel_size"], row["num_layers_in_first_pipeline_stage"],
            row["num_layers_in_last_pipeline_stage"], row["recompute"]) == (4, 7, 6, "full:uniform/1")
    assert data["launch"]["layout"]["num_layers_in_first_pipeline_stage"] == 7
    assumed = data["assumptions"]
    assert (assumed["seq_len"], assumed["log_prob_tokens"], assumed["dynamic_batch"]) == (3072, 9216, True)
    assert assumed["param_offload"] and assumed["optimizer_offload"] and assumed["ref_model"]
    code, out = run(capsys, "--args-file", launch, "--model", model, "--seq-len", "2048", "--json")
    assumed = json.loads(out.out)["assumptions"]
    assert assumed["log_prob_tokens"] is None and assumed["ref_log_prob_tokens"] is None
    code, out = run(capsys, "--args-file", launch, "--model", model)
    assert "TP1 PP4 CP2 EP2 ETP1 7/6 full:uniform/1 is row " in out.out


def test_bf16_gradients_halve_the_gradient_term(capsys):
    code, out = run(capsys, *model_args(), "--json", "--top", "1", "--pp", "1", "--tp", "1", "--cp", "1")
    fp32 = json.loads(out.out)["layouts"][0]["memory_breakdown_gib"]["gradients"]
    code, out = run(capsys, *model_args(), "--json", "--top", "1", "--pp", "1", "--tp", "1", "--cp", "1",
                    "--no-grad-reduce-in-fp32")
    data = json.loads(out.out)
    assert data["layouts"][0]["memory_breakdown_gib"]["gradients"] == pytest.approx(fp32 / 2, abs=2e-3)
    assert data["assumptions"]["grad_reduce_in_fp32"] is False
    assert any("override_ddp_config.grad_reduce_in_fp32=False" in o for o in data["layouts"][0]["overrides"])
