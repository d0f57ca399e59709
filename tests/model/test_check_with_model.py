"""`check` end to end with a model config: MLA dimensions injected, model errors reported, bad configs located."""

from __future__ import annotations

import json

from helpers import BASIC, FIXTURES
from verl_mindspeed.cli import main

O = "actor_rollout_ref.actor.megatron.override_transformer_config."
M = "actor_rollout_ref.actor.megatron."
BASE = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo", *BASIC]
MOONLIGHT = FIXTURES / "models" / "Moonlight-16B-A3B-Instruct"
QWEN3_06B = FIXTURES / "models" / "Qwen3-0.6B"


def check(capsys, *argv):
    code = main(["check", "--json", *argv])
    return code, json.loads(capsys.readouterr().out)


def test_mla_dimensions_come_from_the_model(base_cfg, capsys):
    """Through a preset the dimensions are injected from config.json; a plain launch must carry them itself."""
    code, data = check(capsys, "--model-config", str(MOONLIGHT), *BASE, f"+{O}multi_head_latent_attention=True",
                       "+mindspeed=validate")
    assert code == 0, data["errors"]
    actor = data["roles"]["actor"]["override_transformer_config"]
    assert (actor["kv_lora_rank"], actor["qk_rope_head_dim"], actor["qk_nope_head_dim"], actor["v_head_dim"]) == (
        512, 64, 128, 128)
    code, data = check(capsys, "--model-config", str(MOONLIGHT), *BASE, f"+{O}multi_head_latent_attention=True")
    assert code == 1
    (err,) = data["errors"]
    assert err["rule"] == "mla-dimensions"
    assert err["override"] == " ".join(f"++{O}{k}={v}" for k, v in (
        ("kv_lora_rank", 512), ("v_head_dim", 128), ("qk_rope_head_dim", 64), ("qk_nope_head_dim", 128)))


def test_without_a_model_mla_dimensions_are_required(base_cfg, capsys):
    code, data = check(capsys, *BASE, f"+{O}multi_head_latent_attention=True")
    assert code == 1
    assert [e["rule"] for e in data["errors"]] == ["mla-dimensions"]


def test_model_path_from_the_config_is_used(base_cfg, capsys):
    code, data = check(capsys, *BASE, f"actor_rollout_ref.model.path={QWEN3_06B}", "--mindspeed-release", "26.1",
                       f"{M}vanilla_mbridge=True", f"{M}tensor_model_parallel_size=16", "trainer.n_gpus_per_node=16")
    assert code == 1
    assert {e["rule"] for e in data["errors"]} == {"model-query-groups-tp"}  # 8 KV heads, TP=16
    assert any("Qwen3" in n["message"] for n in data["notes"] if n["rule"] == "model")


def test_unreadable_model_config_is_an_error_on_the_option(base_cfg, capsys, tmp_path):
    """A --model-config the user gave but that cannot be used is bad input: exit 1, located on the option."""
    (tmp_path / "config.json").write_text("{not json")
    code, data = check(capsys, "--model-config", str(tmp_path), *BASE)
    assert code == 1
    assert [e["rule"] for e in data["errors"] if e["key"] == "--model-config"] == ["model"]


def test_unmapped_architecture_is_a_note(base_cfg, capsys, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["GPT2LMHeadModel"]}))
    code, data = check(capsys, "--model-config", str(tmp_path), *BASE)
    assert code == 0
    assert [n["rule"] for n in data["notes"] if n["key"] == "--model-config"] == ["model"]
