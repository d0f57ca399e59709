"""verl 0.9.1's refusals that only its workers, rollout servers or first step reach (``compose/_late.py``): each
launch is refused before Ray starts, with a line that, pasted, leaves no such error; the launch without the setting
passes. The messages are verl 0.9.1's own, found in the installed verl's source."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import BASIC
from verl_mindspeed.doctor._replay import pasted
from verl_mindspeed.launch import evaluate

BASE = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo", *BASIC]
O = "actor_rollout_ref.actor.megatron.override_transformer_config"


def _late(argv):
    return [i for i in evaluate(argv).issues if i.rule == "verl-late-check"]


@pytest.mark.parametrize("written, key, line, source, words", [
    (["actor_rollout_ref.rollout.prometheus.enable=True"], "actor_rollout_ref.rollout.disable_log_stats",
     "actor_rollout_ref.rollout.disable_log_stats=False", "workers/rollout/llm_server.py",
     "Metrics monitoring requires disable_log_stats=False"),
    (["trainer.logger=[console,rl_insight]"], "actor_rollout_ref.rollout.disable_log_stats",
     "actor_rollout_ref.rollout.disable_log_stats=False", "trainer/main_ppo.py", "rl_insight"),
    ([f"+{O}.calculate_per_token_loss=True", "actor_rollout_ref.model.use_remove_padding=False"],
     "actor_rollout_ref.model.use_remove_padding", "actor_rollout_ref.model.use_remove_padding=True",
     "workers/engine/megatron/transformer_impl.py", "calculate_per_token_loss=True requires use_remove_padding=True"),
    (["algorithm.rollout_correction.bypass_mode=True", "actor_rollout_ref.rollout.calculate_log_probs=False"],
     "actor_rollout_ref.rollout.calculate_log_probs", "actor_rollout_ref.rollout.calculate_log_probs=True",
     "trainer/ppo/v1/trainer_base.py", 'data.pop("rollout_log_probs")'),
])
def test_a_late_refusal_is_an_error_whose_line_clears_it(base_cfg, written, key, line, source, words):
    verl = pytest.importorskip("verl")
    assert words in (Path(verl.__file__).parent / source).read_text(encoding="utf-8")
    argv = [*BASE, *written]
    (found,) = _late(argv)
    assert (found.severity, found.key, found.override) == ("error", key, line)
    fixed = pasted(argv, line)
    assert not _late(fixed) and not [i for i in evaluate(fixed).errors if i.key == key]


def test_qat_with_mbridge_has_no_line_the_megatron_core_012_stack_would_refuse(base_cfg):
    """``vanilla_mbridge=False`` clears verl's QAT refusal where Megatron-Bridge imports; on the 0.12 line it meets
    ``stack-bridge-import``: the error stands, its line is the hint's to choose by stack."""
    verl = pytest.importorskip("verl")
    source = (Path(verl.__file__).parent / "workers/engine/megatron/transformer_impl.py").read_text(encoding="utf-8")
    assert "QAT requires non-vanilla Megatron bridge" in source
    argv = [*BASE, "actor_rollout_ref.actor.megatron.qat.enable=True",
            "actor_rollout_ref.actor.megatron.vanilla_mbridge=True"]
    (found,) = _late(argv)
    assert found.severity == "error" and found.override is None and "vanilla_mbridge=False" in found.hint
    assert not _late([*argv, "actor_rollout_ref.actor.megatron.vanilla_mbridge=False"])


def test_the_optimal_token_baseline_under_the_v1_trainer_has_no_line(base_cfg):
    (found,) = _late([*BASE, "algorithm.adv_estimator=optimal_token_baseline"])
    assert found.severity == "error" and found.override is None and "trainer.use_v1=False" in found.hint
    assert not _late([*BASE, "algorithm.adv_estimator=optimal_token_baseline", "trainer.use_v1=False",
                      "actor_rollout_ref.actor.calculate_sum_pi_squared=True"])


def test_the_defaults_and_unwritten_settings_are_not_judged(base_cfg):
    assert not _late(list(BASE))
    assert not _late([*BASE, "actor_rollout_ref.rollout.disable_log_stats=False",
                      "actor_rollout_ref.rollout.prometheus.enable=True"])
