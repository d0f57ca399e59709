"""CI outputs: SARIF 2.1.0 and GitHub annotations at file:line of an --args-file, check-files, the pre-commit hook."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import BASIC, ROOT
from verl_mindspeed.cli import main

O = "actor_rollout_ref.actor.megatron.override_transformer_config."
EXAMPLES = sorted((ROOT / "examples").glob("*.args"))
BIN = Path(sys.executable).parent


def bad_args_file(tmp_path: Path) -> tuple[Path, int]:
    """An example launch with a typo on a known line: (file, 1-based line of the typo)."""
    lines = (ROOT / "examples" / "qwen3_8b_dense_grpo.args").read_text().splitlines()
    lines.append(f"+{O}use_flash_atn=True")
    lines.append("trainer.total_epochs=1")
    path = tmp_path / "bad.args"
    path.write_text("\n".join(lines) + "\n")
    return path, len(lines) - 1


def test_github_annotation_points_at_the_line(base_cfg, capsys, tmp_path):
    path, line = bad_args_file(tmp_path)
    code = main(["check", "--args-file", str(path), "--format", "github"])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    (ann,) = [o for o in out if o.startswith("::")]
    assert ann.startswith(f"::error file={path},line={line},title=unknown-key::{O}use_flash_atn: ")
    assert f"%0Afix: ~{O}use_flash_atn ++" in ann and "\n" not in ann


def test_sarif_log(base_cfg, capsys, tmp_path):
    path, line = bad_args_file(tmp_path)
    code = main(["check", "--args-file", str(path), "--format", "sarif"])
    log = json.loads(capsys.readouterr().out)
    assert code == 1 and log["version"] == "2.1.0" and "sarif-2.1.0" in log["$schema"]
    (run,) = log["runs"]
    assert run["tool"]["driver"]["name"] == "verl-mindspeed"
    assert {r["id"] for r in run["tool"]["driver"]["rules"]} == {"unknown-key"}
    (result,) = run["results"]
    assert result["level"] == "error" and result["ruleId"] == "unknown-key"
    physical = result["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == path.as_posix() and physical["region"]["startLine"] == line
    assert result["properties"]["override"] == f"~{O}use_flash_atn ++{O}use_flash_attn=True"
    assert run["invocations"] == [{"executionSuccessful": True, "exitCode": 1}]


def test_sarif_and_github_for_a_command_that_cannot_be_evaluated(capsys):
    assert main(["check", "--format", "sarif", "--args-file", "/nonexistent.args"]) == 2
    log = json.loads(capsys.readouterr().out)
    (inv,) = log["runs"][0]["invocations"]
    assert inv["executionSuccessful"] is False and "cannot read /nonexistent.args" in \
        inv["toolExecutionNotifications"][0]["message"]["text"]
    assert main(["check", "--format", "github", "--args-file", "/nonexistent.args"]) == 2
    assert capsys.readouterr().out.startswith(
        "::error title=verl-mindspeed check::cannot evaluate this command: cannot read /nonexistent.args")



def test_annotations_in_chinese(base_cfg, capsys, tmp_path):
    path, _ = bad_args_file(tmp_path)
    main(["check", "--args-file", str(path), "--format", "github", "--lang", "zh"])
    assert "%0A修正: ~" in capsys.readouterr().out


def test_check_files(base_cfg, capsys, tmp_path):
    path, line = bad_args_file(tmp_path)
    script = tmp_path / "notes.sh"
    script.write_text("echo nothing to launch here\n")
    code = main(["check-files", "--json", *map(str, EXAMPLES), str(path), str(script)])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and data["exit_code"] == 1 and data["skipped"] == [str(script)]
    assert [f["exit_code"] for f in data["files"]] == [0] * len(EXAMPLES) + [1]
    code = main(["check-files", "--format", "github", str(path), "/nonexistent.args"])
    out = capsys.readouterr().out
    assert code == 2 and f"file={path},line={line}" in out and "file=/nonexistent.args" in out


def test_pre_commit_hook_runs_on_the_examples(base_cfg, tmp_path):
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert re.search(hook["files"], "examples/x.args") and re.search(hook["files"], "run_qwen3.sh")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    command = shlex.split(hook["entry"])
    files = [str(p.relative_to(ROOT)) for p in EXAMPLES]
    proc = subprocess.run(command + files, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert f"{len(files)} files checked: 0 with errors" in proc.stdout
    bad, _ = bad_args_file(tmp_path)
    proc = subprocess.run(command + [str(bad)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "unknown key 'use_flash_atn'" in proc.stdout


@pytest.mark.parametrize("line, key, expected", [
    ("+a.b.c=1", "a.b.c", True), ("  ~a.b.c \\", "a.b.c", True), ("a.b=1", "a.b.c", True), ("x=1", "a.b", False),
])
def test_line_matching(tmp_path, line, key, expected):
    from verl_mindspeed.cli._annotate import line_of

    path = tmp_path / "f.args"
    path.write_text(f"# comment\n{line}\n")
    assert (line_of(key, str(path)) == 2) is expected


def test_sarif_results_all_have_a_physical_location_and_rules_carry_help(base_cfg, capsys, tmp_path, monkeypatch):
    """Code scanning rejects results without a physical location: a command-line issue is placed in the pseudo-file
    ``argv`` at its argument's position; files are relative to the working folder; rules link their docs section."""
    import json as _json

    from verl_mindspeed.cli import main as _main

    monkeypatch.chdir(ROOT)
    O_ = "actor_rollout_ref.actor.megatron.override_transformer_config."
    argv = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo", f"+{O_}use_ascend_mc2=True", *BASIC]
    assert _main(["check", "--format", "sarif", *argv]) == 1
    run = _json.loads(capsys.readouterr().out)["runs"][0]
    (result,) = run["results"]
    physical = result["locations"][0]["physicalLocation"]
    assert physical == {"artifactLocation": {"uri": "argv"}, "region": {"startLine": 3}}
    (rule,) = run["tool"]["driver"]["rules"]
    assert rule["helpUri"] == "docs/rules.md#mc2-requires-sp-tp" and "mc2.py" in rule["help"]["text"]
    assert "## mc2-requires-sp-tp" in (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    script = ROOT / "tests" / "fixtures" / "scripts" / "one_step_off_mindspeed_npu.sh"
    assert _main(["check", "--format", "sarif", "--args-file", str(script)]) == 1
    run = _json.loads(capsys.readouterr().out)["runs"][0]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]}
    assert uris == {"tests/fixtures/scripts/one_step_off_mindspeed_npu.sh"}
