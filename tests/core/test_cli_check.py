"""`verl-mindspeed check` end to end: real composition, exit codes, JSON (the corpus of real launch lines is
checked in tests/conformance/test_corpus.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from pytest import param

from helpers import BASIC, ROOT
from verl_mindspeed.cli import main
from verl_mindspeed.launch import read_args_file

O = "actor_rollout_ref.actor.megatron.override_transformer_config."
BASE = ["--config-path=config", "--config-name=ppo_megatron_trainer.yaml", *BASIC]
EXAMPLES = sorted((ROOT / "examples").glob("*.args"))


def run_json(capsys, argv):
    code = main(["check", "--json", *argv])
    return code, json.loads(capsys.readouterr().out)


def test_json_shape(base_cfg, capsys):
    code, data = run_json(capsys, [*BASE, f"+{O}use_flash_atn=True"])
    assert code == 1
    assert set(data) >= {"ok", "errors", "warnings", "roles", "versions"}
    (err,) = data["errors"]
    assert set(err) >= {"key", "message", "hint", "suggestion"}
    assert err["key"] == O + "use_flash_atn"
    assert err["suggestion"] == O + "use_flash_attn"
    assert err["override"] == f"~{O}use_flash_atn ++{O}use_flash_attn=True"
    assert set(data["roles"]["actor"]) == {"override_transformer_config", "megatron", "repatch"}
    assert data["versions"]["verl"]


@pytest.mark.parametrize("argv, rule, override", [
    param([f"{O}use_flash_attn=True"], "hydra-missing-plus", f"+{O}use_flash_attn=True", id="missing-plus"),
    param(["actor_rollout_ref.actor.megatron.tensor_model_paralel_size=2"], "unknown-key",
          # set as meant, the actor's TP 2 meets the critic's TP 1 (role-sizes-agree): one line clears both
          "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2"
          " ++critic.megatron.tensor_model_parallel_size=2",
          id="typo-without-plus"),
    param([f"+{O}noop_layers=0,7"], "hydra-sweep", f"+{O}noop_layers='\"0,7\"'", id="unquoted-list"),
    param(["+actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2"], "hydra-append",
          "++actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2"
          " ++critic.megatron.tensor_model_parallel_size=2", id="plus-on-existing"),
    param(["model_engine=megatronn"], "hydra-group", "model_engine=megatron", id="group-typo"),
])
def test_hydra_errors_become_issues(base_cfg, capsys, argv, rule, override):
    code, data = run_json(capsys, [*BASE, *argv])
    assert code == 1
    assert [(e["rule"], e["override"]) for e in data["errors"]] == [(rule, override)]


def test_all_errors_reported_at_once(base_cfg, capsys):
    code, data = run_json(capsys, [*BASE, f"{O}use_flash_attn=True", f"+{O}noop_layers=0,7",
                                   "actor_rollout_ref.actor.megatron.tensor_model_paralel_size=2",
                                   f"+{O}use_ascend_mc2=True"])
    assert code == 1
    assert {e["rule"] for e in data["errors"]} == {"hydra-missing-plus", "hydra-sweep", "unknown-key",
                                                   "mc2-requires-sp-tp"}


@pytest.mark.parametrize("argv, fragment", [
    param(["--config-path=/nonexistent/dir"], "verl config directory not found", id="config-path"),
])
def test_cannot_evaluate_exits_2(base_cfg, capsys, argv, fragment):
    assert main(["check", *argv]) == 2
    assert fragment in capsys.readouterr().err


def test_an_argument_hydra_cannot_parse_is_an_error_of_the_launch(base_cfg, capsys):
    """verl refuses such a launch before composing it: an error on that argument, the rest still judged. A path
    Hydra cannot lex (``~/data``) gets the quoted value as its fix, which parses; a broken list gets none (quoting it
    would make a size a string); a bare word the shell split off a value gets none either."""
    tp = "actor_rollout_ref.actor.megatron.tensor_model_parallel_size"
    argv = [*BASE, f"{tp}=[1", "data.train_files=~/data/train.parquet", "with", f"+{O}use_flash_atn=True"]
    assert main(["check", "--json", *argv]) == 1
    errors = {e["key"]: e for e in json.loads(capsys.readouterr().out)["errors"]}
    assert errors[tp]["rule"] == errors["with"]["rule"] == "hydra-parse"
    assert errors[tp]["override"] is None and errors["with"]["override"] is None
    assert errors["data.train_files"]["override"] == "\"data.train_files='~/data/train.parquet'\""
    assert errors[f"{O}use_flash_atn"]["rule"] == "unknown-key"  # judged past the refused arguments
    fixed = [a for a in argv if a not in (f"{tp}=[1", "with", "data.train_files=~/data/train.parquet")]
    assert main(["check", "--json", *fixed, "data.train_files='~/data/train.parquet'"]) == 1
    assert "hydra-parse" not in {e["rule"] for e in json.loads(capsys.readouterr().out)["errors"]}


def test_text_report(base_cfg, capsys):
    code = main(["check", *BASE, f"+{O}fused_permute_and_unpermute=True", f"+{O}use_fused_rmsnrom=True"])
    out = capsys.readouterr().out
    assert code == 1
    # a plain verl launch: MindSpeed never reads the guide's permute name, so it is an error like the typo
    assert "Fused MoE permute/unpermute" in out and "Errors (2)" in out
    assert f"fix:  ~{O}use_fused_rmsnrom ++{O}use_fused_rmsnorm=True" in out
    assert f"fix:  ~{O}fused_permute_and_unpermute ++{O}use_fused_moe_token_permute_and_unpermute=True" in out
    assert "FAILED: 2 errors, 0 warnings" in out


def test_text_report_through_a_preset(base_cfg, capsys):
    """With +mindspeed=<preset> the callback writes the real flag: the guide's name is only a warning."""
    code = main(["check", *BASE, "+mindspeed=validate", f"+{O}fused_permute_and_unpermute=True"])
    out = capsys.readouterr().out
    assert code == 0 and "Warnings (1)" in out and "OK: 0 errors, 1 warning" in out


