"""A key's own line brings what the key then needs: pasted as printed, it clears its error and raises none.

``recompute_granularty=full`` (a near miss) used to get ``~typo ++recompute_granularity=full``, and
``recompute_granularity=fulll`` (a value) ``++recompute_granularity=full``; the next check then asked for
``recompute_method`` and ``recompute_num_layers``, a second round of pasting. The launch is judged with each such line
applied, and the errors that raises fold into the same line.
"""

from __future__ import annotations

import shlex
import sys

import pytest

from helpers import BASIC, FIXTURES
from verl_mindspeed.errors import Issue
from verl_mindspeed.launch import evaluate
from verl_mindspeed.resolver import follow_fixes

sys.path.insert(0, str(FIXTURES.parent / "conformance"))
import fixpoint  # noqa: E402

O = "actor_rollout_ref.actor.megatron.override_transformer_config"
M = "actor_rollout_ref.actor.megatron"
BASE = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo", "trainer.n_gpus_per_node=8", *BASIC]


@pytest.mark.parametrize("release", ["26.1.0", "core_r0.16.0", "core_r0.18.0"])
@pytest.mark.parametrize("written, then", [
    ([f"++{O}.recompute_granularty=full"], {"recompute_method", "recompute_num_layers"}),  # recompute-full
    ([f"++{O}.swap_optimzer=True"], {"use_distributed_optimizer"}),  # swap needs the distributed optimizer
    ([f"{M}.tensor_model_paralel_size=3"], {"tensor_model_parallel_size"}),  # Hydra's near miss; 3 of 8 cards
])
def test_a_near_miss_line_pasted_once_leaves_no_error(base_cfg, release, written, then):
    check = lambda argv: evaluate(argv, release=release)  # noqa: E731
    base = [*BASE, f"{M}.vanilla_mbridge=True"] if release == "26.1.0" else BASE  # no Megatron-Bridge on core 0.12
    first = check([*base, *written])
    (near,) = [i for i in first.errors if i.rule == "unknown-key"]
    assert [i.rule for i in first.errors] == ["unknown-key"]
    sets = {w.lstrip("+").partition("=")[0].rsplit(".", 1)[-1]: w.partition("=")[2]
            for w in shlex.split(near.override) if not w.startswith("~")}
    assert then <= set(sets) and "set as meant" in str(near.hint), near.override
    assert sets.get("tensor_model_parallel_size") != "3"  # resized to what 8 cards split into
    outcome = fixpoint.converge([*base, *written], check)
    assert (outcome.status, outcome.rounds) == ("fixed", 1), outcome.history


def test_the_line_keeps_the_value_another_near_miss_means(base_cfg):
    """Two typos of one feature: the granularity's line does not set the method the other typo means; pasted
    together, in the order printed, the launch runs block recompute, as written."""
    argv = [*BASE, f"++{O}.recompute_granularty=full", f"++{O}.recompute_methd=block"]
    first = evaluate(argv)
    lines = {i.key.rsplit(".", 1)[-1]: i.override for i in first.errors}
    assert "recompute_method" not in lines["recompute_granularty"], lines
    assert f"{O}.recompute_num_layers=" in lines["recompute_granularty"]
    outcome = fixpoint.converge(argv, evaluate)
    assert (outcome.status, outcome.rounds) == ("fixed", 1), outcome.history
    assert outcome.last.roles["actor"]["override_transformer_config"]["recompute_method"] == "block"


def test_a_value_one_line_means_beside_another_lines_companions_goes_into_its_line(base_cfg):
    """Judged alone, recompute_num_layers=100 raises nothing; beside the full recompute the granularity's line brings,
    it exceeds Qwen3-8B's 36 layers. The lines are judged pasted together too: one round."""
    argv = [*BASE, f"++{O}.recompute_granularty=full", f"++{O}.recompute_num_layrs=100"]
    check = lambda a: evaluate(a, model_config=str(FIXTURES / "models" / "Qwen3-8B"))  # noqa: E731
    outcome = fixpoint.converge(argv, check)
    assert (outcome.status, outcome.rounds) == ("fixed", 1), outcome.history


def test_a_no_op_layer_kept_by_a_line_stays_a_string_and_is_counted(base_cfg):
    """noop_layers=0,70 on a 36-layer model, written as a Hydra sweep: the line keeps layer 0 and drops 70. Written
    bare, ``0`` was an integer, which MindSpeed ignores (no no-op layer at all), while num_layers counted two. The
    line quotes it, and num_layers counts the one kept."""
    check = lambda a: evaluate(a, model_config=str(FIXTURES / "models" / "Qwen3-8B"))  # noqa: E731
    outcome = fixpoint.converge([*BASE, f"+{O}.noop_layers=0,70"], check)
    assert (outcome.status, outcome.rounds) == ("fixed", 1), outcome.history
    dict_ = outcome.last.roles["actor"]["override_transformer_config"]
    assert (dict_["noop_layers"], dict_["num_layers"]) == ("0", 37)


