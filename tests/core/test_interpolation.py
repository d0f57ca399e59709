"""Interpolations verl resolves inside its TaskRunner, after Ray starts: the check resolves them first."""

from __future__ import annotations

import json

from helpers import BASIC
from verl_mindspeed.cli import main

BASE = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo", *BASIC]
TP = "actor_rollout_ref.actor.megatron.tensor_model_parallel_size"


def check(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["check", "--json", *BASE, *argv])
    return code, json.loads(capsys.readouterr().out)


def test_an_unset_environment_variable_is_an_error_at_the_key_that_reads_it(capsys, monkeypatch, base_cfg):
    monkeypatch.delenv("VMS_TEST_PROJECT", raising=False)
    code, report = check(capsys, "trainer.project_name=${oc.env:VMS_TEST_PROJECT}")
    assert code == 1
    (found,) = [e for e in report["errors"] if e["rule"] == "interpolation"]
    assert found["key"] == "trainer.project_name" and "VMS_TEST_PROJECT is not set" in found["message"]
    assert "${oc.env:VMS_TEST_PROJECT,<default>}" in found["hint"]
    assert "trainer.default_local_dir" in found["hint"]  # what refers to it is named, not reported again
    monkeypatch.setenv("VMS_TEST_PROJECT", "demo")
    assert check(capsys, "trainer.project_name=${oc.env:VMS_TEST_PROJECT}")[0] == 0
    monkeypatch.delenv("VMS_TEST_PROJECT")
    assert check(capsys, "trainer.project_name=${oc.env:VMS_TEST_PROJECT,demo}")[0] == 0


def test_an_interpolation_to_a_missing_key_is_an_error(capsys, base_cfg):
    code, report = check(capsys, "trainer.experiment_name=${trainer.no_such_key}")
    assert code == 1
    (found,) = [e for e in report["errors"] if e["rule"] == "interpolation"]
    assert found["key"] == "trainer.experiment_name" and "trainer.no_such_key" in found["message"]


def test_a_size_read_from_the_environment_is_a_string_and_the_hint_decodes_it(capsys, monkeypatch, base_cfg):
    monkeypatch.setenv("VMS_TEST_TP", "2")
    code, report = check(capsys, f"{TP}=${{oc.env:VMS_TEST_TP}}")
    assert code == 1
    (found,) = [e for e in report["errors"] if e["key"] == TP]
    assert "'2' (str)" in found["message"] and "oc.decode" in found["hint"]
    fixed = found["hint"].rsplit("e.g. ", 1)[1].replace("NAME", "VMS_TEST_TP")
    assert check(capsys, fixed)[0] == 0  # the hint's form, pasted, passes Hydra's parser and the check


def test_a_hub_id_is_read_from_the_local_hugging_face_cache(capsys, monkeypatch, tmp_path, base_cfg):
    """verl loads ``Qwen/Qwen3-8B`` from the hub cache; so do the model-aware checks, and say where from."""
    import shutil

    from helpers import ROOT

    snapshot = tmp_path / "hub" / "models--Qwen--Qwen3-8B" / "snapshots" / "0123abc"
    snapshot.mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "fixtures" / "models" / "Qwen3-8B" / "config.json", snapshot / "config.json")
    (snapshot.parent.parent / "refs").mkdir()
    (snapshot.parent.parent / "refs" / "main").write_text("0123abc")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    code, report = check(capsys, "actor_rollout_ref.model.path=Qwen/Qwen3-8B")
    (used,) = [n for n in report["notes"] if n["rule"] == "model"]
    assert "Qwen3ForCausalLM" in used["message"] and "0123abc" in used["message"]
    code, report = check(capsys, "actor_rollout_ref.model.path=Qwen/Qwen3-14B")
    (skipped,) = [n for n in report["notes"] if n["rule"] == "model"]
    assert "nor in the Hugging Face cache" in skipped["message"]


def test_one_unresolvable_value_is_one_error_not_a_cascade(capsys, monkeypatch, base_cfg):
    """The ref reads its sizes and its dict through ``${oc.select:actor...}``: one value of the actor that does not
    resolve must not turn every value the ref reads into a string (a false type error per size, a fix line
    writing the ref's interpolation back), nor make a rule judge the text of the interpolation."""
    monkeypatch.delenv("VMS_TEST_UNSET", raising=False)
    monkeypatch.delenv("VMS_TEST_UNSET_TP", raising=False)
    otc = "actor_rollout_ref.actor.megatron.override_transformer_config"
    code, report = check(capsys, "actor_rollout_ref.actor.use_kl_loss=True",
                         f"+{otc}.use_flash_attn=${{oc.env:VMS_TEST_UNSET}}", f"{TP}=${{oc.env:VMS_TEST_UNSET_TP}}")
    assert code == 1
    assert sorted((e["key"], e["rule"]) for e in report["errors"]) == [
        (f"{otc}.use_flash_attn", "interpolation"), (TP, "interpolation")]
    assert not [w for w in report["warnings"] if w["key"].endswith("use_flash_attn")]
    monkeypatch.setenv("VMS_TEST_UNSET", "True")  # the same launch with the value resolving is judged as usual
    code, report = check(capsys, "actor_rollout_ref.actor.use_kl_loss=True",
                         f"+{otc}.use_flash_attn='${{oc.decode:${{oc.env:VMS_TEST_UNSET}}}}'")
    assert code == 0, report["errors"]
