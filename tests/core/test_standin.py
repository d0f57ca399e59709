"""Launches of an entry or config the installed verl lacks get a verdict: recipes, a patched verl's entries, a pull
request's config name, and (with ``--verl-source``) the real recipe checkout composed as verl composes it.

Everything composes the installed verl's real tree with Hydra; the recipe checkout is a folder made here the way a
verl-recipe checkout is laid out (``dapo/main_dapo.py`` with ``@hydra.main``, ``dapo/config/*.yaml`` whose
``hydra.searchpath`` points at ``verl/trainer/config`` and whose defaults extend ``ppo_megatron_trainer``).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from helpers import BASIC, require
from verl_mindspeed.cli import main
from verl_mindspeed.errors import EvaluationError
from verl_mindspeed.launch import evaluate

OTC = "actor_rollout_ref.actor.megatron.override_transformer_config"
MEGATRON = ["actor_rollout_ref.actor.strategy=megatron", "critic.strategy=megatron",
            "algorithm.adv_estimator=grpo", *BASIC]


@pytest.fixture(autouse=True)
def _verl():
    require("verl")


def rules(res, severity=None):
    return {(i.rule, i.key) for i in res.issues if severity is None or i.severity == severity}


def test_a_recipe_entry_is_judged_against_the_config_it_extends():
    """recipe.dapo.main_dapo is not in verl's wheel: its MindSpeed keys are still judged (the typo is an error with
    its suggestion), the key DAPO adds is named in a note, and a note says what stood in for the recipe."""
    argv = ["--config-name=dapo_megatron_trainer", *MEGATRON, "reward_model.overlong_buffer.enable=True",
            f"+{OTC}.use_flash_atn=True"]
    res = evaluate(argv, entry="recipe.dapo.main_dapo")
    assert ("unknown-key", f"{OTC}.use_flash_atn") in rules(res, "error")
    typo = next(i for i in res.errors if i.key == f"{OTC}.use_flash_atn")
    assert typo.suggestion == f"{OTC}.use_flash_attn"
    assert ("standin-key", "reward_model.overlong_buffer.enable") in rules(res, "note")
    note = next(i for i in res.issues if i.rule == "entry-standin")
    assert "recipe.dapo.main_dapo" in note.message and "ppo_megatron_trainer" in note.message
    assert "--verl-source" in note.hint
    fixed = [a for a in argv if "use_flash_atn" not in a] + [f"+{OTC}.use_flash_attn=True"]
    assert not evaluate(fixed, entry="recipe.dapo.main_dapo").errors


def test_a_near_miss_of_a_base_key_stays_visible_under_a_stand_in():
    res = evaluate([*MEGATRON, "trainer.total_epoch=3"], entry="recipe.fully_async_policy.fully_async_main")
    near = next(i for i in res.issues if i.key == "trainer.total_epoch")
    assert near.severity == "warning" and near.suggestion == "trainer.total_epochs"


def test_a_megatron_key_the_base_lacks_is_still_an_error_under_a_stand_in():
    res = evaluate([*MEGATRON, "actor_rollout_ref.actor.megatron.tensor_parallel_size=2"],
                   entry="verl.trainer.main_ppo_npu")
    assert any(i.key == "actor_rollout_ref.actor.megatron.tensor_parallel_size" for i in res.errors)
    assert any(i.rule == "entry-standin" and "verl.trainer.main_ppo_npu" in i.message for i in res.issues)


def test_a_config_name_verl_lacks_is_composed_as_the_trainer_config_it_extends():
    """A pull request's new config name: verdict on the Megatron trainer config, with a note; a near miss of an
    existing name is an error with the name meant, and pasting it clears the error."""
    res = evaluate(["--config-name=ppo_megatron_trainer_npu_async", *MEGATRON,
                    "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2",
                    "critic.megatron.tensor_model_parallel_size=2"])
    assert not res.errors
    note = next(i for i in res.issues if i.rule == "entry-standin")
    assert note.key == "--config-name" and "ppo_megatron_trainer_npu_async" in note.message
    typo = evaluate(["--config-name=ppo_megatron_trainr", *MEGATRON])
    error = next(i for i in typo.errors if i.rule == "config-name-unknown")
    assert error.override == "--config-name=ppo_megatron_trainer"
    assert not [i for i in evaluate([error.override, *MEGATRON]).errors if i.rule == "config-name-unknown"]


def _recipe_checkout(tmp: Path) -> Path:
    """A verl-recipe checkout as laid out upstream: DAPO's entry and its Megatron config extending verl's."""
    dapo = tmp / "verl-recipe" / "dapo"
    (dapo / "config").mkdir(parents=True)
    (dapo / "__init__.py").write_text("")
    (dapo / "main_dapo.py").write_text(textwrap.dedent("""\
        import hydra

        @hydra.main(config_path="config", config_name="dapo_trainer", version_base=None)
        def main(config):
            pass
        """))
    (dapo / "config" / "dapo_megatron_trainer.yaml").write_text(textwrap.dedent("""\
        hydra:
          searchpath:
            - file://verl/trainer/config
        defaults:
          - ppo_megatron_trainer
          - _self_
        data:
          gen_batch_size: ${data.train_batch_size}
        reward_model:
          overlong_buffer:
            enable: False
            len: 0
        """))
    return tmp / "verl-recipe"


def test_verl_source_composes_the_recipe_as_verl_does(tmp_path):
    """With --verl-source the recipe's own config composes through its search path: its keys are known (no note,
    no stand-in), a key it lacks is refused as verl would, and the megatron keys are judged."""
    source = str(_recipe_checkout(tmp_path))
    argv = ["--config-name=dapo_megatron_trainer", *MEGATRON, "data.gen_batch_size=64",
            "reward_model.overlong_buffer.len=512", f"+{OTC}.use_flash_atn=True"]
    res = evaluate(argv, entry="recipe.dapo.main_dapo", verl_source=source)
    assert not any(i.rule in ("entry-standin", "standin-key") for i in res.issues)
    assert {i.key for i in res.errors} == {f"{OTC}.use_flash_atn"}
    assert res.versions["verl_config"].endswith("dapo/config/dapo_megatron_trainer.yaml")
    wrong = evaluate([*argv[:-1], "reward_model.overlong_bufer.len=512"], entry="recipe.dapo.main_dapo",
                     verl_source=source)
    assert any(i.key == "reward_model.overlong_bufer.len" and i.suggestion for i in wrong.errors)
    with pytest.raises(EvaluationError, match="neither"):
        evaluate(argv, entry="recipe.gkd.main_gkd", verl_source=source)


def test_the_cli_gives_a_recipe_launch_a_verdict_and_check_files_too(tmp_path, capsys):
    script = tmp_path / "run_dapo_npu.sh"
    script.write_text("#!/bin/bash\npython3 -m recipe.dapo.main_dapo --config-name=dapo_megatron_trainer \\\n"
                      + " \\\n".join(f"  {a}" for a in [*MEGATRON, "reward_model.overlong_buffer.enable=True"]) + "\n")
    assert main(["check", "--args-file", str(script), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert any(i["rule"] == "entry-standin" for i in payload["notes"])
    short = tmp_path / "run_gkd.sh"  # a recipe entry run by its short name, inside the recipe's folder
    short.write_text("#!/bin/bash\npython3 -m main_gkd \\\n" + " \\\n".join(f"  {a}" for a in MEGATRON) + "\n")
    assert main(["check-files", str(script), str(short), "--json"]) == 0
    files = json.loads(capsys.readouterr().out)
    assert [f["exit_code"] for f in files["files"]] == [0, 0] and not files["skipped"]
