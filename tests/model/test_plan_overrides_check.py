"""The overrides `plan` prints are accepted by `check` for the same model and cluster."""

from __future__ import annotations

import json

import pytest

from helpers import FIXTURES
from verl_mindspeed.cli import main

CASES = [
    ("Qwen3-30B-A3B", 1, 16),
    ("Moonlight-16B-A3B-Instruct", 1, 8),
    ("Qwen3-0.6B", 1, 8),
]


@pytest.mark.parametrize("model, nnodes, per_node", CASES, ids=[c[0] for c in CASES])
def test_planned_layouts_pass_check(base_cfg, capsys, model, nnodes, per_node):
    path = str(FIXTURES / "models" / model)
    assert main(["plan", "--model", path, "--nnodes", str(nnodes), "--n-gpus-per-node", str(per_node),
                 "--top", "4", "--json"]) == 0
    layouts = json.loads(capsys.readouterr().out)["layouts"]
    assert layouts
    for layout in layouts[:4]:
        argv = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo",
                "actor_rollout_ref.actor.use_kl_loss=True", f"trainer.nnodes={nnodes}",
                f"trainer.n_gpus_per_node={per_node}", "data.train_batch_size=64",
                "actor_rollout_ref.actor.ppo_mini_batch_size=64", "actor_rollout_ref.actor.use_dynamic_bsz=True",
                *layout["overrides"]]
        code = main(["check", "--json", "--model-config", path, *argv])
        data = json.loads(capsys.readouterr().out)
        assert code == 0, (layout["overrides"], data["errors"])
