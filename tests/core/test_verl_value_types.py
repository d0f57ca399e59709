"""A value of verl's own key that is not of its default's type is an error, with the value meant where plain.

Before, ``check`` said OK to ``use_kl_loss=ture``, ``enable_gradient_checkpointing=Flase`` or ``rollout.n='4'``:
verl's config carries no types, Hydra keeps the text, and verl reads ``Flase`` as True (a non-empty string) or
fails on its first arithmetic with the string, after Ray has started. The types are those of the defaults in the
verl tree the launch composes (here verl 0.9.1's ``ppo_megatron_trainer``).
"""

from __future__ import annotations

import shlex

import pytest

from helpers import BASIC
from verl_mindspeed.launch import evaluate

BASE = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo", *BASIC]


def _typed(res):
    return [i for i in res.errors if i.rule == "value" and "verl's default is" in str(i.message)]


@pytest.mark.parametrize("written, line", [
    ("actor_rollout_ref.actor.use_kl_loss=ture", "actor_rollout_ref.actor.use_kl_loss=True"),
    ("actor_rollout_ref.model.enable_gradient_checkpointing=Flase",
     "actor_rollout_ref.model.enable_gradient_checkpointing=False"),
    ("actor_rollout_ref.actor.megatron.param_offload=yes", "actor_rollout_ref.actor.megatron.param_offload=True"),
    ("trainer.val_before_train=off", "trainer.val_before_train=False"),
    ("actor_rollout_ref.rollout.n='4'", "actor_rollout_ref.rollout.n=4"),
    ("trainer.n_gpus_per_node='8'", "trainer.n_gpus_per_node=8"),
    ("actor_rollout_ref.rollout.gpu_memory_utilization='0.6'", "actor_rollout_ref.rollout.gpu_memory_utilization=0.6"),
    ("actor_rollout_ref.actor.optim.lr='1e-6'", "actor_rollout_ref.actor.optim.lr=1e-06"),
])
def test_a_value_of_another_type_gets_the_value_meant_and_the_line_clears_it(base_cfg, written, line):
    argv = [*BASE, written]  # as the shell hands it to Hydra: the quotes kept are Hydra's
    (found,) = _typed(evaluate(argv))
    assert found.key == written.partition("=")[0] and found.override == line
    assert not evaluate([*argv, line]).errors


def test_a_misspelt_switch_says_what_verl_would_do_with_it(base_cfg):
    (found,) = _typed(evaluate([*BASE, "actor_rollout_ref.model.enable_gradient_checkpointing=Flase"]))
    assert "verl reads any text but an empty one as True" in str(found.message)


def test_text_that_means_no_value_gets_no_line(base_cfg):
    (found,) = _typed(evaluate([*BASE, "actor_rollout_ref.rollout.n=abc"]))
    assert found.override is None and "'abc'" in str(found.message)


@pytest.mark.parametrize("written", [
    "actor_rollout_ref.actor.use_kl_loss=1", "actor_rollout_ref.actor.use_kl_loss=False",
    "actor_rollout_ref.rollout.gpu_memory_utilization=1", "actor_rollout_ref.rollout.n=4",
    "trainer.total_training_steps=100", "actor_rollout_ref.rollout.max_model_len=null",
    "actor_rollout_ref.actor.optim.lr=1e-6",
    "actor_rollout_ref.rollout.top_p=0.9", "actor_rollout_ref.rollout.val_kwargs.temperature=1.0",
])
def test_a_value_of_the_defaults_type_or_one_verl_reads_alike_passes(base_cfg, written):
    assert not _typed(evaluate([*BASE, written]))


def test_a_key_given_twice_is_judged_once_on_the_value_that_stands(base_cfg):
    assert len(_typed(evaluate([*BASE, "actor_rollout_ref.rollout.n=x", "actor_rollout_ref.rollout.n=y"]))) == 1
    assert not _typed(evaluate([*BASE, "actor_rollout_ref.rollout.n=x", "actor_rollout_ref.rollout.n=4"]))


