"""``verl-mindspeed plan``: JSON shape, exit codes, and a start that imports no torch/megatron/verl."""

from __future__ import annotations

import json
import subprocess
import sys

from helpers import FIXTURES, ROOT

from verl_mindspeed.cli import plan

MODELS = FIXTURES / "models"
KEYS = {"tensor_model_parallel_size", "pipeline_model_parallel_size", "virtual_pipeline_model_parallel_size",
        "context_parallel_size", "expert_model_parallel_size", "expert_tensor_parallel_size",
        "memory_gib_per_device", "fits", "overrides"}


def run(capsys, *argv):
    import argparse

    parser = argparse.ArgumentParser()
    plan.add_parser(parser.add_subparsers(dest="command"))
    code = plan.run(parser.parse_args(["plan", *argv]))
    return code, capsys.readouterr()


def test_json_shape(capsys):
    code, out = run(capsys, "--model", str(MODELS / "Qwen3-30B-A3B"), "--nnodes", "1", "--n-gpus-per-node", "16",
                    "--top", "5", "--json")
    data = json.loads(out.out)
    assert code == 0 and len(data["layouts"]) == 5 and KEYS <= set(data["layouts"][0])
    assert data["model"]["architecture"] == "Qwen3MoeForCausalLM"
    assert data["model"]["parameters_total"] > data["model"]["parameters_active"]


def test_text_table(capsys):
    code, out = run(capsys, "--model", str(MODELS / "Qwen3-0.6B"), "--nnodes", "1", "--n-gpus-per-node", "8")
    assert code == 0 and "TP  PP  VPP  CP  EP  ETP" in out.out and "actor_rollout_ref.ref.megatron" in out.out


def test_unreadable_model_exits_2(capsys, tmp_path):
    code, out = run(capsys, "--model", str(tmp_path), "--nnodes", "1", "--n-gpus-per-node", "8")
    assert code == 2 and "no model config" in out.err


def test_plan_imports_no_heavy_stack():
    code = ("import sys, verl_mindspeed.cli.plan; "
            "print([m for m in ('torch', 'megatron', 'verl', 'ray') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT / "src")})
    assert out.stdout.strip() == "[]"
