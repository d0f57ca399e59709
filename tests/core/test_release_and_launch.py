"""Which MindSpeed release a check targets, how the launch is judged (plain or injected), the memory estimate,
and the rule list `features --format json` gives."""

from __future__ import annotations

import json

import pytest

from helpers import BASIC, ROOT
from verl_mindspeed.catalog import universe
from verl_mindspeed.cli import main
from verl_mindspeed.rules import RULES

BASE = ["--config-path=config", "--config-name=ppo_megatron_trainer.yaml", "algorithm.adv_estimator=grpo", *BASIC]
O = "actor_rollout_ref.actor.megatron.override_transformer_config."
M = "actor_rollout_ref.actor.megatron."
MC2 = [f"{M}tensor_model_parallel_size=2", "actor_rollout_ref.ref.megatron.tensor_model_parallel_size=2",
       f"+{O}use_ascend_mc2=True"]


def run_json(capsys, argv):
    code = main(["check", "--json", *argv])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("text, branch", [
    ("26.1", "26.1.0_core_r0.12.1"), ("26.1.0", "26.1.0_core_r0.12.1"), ("2.3", "2.3.0_core_r0.12.1"),
    ("26.0.0_core_r0.12.1", "26.0.0_core_r0.12.1"), ("master", "master"), ("0.16", "core_r0.16.0"),
])
def test_short_release_names(text, branch):
    assert universe.canonical_release(text) == branch


def test_a_short_release_name_selects_its_rules(base_cfg, capsys):
    """MC2 without SP: a hard error from MindSpeed 26.0.0, a warning on 2.x (both on megatron-core 0.12.1, where
    only mbridge can build the model: Megatron-Bridge does not import there)."""
    argv = [*BASE, *MC2, f"+{O}sequence_parallel=False", f"+{O}tensor_model_parallel_size=2",
            "actor_rollout_ref.actor.megatron.vanilla_mbridge=True"]
    code, data = run_json(capsys, ["--mindspeed-release", "2.3", *argv])
    assert code == 0 and data["versions"]["mindspeed_release"] == "2.3.0_core_r0.12.1"
    # the dict's SP=False also overrides the engine's SP=True on the model's config: said as a warning
    assert [w["rule"] for w in data["warnings"]] == ["mc2-requires-sp-tp", "dict-sizes-agree"]
    code, data = run_json(capsys, ["--mindspeed-release", "26.1", *argv])
    assert code == 1 and [e["rule"] for e in data["errors"]] == ["mc2-requires-sp-tp"]


def test_an_unknown_release_cannot_be_evaluated(base_cfg, capsys):
    code, data = run_json(capsys, ["--mindspeed-release", "27", *BASE])
    assert code == 2 and "unknown MindSpeed release '27'" in data["fatal"]


def test_the_installed_release_is_the_default(base_cfg, capsys, monkeypatch):
    monkeypatch.setattr(universe, "installed_release", lambda: ("2.2.0_core_r0.12.1", "mindspeed 2.2.0"))
    code, data = run_json(capsys, BASE)
    assert data["versions"]["mindspeed_release"] == "2.2.0_core_r0.12.1"
    assert [n["message"] for n in data["notes"] if n["rule"] == "release"] == [
        "checking against MindSpeed 2.2.0_core_r0.12.1, the release installed here (mindspeed 2.2.0)"]


def test_plain_launch_vs_launcher(base_cfg, capsys):
    """The same argv: plain, MC2 lacks TP in the dict (an error); through the launcher it is injected (a note)."""
    code, data = run_json(capsys, [*BASE, *MC2])
    assert code == 1 and data["launch"]["injected"] is False
    assert [e["rule"] for e in data["errors"]] == ["mc2-requires-sp-tp"]
    code, data = run_json(capsys, ["--launcher", *BASE, *MC2])
    assert code == 0 and data["launch"]["injected"] is True
    added = {n["key"].rsplit(".", 1)[1] for n in data["notes"] if n["rule"] == "inject"}
    assert {"tensor_model_parallel_size", "sequence_parallel"} <= added


def test_estimated_peak_warns_near_the_device_limit(base_cfg, capsys):
    model = str(ROOT / "tests" / "fixtures" / "models" / "Qwen3-8B")
    argv = ["--model-config", model, *BASE, f"{M}tensor_model_parallel_size=4", "trainer.n_gpus_per_node=8",
            "actor_rollout_ref.ref.megatron.tensor_model_parallel_size=4"]
    code, data = run_json(capsys, argv)
    (estimate,) = [n for n in data["notes"] if n["rule"] == "model-memory"]
    assert "estimated peak" in estimate["message"] and "the device has 64 GiB" in estimate["message"]
    code, data = run_json(capsys, ["--device-memory-gib", "8", *argv])
    assert [w["rule"] for w in data["warnings"]] == ["model-memory"]


def test_features_json_lists_every_rule_with_its_upstream_and_versions(capsys):
    assert main(["features", "--format", "json"]) == 0
    rules = json.loads(capsys.readouterr().out)["rules"]
    assert [r["id"] for r in rules] == [r.id for r in RULES]
    for r in rules:
        assert r["cites"] and r["holds_for"], r["id"]