def test_a_switch_the_catalogue_types_is_reported_once(base_cfg):
    res = evaluate([*BASE, "actor_rollout_ref.actor.megatron.use_mbridge=Flase"])
    assert not _typed(res)
    assert [i.key for i in res.errors if i.rule == "value"] == ["actor_rollout_ref.actor.megatron.use_mbridge"]


def test_a_sweep_over_numbers_gets_no_quoted_line(base_cfg):
    """Quoted, ``n=1,2`` is one string verl cannot count with: the line would trade one error for another."""
    (found,) = [i for i in evaluate([*BASE, "actor_rollout_ref.rollout.n=1,2"]).errors if i.rule == "hydra-sweep"]
    assert found.override is None and "1,2" in str(found.hint)


def test_a_sweep_on_a_key_verl_lacks_gets_the_plus_it_needs(base_cfg):
    """Without the ``+`` the quoted line was refused as a missing key, whose line was refused as a sweep."""
    written = "actor_rollout_ref.actor.megatron.override_transformer_config.noop_layers=0,7"
    argv = [*BASE, written]
    (found,) = [i for i in evaluate(argv).errors if i.rule == "hydra-sweep"]
    assert found.override.startswith("+actor_rollout_ref")
    pasted = [a for a in argv if a != written] + shlex.split(found.override)
    assert not [i for i in evaluate(pasted).errors if i.rule.startswith("hydra")]


def test_a_number_read_from_the_environment_is_decoded_and_the_line_survives_the_shell(base_cfg):
    """``oc.env`` gives text: the line keeps the interpolation, decoded, and quotes it so the shell leaves the ``$``
    alone (double quotes would expand it)."""
    import subprocess

    argv = [*BASE, "data.train_batch_size=${oc.env:BS,64}"]
    (found,) = _typed(evaluate(argv))
    words = subprocess.run(["bash", "-c", f"printf '%s\\n' {found.override}"], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    assert words[0] == "data.train_batch_size='${oc.decode:${oc.env:BS,64}}'"  # then what 64 needs beside it
    assert not evaluate([*argv, *words]).errors


def test_verl_itself_keeps_the_misspelt_switch_and_reads_it_as_true(base_cfg):
    """The premise, executed: verl's own dataclass conversion of the actor section takes ``ture`` as it is."""
    from helpers import require
    from verl_mindspeed.compose import compose_argv

    config = require("verl.utils.config")
    comp = compose_argv([*BASE, "actor_rollout_ref.actor.use_kl_loss=Flase"])
    actor = config.omega_conf_to_dataclass(comp.cfg.actor_rollout_ref.actor)
    assert actor.use_kl_loss == "Flase" and bool(actor.use_kl_loss) is True


def test_a_variable_the_script_leaves_unset_is_reported_once(base_cfg, tmp_path):
    """``n=$N`` with N unset becomes ``n=``: the launch reader names the variable; no second error on the type."""
    from verl_mindspeed.launch import read_launch_file

    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo " + " ".join(BASE) + " actor_rollout_ref.rollout.n=$N\n")
    source = read_launch_file(str(script), {})
    errors = [i for i in evaluate(source.argv, source=source).errors if i.key == "actor_rollout_ref.rollout.n"]
    assert len(errors) == 1 and "$N" in str(errors[0].message)


def test_through_an_entry_the_tree_lacks_the_type_is_a_warning(base_cfg):
    """A recipe's entry is judged against the verl config its own extends, whose defaults its config may retype."""
    res = evaluate([*BASE, "actor_rollout_ref.actor.use_kl_loss=ture"], entry="recipe.dapo.main_dapo")
    assert any(n.rule == "entry-standin" for n in res.issues)
    (found,) = [i for i in res.issues if i.rule == "value" and "verl's default is" in str(i.message)]
    assert found.severity == "warning" and found.override == "actor_rollout_ref.actor.use_kl_loss=True"
