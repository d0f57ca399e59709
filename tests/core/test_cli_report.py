"""What a newcomer sees: the quiet report, file:line in the text report, every command-line problem, a whole pasted
command, and check-files naming what it skipped."""

from __future__ import annotations

from helpers import BASIC, ROOT
from verl_mindspeed.cli import main

O = "actor_rollout_ref.actor.megatron.override_transformer_config."
BASE = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo", *BASIC]
SCRIPT = ROOT / "tests" / "fixtures" / "scripts" / "one_step_off_mindspeed_npu.sh"


def test_quiet_prints_only_the_problems_and_the_verdict(base_cfg, capsys):
    assert main(["check", "--quiet", *BASE, f"+{O}use_flash_atn=True"]) == 1
    out = capsys.readouterr().out
    assert "use_flash_atn" in out and out.rstrip().splitlines()[-1].startswith("FAILED: 1 error,")
    assert "Tensor parallelism" not in out and "Notes" not in out and "verl-mindspeed check  |" not in out
    assert main(["check", *BASE, f"+{O}use_flash_atn=True"]) == 1
    assert "Tensor parallelism" in capsys.readouterr().out  # the full report keeps the feature table


def test_quiet_keeps_the_switches_no_check_covers(base_cfg, capsys):
    """A MindSpeed switch outside the feature guide is judged by no hand rule: quiet (check-files, the pre-commit
    hook) still names it, with the command that does judge it, and the verdict line counts it; a bare OK hid it."""
    assert main(["check", "--quiet", *BASE, f"+{O}moe_zero_memory=level1"]) == 0
    out = capsys.readouterr().out
    assert f"{O}moe_zero_memory" in out and "check --upstream" in out
    assert out.rstrip().splitlines()[-1].startswith("OK: 0 errors, 0 warnings; roles checked: actor; "
                                                     "1 switch not checked here;")


def test_the_text_report_names_file_and_line(base_cfg, capsys):
    assert main(["check", "--args-file", str(SCRIPT)]) == 1
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if "grad_offload" in ln and ln.lstrip().startswith("✗"))
    assert line.rstrip().endswith(f"({SCRIPT}:147)")


def test_a_key_written_twice_is_placed_at_each_line(base_cfg, tmp_path, capsys):
    """verl's CI scripts pass a removed key twice (a default early, the job's value later): each error is placed at
    its own argument's line, not both at the last."""
    launch = tmp_path / "twice.args"
    launch.write_text("\n".join(["# argv of: python3 -m verl.trainer.main_ppo", *BASE,
                                 "actor_rollout_ref.actor.megatron.grad_offload=False",
                                 "trainer.n_gpus_per_node=8",
                                 "actor_rollout_ref.actor.megatron.grad_offload=True"]) + "\n")
    assert main(["check", "--quiet", "--args-file", str(launch)]) == 1
    placed = [ln.rsplit(":", 1)[1].rstrip(")") for ln in capsys.readouterr().out.splitlines()
              if ln.lstrip().startswith("✗") and "grad_offload" in ln]
    n = len(BASE) + 2
    assert placed == [str(n), str(n + 2)], placed


def test_every_command_line_problem_is_shown(capsys):
    assert main(["check", *BASE, "--bogus-one", "--bogus-two"]) == 2
    err = capsys.readouterr().err
    assert "2 problems with the command line" in err and "--bogus-one" in err and "--bogus-two" in err


def test_a_whole_pasted_command_is_a_launch(base_cfg, capsys):
    argv = ["check", "--json", "HYDRA_FULL_ERROR=1", "python3", "-u", "-m",
            "verl.experimental.fully_async_policy.fully_async_main",
            "--config-name=fully_async_ppo_megatron_trainer", f"+{O}use_flash_atn=True",
            "actor_rollout_ref.rollout.name=vllm"]
    assert main(argv) == 1
    import json

    data = json.loads(capsys.readouterr().out)
    assert [e["rule"] for e in data["errors"]] == ["unknown-key"]
    assert "fully_async_ppo_megatron_trainer" in data["versions"]["verl_config"]


def test_another_entrys_config_name_points_at_its_entry(base_cfg, capsys):
    """A fully-async launch checked without --entry: its config name is not in main_ppo's folder; the error names
    the entry whose config it is, and the option that checks it."""
    assert main(["check", "--config-name=fully_async_ppo_megatron_trainer"]) == 2
    err = capsys.readouterr().err
    assert "--entry verl.experimental.fully_async_policy.fully_async_main" in err, err


def test_a_config_folder_without_verl_sources_says_what_it_cannot_check(base_cfg, tmp_path, capsys):
    """A copy of verl's config folder alone: the keys verl's dataclasses refuse (tau_pos is an ActorConfig field, not
    a PolicyLossConfig one) cannot be checked there; the report says so, quiet too, where it printed a bare OK."""
    import importlib.util
    import shutil

    (installed,) = importlib.util.find_spec("verl").submodule_search_locations
    bare = tmp_path / "verl" / "trainer" / "config"
    shutil.copytree(f"{installed}/trainer/config", bare)
    argv = [*BASE, "+actor_rollout_ref.actor.policy_loss.tau_pos=1.0"]
    assert main(["check", "--quiet", *argv]) == 1  # the installed tree has the sources: verl's TypeError
    capsys.readouterr()
    assert main(["check", "--quiet", "--verl-config-dir", str(bare), *argv]) == 0
    out = capsys.readouterr().out
    assert "--verl-config-dir" in out and "not checked" in out


def test_check_files_is_quiet_and_names_what_it_skipped(base_cfg, tmp_path, capsys):
    other = tmp_path / "serve.sh"
    other.write_text("#!/bin/bash\npython3 -m sglang.launch_server --port 1\n")
    async_launch = tmp_path / "async.sh"
    async_launch.write_text("#!/bin/bash\npython3 -m verl.experimental.fully_async_policy.fully_async_main \\\n"
                            "  --config-name=fully_async_ppo_megatron_trainer actor_rollout_ref.rollout.name=vllm\n")
    code = main(["check-files", str(ROOT / "examples" / "qwen3_8b_dense_grpo.args"), str(other), str(async_launch)])
    out = capsys.readouterr().out
    assert code == 0
    assert f"== {async_launch}" in out  # a fully-async launch is a verl entry: checked, not skipped
    assert f"skipped {other}: launches sglang.launch_server, not a verl entry" in out
    assert "Tensor parallelism" not in out  # quiet by default
    assert "2 files checked" in out and "1 skipped" in out
