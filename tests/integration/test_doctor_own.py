"""The doctor on this project's own refusals: a launch through the preset's callback that ``check`` stopped before
Ray started (its report, in English or Chinese, as the callback prints it), and the API's ``ConfigError``."""

from __future__ import annotations

import os
import subprocess
import sys
import traceback

import pytest
from _preset_cases import require
from omegaconf import open_dict

from helpers import BASIC
from verl_mindspeed.catalog import OTC, ROLE_PREFIXES
from verl_mindspeed.compose import compose_argv
from verl_mindspeed.doctor import diagnose
from verl_mindspeed.doctor._replay import pasted
from verl_mindspeed.integrations.hydra_callback import MindSpeedCallback

A = ROLE_PREFIXES["actor"]
BASE = ["--config-name=ppo_megatron_trainer", "actor_rollout_ref.actor.use_kl_loss=True",
        "algorithm.adv_estimator=gae", *BASIC, "+mindspeed=validate"]
FAULTS = [f"+{A}.{OTC}.recompute_granularity=full", f"+{A}.{OTC}.use_flash_atn=True"]


@pytest.fixture(autouse=True)
def _verl():
    require("verl")


def _composed(argv: list[str]):
    """The config Hydra hands the callback: the composed tree with the launch's overrides under ``hydra``."""
    cfg = compose_argv(argv).cfg
    with open_dict(cfg):
        cfg.hydra = {"overrides": {"task": [a for a in argv if not a.startswith("--")]}}
    return cfg


def _stopped(argv: list[str], capsys, lang: str = "en") -> str:
    """What the run's log holds when the callback stops the launch: its report and its stop line."""
    with pytest.raises(SystemExit):
        MindSpeedCallback(lang=lang).on_run_start(_composed(argv))
    out = capsys.readouterr()
    return out.out + out.err


def test_verl_main_ppo_stopped_by_the_preset_gets_its_keys_and_lines(tmp_path):
    """The real ``python3 -m verl.trainer.main_ppo`` through the preset: the callback stops it before Ray with its
    report. Before, the doctor found "no exception and no error line" in that output (exit 2)."""
    require("ray")
    argv = [sys.executable, "-m", "verl.trainer.main_ppo", "--config-path=config", *BASE, *FAULTS]
    env = {**os.environ, "RAY_ADDRESS": ""}
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=180, cwd=tmp_path, env=env)
    assert proc.returncode == 1, proc.stderr[-2000:]
    found = diagnose(proc.stdout + proc.stderr)
    assert found.exit_code == 0 and {c.key for c in found.causes} >= {f"{A}.{OTC}.use_flash_atn",
                                                                       f"{A}.{OTC}.recompute_method"}
    assert all(c.fix for c in found.causes), found.causes


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_callbacks_report_is_read_and_its_lines_pasted_let_the_launch_through(capsys, lang):
    """Each error of the report is a failure with its key and the report's own line; pasted as printed, the
    callback lets the launch through."""
    from verl_mindspeed.launch import evaluate

    argv = BASE + FAULTS
    log = _stopped(argv, capsys, lang)
    found = diagnose(log)
    assert {c.key for c in found.causes} == {i.key for i in evaluate(argv).errors}, found.causes
    assert found.exit_code == 0 and all(f.verdict.kind == "override" for f in found.failures)
    fixed = list(argv)
    for cause in found.causes:
        assert cause.fix, cause
        fixed = pasted(fixed, cause.fix)
    MindSpeedCallback().on_run_start(_composed(fixed))  # no SystemExit: the launch goes through
    assert "OK: 0 errors" in capsys.readouterr().out


def test_with_the_launch_the_replay_confirms_each_error(capsys):
    argv = BASE + FAULTS
    found = diagnose(_stopped(argv, capsys), argv)
    assert found.causes and all(c.confirmed for c in found.causes if c.fix), found.causes