def test_a_switch_the_user_turned_on_is_never_turned_off_in_its_line(base_cfg):
    """SP needs TP > 1, and TP 2 does not divide this launch's EP 3 layout: the rule's fix turns SP off. Folded, the
    near miss's line would say the opposite of what the user wrote; it keeps its own line and says what it meets."""
    (near,) = [i for i in evaluate([*BASE, f"++{O}.sequence_paralel=True", f"{M}.expert_model_parallel_size=3"]).errors
               if i.rule == "unknown-key"]
    assert near.override == f"~{O}.sequence_paralel ++{O}.sequence_parallel=True"
    assert "then meets" in str(near.hint)


@pytest.mark.parametrize("written", [f"++{O}.recompute_module='[core_attn, mlp]'",
                                     f"++{O}.recompute_granularty='full mode'", f"{O}.noop_layers='0, 7'"])
def test_a_value_with_a_space_is_reported_not_a_crash(base_cfg, written):
    """A line the shell cannot split as printed (a value with a space) is not pasted to follow it."""
    assert evaluate([*BASE, written]).errors


def test_a_near_miss_with_nothing_to_follow_keeps_its_own_line(base_cfg):
    (near,) = evaluate([*BASE, f"++{O}.use_flash_atn=True"]).errors
    assert near.override == f"~{O}.use_flash_atn ++{O}.use_flash_attn=True"
    assert "set as meant" not in str(near.hint)


def test_a_follow_on_error_without_a_line_is_named_in_the_hint():
    """Where what the correction raises has no line to fold (or deletes a key), the near miss keeps its own line
    and its hint says what the line will meet."""
    near = Issue("error", f"{O}.recompute_granularty", "unknown key", hint="h", suggestion=f"{O}.recompute_granularity",
                 rule="unknown-key", override=f"~{O}.recompute_granularty ++{O}.recompute_granularity=full")
    follow = Issue("error", f"{O}.recompute_method", "recompute_method is required", rule="recompute-full")
    seen = []

    def judge(argv):
        seen.append(argv)
        return [follow]

    (out,) = follow_fixes([near], ["a=1"], judge)
    assert seen == [["a=1", f"~{O}.recompute_granularty", f"++{O}.recompute_granularity=full"]]
    assert out.override == near.override and "recompute_method is required" in str(out.hint)


def _turned_on(flag) -> list[str]:
    """Values that switch a catalogued key on: True, each choice, a size of 2."""
    if flag.type == "bool":
        return ["True"]
    if flag.choices:
        return [str(c) for c in flag.choices]
    return ["2"] if flag.type == "int" else []


def _misspelt(flag) -> list[str]:
    """Values of a catalogued key a letter away from one that switches it on (a bool as Hydra keeps it a string)."""
    if flag.type == "bool":
        return ["Ture", "yes"]
    if flag.choices:
        return [f"{c}{str(c)[-1]}" for c in flag.choices]
    return ["2.0"] if flag.type == "int" else []


def test_every_catalogued_switch_misspelt_is_fixed_in_one_round(base_cfg):
    """Each switch of the catalogue turned on, its key misspelt by a letter, and then its value, on an MLA MoE model
    (so that MLA, the MoE dispatchers and grouped GEMM can all run): the printed lines, pasted once, leave no error.
    Before a key's line carried what the key then needs, 24 of the 64 misspelt keys and 13 of the 81 misspelt values
    took a second round."""
    from verl_mindspeed import catalog

    model = str(FIXTURES / "models" / "DeepSeek-V3")
    check = lambda argv: evaluate(argv, release="core_r0.16.0", model_config=model)  # noqa: E731
    launches = []
    for flag in catalog.flags("otc"):
        typo = flag.name[:-1] if len(flag.name) > 6 else flag.name + "x"
        launches += [f"++{O}.{typo}={value}" for value in _turned_on(flag)]
        launches += [f"++{O}.{flag.name}={value}" for value in _misspelt(flag)]
    assert len(launches) > 140
    slow = []
    for line in launches:
        outcome = fixpoint.converge([*BASE, line], check)
        if (outcome.status, outcome.rounds) != ("fixed", 1):
            slow.append((line, outcome.status, outcome.history))
    assert len(slow) == 0, slow
