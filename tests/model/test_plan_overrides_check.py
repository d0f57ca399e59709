"""The overrides `plan` prints are accepted by `check` for the same model and cluster.

Every top layout, and one layout of every CP algorithm and every kind of recompute choice
plan can print (none, selective, full/block, full/uniform), with the run options that add
overrides of their own (no distributed optimizer, optimizer offload, ref offload, fused kernels, bf16
gradient reduction).
"""

from __future__ import annotations

import json

import pytest

from helpers import FIXTURES
from verl_mindspeed.cli import main

CASES = [  # model, nodes, devices per node, plan flags, recompute kinds the picked layouts must include
    ("Qwen3-30B-A3B", 1, 16, ["--seq-len", "8192"], {"none", "sel"}),
    ("Moonlight-16B-A3B-Instruct", 1, 8, ["--seq-len", "8192"], {"none", "sel"}),
    ("Qwen3-0.6B", 1, 8, ["--no-distributed-optimizer", "--optimizer-offload-fraction", "0.5", "--ref-param-offload",
                          "--use-fused-kernels", "--no-grad-reduce-in-fp32"], {"none"}),
    ("Qwen3-0.6B", 1, 8, ["--full-recompute", "--seq-len", "16384"], {"full"}),
    ("DeepSeek-V3", 32, 8, ["--mindspeed-release", "2.3.0_core_r0.12.1"], {"full"}),
]


def _kind(layout: dict) -> str:
    rc = layout["recompute"]
    return rc.split("/")[0] if rc.startswith("full") else rc.split(":")[0]


def _representatives(layouts: list[dict]) -> list[dict]:
    chosen, seen = layouts[:4], set()
    for layout in layouts:
        keys = {("algo", layout["context_parallel_algo"]), ("recompute", _kind(layout)),
                ("split", layout["num_layers_in_first_pipeline_stage"] is not None),
                ("vpp", layout["virtual_pipeline_model_parallel_size"] is not None)}
        if keys - seen:
            seen |= keys
            chosen.append(layout)
    return chosen


@pytest.mark.parametrize("model, nnodes, per_node, flags, kinds", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_planned_layouts_pass_check(base_cfg, capsys, model, nnodes, per_node, flags, kinds):
    path = str(FIXTURES / "models" / model)
    main(["plan", "--model", path, "--nnodes", str(nnodes), "--n-gpus-per-node", str(per_node), "--json", *flags])
    layouts = json.loads(capsys.readouterr().out)["layouts"]
    picked = _representatives(layouts)
    release = flags[flags.index("--mindspeed-release") + 1] if "--mindspeed-release" in flags else None
    assert len(picked) >= 4
    assert kinds <= {_kind(lay).split(":")[0] for lay in picked}
    for layout in picked:
        argv = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo",
                "actor_rollout_ref.actor.use_kl_loss=True", f"trainer.nnodes={nnodes}",
                f"trainer.n_gpus_per_node={per_node}", "data.train_batch_size=64",
                "actor_rollout_ref.actor.ppo_mini_batch_size=64", "actor_rollout_ref.actor.use_dynamic_bsz=True",
                "actor_rollout_ref.rollout.name=vllm", *layout["overrides"]]
        extra = ["--mindspeed-release", release] if release else []
        code = main(["check", "--json", "--model-config", path, *extra, *argv])
        data = json.loads(capsys.readouterr().out)
        assert code == 0, (layout["overrides"], data["errors"])