def test_the_apis_config_error_names_its_keys_and_the_replay_gives_the_lines():
    from verl_mindspeed.errors import ConfigError
    from verl_mindspeed.launch import evaluate
    from verl_mindspeed.resolver import inject

    argv = BASE + FAULTS
    with pytest.raises(ConfigError) as exc:
        inject(compose_argv(argv).cfg, evaluate(argv))
    log = "".join(traceback.format_exception(exc.value))
    assert {c.key for c in diagnose(log).causes} >= {f"{A}.{OTC}.use_flash_atn"}
    with_launch = diagnose(log, argv)
    assert any(c.key == f"{A}.{OTC}.use_flash_atn" and c.fix for c in with_launch.causes), with_launch.causes


def test_a_report_that_passed_is_no_failure_the_runs_exception_is(capsys):
    """The callback's OK (warnings at most) and then a failure of the run: the run's exception is the failure."""
    MindSpeedCallback().on_run_start(compose_argv(BASE).cfg)
    log = capsys.readouterr().out + "Traceback (most recent call last):\n" \
        '  File "/x/verl/utils/config.py", line 110, in validate_config\n' \
        "AssertionError: n_gpus (8) must be divisible by model_parallel_size (4) times context_parallel_size (4)\n"
    found = diagnose(log)
    assert [f.raised.type for f in found.failures] == ["AssertionError"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_runtime_guards_refusal_gives_the_line_it_says_to_set(lang):
    """The guard (a worker whose role runs at the sizes another role built first) says which line to set; the
    doctor gave "not placed". Its line, pasted, clears check's finding on the same launch."""
    from verl_mindspeed.i18n import render
    from verl_mindspeed.integrations import guard_checks as gc
    from verl_mindspeed.launch import evaluate

    asked = gc.asked_sizes({"tensor_model_parallel_size": 2}.get)
    live = gc.asked_sizes({"tensor_model_parallel_size": 1}.get)
    problem = gc.layout_mismatch("actor", asked, live, gc.Owner("critic", live))
    log = "".join(f"(WorkerDict pid=77) {line}\n" for line in [
        "Traceback (most recent call last):",
        '  File "/x/verl_mindspeed/integrations/guard.py", line 250, in check_engine',
        '    raise gc.GuardError(f"verl-mindspeed guard: {problem.render(lang)}")',
        f"verl_mindspeed.integrations.guard_checks.GuardError: verl-mindspeed guard: {render(problem, lang)}"])
    (cause,) = diagnose(log).causes
    assert cause.key == "critic.megatron.tensor_model_parallel_size" and cause.fix == f"{cause.key}=2"
    argv = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=gae", *BASIC,
            f"{A}.tensor_model_parallel_size=2", "actor_rollout_ref.ref.megatron.tensor_model_parallel_size=2"]
    before = {(i.rule, i.key) for i in evaluate(argv).errors if i.rule == "role-sizes-agree"}
    after = {(i.rule, i.key) for i in evaluate(pasted(argv, cause.fix)).errors if i.rule == "role-sizes-agree"}
    assert before and not after, (before, after)


def test_two_errors_of_the_report_on_one_key_keep_both_lines(capsys):
    """The world size's error and the roles' sizes error both sit on the actor's TP, each with its own line: one
    cause per key kept only the first, and the roles' line was lost (the round trip through the preset found it)."""
    argv = [*BASE, f"{A}.tensor_model_parallel_size=4", f"{A}.context_parallel_size=4"]
    found = diagnose(_stopped(argv, capsys))
    (cause,) = [c for c in found.causes if c.key == f"{A}.tensor_model_parallel_size"]
    assert "critic.megatron." in cause.fix and f"{A}.tensor_model_parallel_size=" in cause.fix, cause
    fixed = list(argv)
    for c in found.causes:
        fixed = pasted(fixed, c.fix)
    MindSpeedCallback().on_run_start(_composed(fixed))
    assert "OK: 0 errors" in capsys.readouterr().out