def test_console_entry_point_runs_in_a_subprocess(base_cfg):
    proc = subprocess.run([sys.executable, "-m", "verl_mindspeed", "check", "--json", *BASE], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["ok"] is True
    assert "torch" not in proc.stderr


def test_check_does_not_import_heavy_modules(base_cfg):
    code = ("import sys; from verl_mindspeed.cli import main; main(['check', '--json', "
            "'--config-name=ppo_megatron_trainer']); "
            "heavy = [m for m in ('torch', 'ray', 'verl', 'megatron.core') if m in sys.modules]; "
            "print('HEAVY', heavy, file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "HEAVY []" in proc.stderr, proc.stderr


def test_preset_is_reported_key_by_key(base_cfg, capsys):
    code, data = run_json(capsys, [*BASE, "+mindspeed=memory_saving"])
    assert code == 0, data["errors"]
    sets = data["presets"]["memory_saving"]
    assert sets[O + "swap_optimizer"] is True and sets[O + "recompute_granularity"] == "full"
    actor = data["roles"]["actor"]["override_transformer_config"]
    for key, value in sets.items():
        if key.startswith(O):
            assert actor[key[len(O):]] == value, key


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_shipped_examples_pass(base_cfg, capsys, path):
    code, data = run_json(capsys, read_args_file(str(path)))
    assert code == 0 and data["errors"] == []
    assert len(EXAMPLES) == 3


def test_json_says_what_mindspeed_receives(base_cfg, capsys):
    code, data = run_json(capsys, [*BASE, "algorithm.adv_estimator=grpo", "actor_rollout_ref.actor.use_kl_loss=True",
                                   "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2",
                                   "actor_rollout_ref.ref.megatron.tensor_model_parallel_size=2",
                                   f"+{O}use_ascend_mc2=True", "+mindspeed=validate"])
    assert code == 0, data["errors"]
    receives = data["mindspeed_receives"]
    assert receives["era"] == "engine" and data["launch"] == {"era": "engine", "injected": True}
    builds = receives["builds"]
    assert [b["role"] for b in builds] == ["ref", "actor"]  # verl 0.9.1 builds ref before actor
    for build in builds:
        args = build["repatch"]
        assert (args["use_ascend_mc2"], args["tensor_model_parallel_size"],
                args["sequence_parallel"]) == (True, 2, True)
    code, data = run_json(capsys, [*BASE, "algorithm.adv_estimator=grpo", "actor_rollout_ref.actor.use_kl_loss=True",
                                   "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2",
                                   "actor_rollout_ref.ref.megatron.tensor_model_parallel_size=2",
                                   f"+{O}use_ascend_mc2=True"])
    assert code == 1 and data["launch"]["injected"] is False  # a plain launch: MC2 without TP in the dict fails
    assert [e["rule"] for e in data["errors"]] == ["mc2-requires-sp-tp"]


def test_report_in_chinese(base_cfg, capsys):
    code = main(["check", "--lang", "zh", *BASE, f"+{O}use_flash_atn=True"])
    out = capsys.readouterr().out
    assert code == 1
    assert "张量并行 (TP)" in out and "错误 (1)" in out and f"修正:  ~{O}use_flash_atn ++{O}use_flash_attn=True" in out
    assert "未通过: 1 个错误" in out
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("特性"))
    table = lines[start:lines.index("", start)]
    from verl_mindspeed.report import width

    # the role column starts at the same terminal column on every row, CJK names included
    starts = {width(line[: line.rstrip().rfind(" ") + 1]) for line in [table[0], *table[2:]]}
    assert len(starts) == 1, table
