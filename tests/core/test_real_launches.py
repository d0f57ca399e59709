"""Launch lines others wrote and ran: verl's own Ascend CI job must not be refused for what it runs.

``verl_ci_qwen3_0_6b_megatron_npu.args`` is the argv of verl's CI job ``e2e_ppo_trainer_megatron-qwen3`` on A3 NPUs
(the header cites the script and the workflow line): PP 2, VPP 2 with mbridge, actor, ref and critic.
"""

from __future__ import annotations

from helpers import FIXTURES
from verl_mindspeed.compose._script import read_launch_file
from verl_mindspeed.launch import evaluate

CI = FIXTURES / "scripts" / "verl_ci_qwen3_0_6b_megatron_npu.args"
QWEN3_06B = str(FIXTURES / "models" / "Qwen3-0.6B")
VPP = "megatron.virtual_pipeline_model_parallel_size"


def test_verl_ci_runs_vpp_with_mbridge_on_npu_which_is_a_warning_not_an_error(base_cfg):
    """MindSpeed's verl guide says mbridge does not support VPP yet; verl's CI runs the pair on NPU, and no code
    refuses it. The only errors left are the job's grad_offload lines, which verl 0.9.1 (installed here) removed;
    without them the launch passes."""
    argv = read_launch_file(str(CI), {"HOME": "/home/user"}).argv
    res = evaluate(argv, model_config=QWEN3_06B)
    assert {(i.rule, i.key) for i in res.errors} == {
        ("verl-key-removed", "actor_rollout_ref.actor.megatron.grad_offload"),
        ("verl-key-removed", "critic.megatron.grad_offload")}
    assert {(i.rule, i.key) for i in res.warnings if i.rule == "mbridge-vpp"} == {
        ("mbridge-vpp", f"actor_rollout_ref.actor.{VPP}"), ("mbridge-vpp", f"critic.{VPP}")}
    kept = [a for a in argv if ".grad_offload=" not in a]
    assert not evaluate(kept, model_config=QWEN3_06B).errors
