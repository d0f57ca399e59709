"""The stack a launch is judged on (verl x bridge x megatron-core x MindSpeed): chosen, named in every format, and
refused where it cannot start; the repository's own example as a new user runs it."""

from __future__ import annotations

import json
import shlex

import pytest

from helpers import ROOT
from verl_mindspeed import stack
from verl_mindspeed.catalog import universe
from verl_mindspeed.cli import main

EXAMPLE = str(ROOT / "examples" / "qwen3_8b_dense_grpo.args")
O = "actor_rollout_ref.actor.megatron.override_transformer_config."


def run_json(capsys, *argv):
    code = main(["check", "--json", *argv])
    return code, json.loads(capsys.readouterr().out)


def test_the_example_on_26_1_cannot_start_and_its_fix_pasted_passes(base_cfg, capsys):
    """verl 0.9.1's defaults build through Megatron-Bridge; MindSpeed 26.1.0 runs on megatron-core 0.12.1, where no
    Megatron-Bridge imports: exit 1 with vanilla_mbridge=True, and the line pasted removes the error."""
    code, data = run_json(capsys, "--args-file", EXAMPLE, "--mindspeed-release", "26.1")
    assert code == 1
    (error,) = data["errors"]
    assert (error["rule"], error["key"]) == ("stack-bridge-import", "actor_rollout_ref.actor.megatron.vanilla_mbridge")
    assert "actor_rollout_ref.actor.megatron.vanilla_mbridge=True" in error["override"]
    fix = shlex.split(error["override"])
    code, data = run_json(capsys, "--args-file", EXAMPLE, "--mindspeed-release", "26.1", *fix)
    assert code == 0 and data["errors"] == [], data["errors"]
    assert data["stack"]["mindspeed"] == "26.1.0_core_r0.12.1" and data["stack"]["megatron_core"] == "0.12.1"
    assert data["stack"]["megatron_bridge"] is None


def test_core_r0_16_takes_the_default_bridge_path(base_cfg, capsys):
    code, data = run_json(capsys, "--args-file", EXAMPLE, "--mindspeed-release", "core_r0.16.0")
    assert code == 0 and not [e for e in data["errors"] if e["rule"].startswith("stack")]
    assert data["stack"]["megatron_bridge"] == "0.3.1" and data["stack"]["source"]["megatron-bridge"] == "assumed"


def test_without_a_release_the_stack_assumed_can_start_the_launch(base_cfg, capsys):
    code, data = run_json(capsys, "--args-file", EXAMPLE)
    assert code == 0
    assert data["stack"]["mindspeed"] == stack.BRIDGE_DEFAULT_RELEASE
    assert data["stack"]["source"]["mindspeed"] == "assumed"
    # a launch that chose mbridge keeps the newest release branch
    code, data = run_json(capsys, "--args-file", EXAMPLE, "actor_rollout_ref.actor.megatron.vanilla_mbridge=True",
                          f"++{O}position_embedding_type=rope")
    assert data["stack"]["mindspeed"] == universe.DEFAULT_RELEASE and code == 0, data["errors"]


def test_the_text_report_names_the_stack_and_what_was_assumed(base_cfg, capsys):
    main(["check", "--args-file", EXAMPLE, "--bridge", "megatron-bridge==0.3.1", "--megatron-core", "0.16.1"])
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("stack: "))
    assert "Megatron-Bridge 0.3.1 ·" in line and "megatron-core 0.16.1 ·" in line
    assert "MindSpeed core_r0.16.0 (assumed)" in line and "mbridge 0.15.1 (assumed)" in line
    main(["check", "--lang", "zh", "--args-file", EXAMPLE])
    assert "技术栈：" in capsys.readouterr().out


def test_a_bridge_that_does_not_import_with_the_line_is_refused(base_cfg, capsys):
    code, data = run_json(capsys, "--args-file", EXAMPLE, "--mindspeed-release", "core_r0.16.0", "--bridge",
                          "megatron-bridge==0.5.1")
    assert code == 1 and "needs 0.18" in data["errors"][0]["message"]


