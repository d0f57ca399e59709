"""``check --fix`` writes every error's fix into the launch file where each argument is written, shows the diff and
checks the fixed file: the fixed errors are gone, the script still parses, and a second ``--fix`` changes nothing."""

from __future__ import annotations

import json
import subprocess

import pytest

from helpers import BASIC, require
from verl_mindspeed.cli import main

A = "actor_rollout_ref.actor.megatron"
O = f"{A}.override_transformer_config"
SCRIPT = f"""#!/bin/bash
set -e
TP=2
python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\
    algorithm.adv_estimator=grpo \\
    {' '.join(BASIC)} \\
    {A}.tensor_model_parallel_size=${{TP}} \\
    actor_rollout_ref.ref.megatron.tensor_model_parallel_size=${{TP}} \\
    {A}.grad_offload=True \\
    +{O}.use_flash_atn=True \\
    data.train_files=~/data/gsm8k/train.parquet \\
    {A}.param_offload=False
echo done
"""


@pytest.fixture(autouse=True)
def _verl():
    require("verl")


def _errors(capsys) -> list[str]:
    data = json.loads(capsys.readouterr().out)
    return sorted(f"{e['rule']} {e['key']}" for e in data["errors"])


def test_fix_writes_each_fix_where_the_argument_is_and_the_script_still_runs(tmp_path, capsys):
    path = tmp_path / "run.sh"
    path.write_text(SCRIPT)
    assert main(["check", "--args-file", str(path), "--json"]) == 1
    before = _errors(capsys)
    assert {e.split()[0] for e in before} >= {"unknown-key", "verl-key-removed", "hydra-parse"}
    assert main(["check", "--args-file", str(path), "--fix", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["errors"] == [] and data["fixed"]["applied"] == len(before)
    text = path.read_text()
    assert "grad_offload" not in text and "use_flash_atn" not in text
    assert f"++{O}.use_flash_attn=True" in text and "\"data.train_files='~/data/gsm8k/train.parquet'\"" in text
    assert f"{A}.tensor_model_parallel_size=${{TP}}" in text  # what was right is left as written
    assert subprocess.run(["bash", "-n", str(path)]).returncode == 0
    assert main(["check", "--args-file", str(path), "--fix"]) == 0  # idempotent: nothing left to fix
    assert "nothing to fix" in capsys.readouterr().out and path.read_text() == text


def test_deleting_the_last_argument_ends_the_command_on_the_line_before(tmp_path, capsys):
    """The launch's last line goes: the line before it must not continue into the next command."""
    path = tmp_path / "run.sh"
    path.write_text(SCRIPT.replace(f"\\\n    {A}.param_offload=False", f"\\\n    {A}.grad_offload=True"))
    fixed = tmp_path / "fixed.sh"
    assert main(["check", "--args-file", str(path), "--fix-to", str(fixed), "--json"]) == 0
    capsys.readouterr()
    lines = fixed.read_text().splitlines()
    assert not lines[lines.index("echo done") - 1].endswith("\\")  # no continuation left dangling
    assert subprocess.run(["bash", "-n", str(fixed)]).returncode == 0
    assert "grad_offload" in path.read_text()  # --fix-to leaves the original as it is


def test_an_args_file_gets_its_lines_replaced_deleted_and_added(tmp_path, capsys):
    path = tmp_path / "launch.args"
    path.write_text("\n".join(["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo", *BASIC,
                               f"{A}.tensor_model_parallel_size=2", f"{A}.grad_offload=True",
                               f"+{O}.use_ascend_mc2=True"]) + "\n")
    assert main(["check", "--args-file", str(path), "--fix", "--json"]) == 0
    lines = path.read_text().splitlines()
    assert f"{A}.grad_offload=True" not in lines
    assert f"++{O}.tensor_model_parallel_size=2" in lines  # MC2's companion, added as its own line
    assert path.read_text().endswith("\n")


def test_fix_needs_the_launch_file(capsys):
    assert main(["check", "--fix", "algorithm.adv_estimator=grpo"]) == 2


def test_check_files_fix_fixes_every_file(tmp_path, capsys):
    paths = []
    for n in range(2):
        path = tmp_path / f"run{n}.sh"
        path.write_text(SCRIPT)
        paths.append(str(path))
    assert main(["check-files", *paths]) == 1
    capsys.readouterr()
    assert main(["check-files", "--fix", *paths]) == 0
    assert "use_flash_atn" in capsys.readouterr().out  # the diffs, then the fixed files' verdicts
    assert main(["check-files", *paths]) == 0


CHAINED = """# a launch whose fixes uncover further errors: the critic's split, then its VPP
--config-name=ppo_megatron_trainer
algorithm.adv_estimator=grpo
actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1
actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1
actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1
critic.ppo_micro_batch_size_per_gpu=1
++actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2
++actor_rollout_ref.actor.megatron.expert_model_parallel_size=1
++actor_rollout_ref.actor.megatron.tensor_model_parallel_size=1
++actor_rollout_ref.actor.megatron.context_parallel_size=1
++actor_rollout_ref.actor.megatron.virtual_pipeline_model_parallel_size=2
++actor_rollout_ref.actor.megatron.override_transformer_config.moe_tp_extend_ep=True
++actor_rollout_ref.actor.megatron.override_transformer_config.expert_model_parallel_size=4
++actor_rollout_ref.actor.megatron.use_mbridge=False
++actor_rollout_ref.actor.use_kl_loss=True
++algorithm.adv_estimator="gae"
++trainer.nnodes=2
++trainer.n_gpus_per_node=8
"""


def test_one_fix_writes_the_fixes_its_own_fixes_uncover(tmp_path, capsys):
    """Fixing the actor's sizes makes the critic follow them, which uncovers the critic's split and VPP: one
    ``--fix`` goes round until no error has a fix left, and a second finds nothing to fix."""
    require("verl")
    from helpers import FIXTURES

    path = tmp_path / "chained.args"
    path.write_text(CHAINED, encoding="utf-8")
    model = str(FIXTURES / "models" / "Moonlight-16B-A3B-Instruct")
    args = ["check", "--args-file", str(path), "--model-config", model, "--mindspeed-release", "26.1.0_core_r0.12.1",
            "--format", "json"]
    assert main([*args, "--fix"]) == 0
    fixed = json.loads(capsys.readouterr().out)
    assert fixed["errors"] == [] and fixed["fixed"]["rounds"] >= 2, fixed["fixed"]
    text = path.read_text(encoding="utf-8")
    assert main([*args, "--fix"]) == 0 and path.read_text(encoding="utf-8") == text
    assert json.loads(capsys.readouterr().out)["fixed"]["applied"] == 0