@pytest.mark.parametrize("text", ["foo", "megatron-bridge", "mbridge==x.y", ""])
def test_a_bad_bridge_option_is_a_usage_error(base_cfg, capsys, text):
    assert main(["check", "--args-file", EXAMPLE, "--bridge", text]) == 2
    assert "--bridge takes" in capsys.readouterr().err


def test_a_field_of_the_0_18_line_is_known_and_said_to_be_inert_on_0_12(base_cfg, capsys):
    """dsa_indexer_loss_coeff is a TransformerConfig field from megatron-core 0.16 on: never 'unknown'; on 0.12.1 a
    warning names the lines that have it."""
    assert stack.lines_with_field("dsa_indexer_loss_coeff") == ["0.16.1", "0.17.1", "0.18.2"]
    argv = ["--args-file", EXAMPLE, f"+{O}dsa_indexer_loss_coeff=0.1",
            "actor_rollout_ref.actor.megatron.vanilla_mbridge=True", f"++{O}position_embedding_type=rope",
            "--mindspeed-release", "26.1"]
    code, data = run_json(capsys, *argv)
    rules = {w["rule"] for w in data["warnings"]}
    assert code == 0 and "unknown-key" not in rules and "field-of-another-line" in rules
    code, data = run_json(capsys, *argv[:-2], "--mindspeed-release", "core_r0.16.0")
    assert not [w for w in data["warnings"] if w["key"].endswith("dsa_indexer_loss_coeff")]


def test_each_megatron_core_line_has_its_generated_facts():
    data = stack.facts()["megatron_core"]
    assert list(data) == ["0.12.1", "0.16.1", "0.17.1", "0.18.2"]
    assert data["0.12.1"]["fields"]["bias_activation_fusion"] is False
    assert set(universe._data()["transformer_config"]["fields"]) <= set(data["0.12.1"]["fields"])
    assert stack.facts()["megatron_bridge"]["0.5.1"]["refuses_unknown"] == {"file": "models/model_provider.py",
                                                                           "line": 128}
    assert stack.facts()["mindspeed_adaptor"]["core_r0.18.0"]["line"] == 3


def test_sources_that_import_megatron_adaptor_are_not_run_and_the_report_says_why(base_cfg, capsys, tmp_path):
    """What decides it is read from the sources given: a MindSpeed whose ``__init__`` imports ``megatron_adaptor``
    runs nothing (no worker, no environment built), and the report says why; the same folder without that import,
    on a line an environment exists for, is runnable."""
    from verl_mindspeed import upstream

    root = tmp_path / "mindspeed-core_r0.18.0" / "mindspeed"
    root.mkdir(parents=True)
    (root / "megatron_adaptor.py").write_text("")
    (root / "__init__.py").write_text('"""MindSpeed."""\n\nimport megatron_adaptor  # noqa: F401\n')
    src = upstream.locate(str(root.parent))
    assert src.line == "0.18" and len(src.unrunnable) == 2 and src.megatron is None
    code, data = run_json(capsys, "--args-file", EXAMPLE, "--upstream", "--mindspeed-src", str(root.parent))
    assert data["upstream"]["verdict"] == "not-run" and data["upstream"]["unrunnable"] == list(src.unrunnable)
    (said,) = [w for w in data["warnings"] if w["rule"] == "upstream-unavailable"]
    assert "megatron_adaptor" in said["message"] and "megatron-core 0.18" in said["message"]
    code_zh = main(["check", "--args-file", EXAMPLE, "--upstream", "--mindspeed-src", str(root.parent), "--lang", "zh"])
    assert code_zh == code and "没有在本次启动上运行" in capsys.readouterr().out
    (root / "__init__.py").write_text('"""MindSpeed."""\n')
    training = tmp_path / "megatron-lm" / "megatron" / "training"
    training.mkdir(parents=True)
    (training / "__init__.py").write_text("")
    runnable = upstream.locate(str(root.parent), str(training.parents[1]), megatron_core="0.16")
    assert runnable.unrunnable == () and runnable.line == "0.16.1"
