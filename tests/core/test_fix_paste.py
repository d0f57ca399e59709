"""Fix lines are pasted back: after applying each printed fix to the same launch, the same check has no error on
that key. A fix is an override that replaces the user's argument, or, for a key the release does not have,
deleting the argument (the rules in ``DROP_RULES``; ``~key`` would fail on a key that does not exist). A fix
line is shell text (it goes into a launch script), so it is split like one before it replaces the argument.

Cases run in batches (one composition per batch, each key once), through the same pipeline as ``check``.
"""

from __future__ import annotations

import shlex

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_suggest import TUNED

from helpers import BASIC, FIXTURES
from verl_mindspeed import catalog
from verl_mindspeed.catalog import universe
from verl_mindspeed.i18n import render
from verl_mindspeed.launch import evaluate
from verl_mindspeed.resolver._follow import RESTATING
from verl_mindspeed.resolver._history import DROP_RULES

O = "actor_rollout_ref.actor.megatron.override_transformer_config"
M = "actor_rollout_ref.actor.megatron"
KEY_RULES = DROP_RULES | {"verl-key-moved", "unknown-key", "unknown-megatron-key", "value", "hydra", "hydra-append",
                          "hydra-missing-plus", "hydra-group", "hydra-delete", "hydra-sweep"}
BASE = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo",
        "actor_rollout_ref.actor.use_kl_loss=True"]


def _key(arg: str) -> str:
    return arg.lstrip("+~").partition("=")[0]


def paste(argv: list[str], issue) -> list[str]:
    out = list(argv)
    index = max(i for i, arg in enumerate(out) if _key(arg) == issue.key)
    if issue.override:
        words = shlex.split(issue.override)  # a fix line is written for a shell script
        if words[0] == f"~{issue.key}":
            return [*out, *words]  # a renamed '+' key: appended as printed, Hydra deletes it, then sets the right key
        out[index] = words[0]
        for word in words[1:]:  # a line that takes what the key then needs (a followed fix): each word its own key
            assert issue.rule in RESTATING, issue.override
            same = [i for i, arg in enumerate(out) if _key(arg) == _key(word)]
            if same:
                out[same[-1]] = word
            else:
                out.append(word)
    else:
        assert issue.rule in DROP_RULES | {"hydra-delete"}, f"no fix for {issue.key}: {issue.message}"
        del out[index]
    return out


def round_trip(lines: list[str], targets: list[str], **kw) -> None:
    """Every target key has an error with a fix; pasting all fixes leaves no error on any of them."""
    argv = [*BASE, *lines]
    first = evaluate(argv, **kw)
    by_key = {i.key: i for i in first.errors}
    missing = [t for t in targets if t not in by_key]
    assert not missing, f"no error on {missing}: {[(i.key, str(i.message)) for i in first.errors]}"
    fixed = argv
    for target in targets:
        fixed = paste(fixed, by_key[target])
    second = evaluate(fixed, **kw)
    fixed_keys = {_key(a) for a in fixed} - {_key(a) for a in argv}
    # no error is left on a key that had one; a pasted key may still meet a cross-field rule (say,
    # num_layers_in_first_pipeline_stage needs PP > 1), but never one about the key or its value itself
    left = [(i.key, str(i.message)) for i in second.errors
            if i.key in targets or (i.key in fixed_keys and i.rule in KEY_RULES)]
    assert not left, f"after pasting {[by_key[t].override for t in targets]}: {left}"


def _value(name: str) -> str:
    flag = catalog.flag(name, "otc")
    if flag is not None:
        return {"bool": "False", "int": "1", "layers": '"1"', "str_list": "[core_attn]"}.get(
            flag.type, flag.choices[0] if flag.choices else "x")
    spec = universe.mindspeed_args().get(name) or universe.megatron_training_args().get(name) or {}
    return "False" if spec.get("action") else "1" if spec.get("type") == "int" else "x"


def _batches(pairs, size=14):
    """Few compositions: each pair goes into the first batch that has room and does not yet mean its key (two
    fixes to one key cannot both be pasted)."""
    batches: list[list] = []
    for typed, meant in pairs:
        home = next((b for b in batches if len(b) < size and all(m != meant for _, m in b)), None)
        if home is None:
            home = []
            batches.append(home)
        home.append((typed, meant))
    return batches


TYPOS = [(t, m) for t, m in TUNED if m]


def test_typo_fixes_paste_back(base_cfg):
    for batch in _batches(TYPOS):
        round_trip([f"+{O}.{typed}={_value(meant)}" for typed, meant in batch], [f"{O}.{typed}" for typed, _ in batch])


def test_value_fixes_paste_back(base_cfg):
    lines = [f"++{O}.recompute_granularity=fulll", f"++{O}.recompute_method=unifrom", f"++{O}.recompute_num_layers=1",
             f"+{O}.use_flash_attn=yes", f"+{O}.swap_optimizer=1", f"+{O}.use_distributed_optimizer=on",
             f"+{O}.moe_token_dispatcher_type=alltoal", f"+{O}.use_fused_rmsnorm=Ture", f"+{O}.normalization=RMSNorm",
             f"{M}.use_mbridge=yess"]
    targets = [f"{O}.recompute_granularity", f"{O}.recompute_method", f"{O}.use_flash_attn", f"{O}.swap_optimizer",
               f"{O}.use_distributed_optimizer", f"{O}.moe_token_dispatcher_type", f"{O}.use_fused_rmsnorm",
               f"{M}.use_mbridge"]
    round_trip(lines, targets)


@pytest.mark.parametrize("written, meant", [
    ("core_attn", "[core_attn]"),  # MindSpeed's command line spells a list as words
    ("'core_attn mlp'", "[core_attn,mlp]"),
    ("core_attn,mlp", "[core_attn,mlp]"),  # Hydra reads a sweep: a list key's line is the list, not a string
    ("[core_atn,mlp]", "[core_attn,mlp]"),
])
def test_a_list_key_written_as_words_gets_the_list(base_cfg, written, meant):
    argv = [*BASE, *BASIC, f"++{O}.recompute_granularity=selective", f"++{O}.recompute_modules={written}"]
    (issue,) = evaluate(argv).errors
    assert issue.override and meant in issue.override, issue.override
    round_trip(argv[len(BASE):], [f"{O}.recompute_modules"])


def test_structural_fixes_paste_back(base_cfg):
    lines = [f"{O}.use_flash_attn=True",                        # needs '+'
             f"+{M}.tensor_model_parallel_size=1",              # exists: '++'
             f"{M}.tensor_model_paralel_size=1",                # typo without '+'
             "model_engine=megatronn",                          # group option typo
             f"+{O}.noop_layers=0,7",                           # a sweep: quote it
             f"{M}.grad_offload=True",                          # removed after 0.9.0: delete
             "actor_rollout_ref.actor.router_replay.mode=R3",   # moved under megatron in 0.9.1
             "+actor_rollout_ref.rollout.rollout_world_size=8",  # RolloutConfig has no such field: delete
             f"~{M}.param_offlaod",                             # '~' of a key that does not exist: delete
             "async_training.staleness_threshold=0.5"]          # another entry's key: delete
    targets = [f"{O}.use_flash_attn", f"{M}.tensor_model_parallel_size", f"{M}.tensor_model_paralel_size",
               "model_engine", f"{O}.noop_layers", f"{M}.grad_offload", "actor_rollout_ref.actor.router_replay.mode",
               "actor_rollout_ref.rollout.rollout_world_size", f"{M}.param_offlaod",
               "async_training.staleness_threshold"]
    round_trip(lines, targets)


def test_a_plus_fix_after_a_preset_is_plus_plus(base_cfg):
    argv = [*BASE, "+mindspeed=dense", f"+{O}.use_flash_atn=True", f"+{O}.use_fused_swiglu=True"]
    res = evaluate(argv)
    fixes = {i.key: i.override for i in res.errors}
    # the typo deleted, the right key set with '++' (the preset set it)
    assert fixes[f"{O}.use_flash_atn"] == f"~{O}.use_flash_atn ++{O}.use_flash_attn=True"
    assert fixes[f"{O}.use_fused_swiglu"] == f"++{O}.use_fused_swiglu=True"
    round_trip(argv[len(BASE):], [f"{O}.use_flash_atn", f"{O}.use_fused_swiglu"])


@pytest.mark.parametrize("typo", [f"++{O}.use_flash_atn=True", f"+{O}.use_fused_rmsnrom=True",
                                  f"+{M}.tensor_model_paralel_size=2", f"++{M}.param_offlaod=True",
                                  "+actor_rollout_ref.actor.ppo_mini_batch_siz=32",
                                  "+actor_rollout_ref.actor.policy_loss.tau_pos=1.0"])  # one level too deep
def test_a_renamed_key_pastes_at_the_end_as_printed(base_cfg, typo):
    """A '+' key with a typo: its fix line appended to the launch as printed (the typo still in it; Hydra applies
    the overrides in order, '~typo' included) leaves no error, and the right key holds the user's value."""
    argv = [*BASE, *BASIC, typo]
    (issue,) = [i for i in evaluate(argv).errors if i.key == typo.lstrip("+").partition("=")[0]]
    fixed = evaluate([*argv, *shlex.split(issue.override)])
    assert not fixed.errors, [(i.key, str(i.message)) for i in fixed.errors]
    assert issue.override.startswith(f"~{issue.key} ++{issue.suggestion}={typo.partition('=')[2]}")


@pytest.mark.parametrize("refused", ["actor_rollout_ref.actor.ppo_mini_batch_siz=32", f"{O}.use_flash_atn=True",
                                     f"+{M}.tensor_model_parallel_size=2",
                                     "actor_rollout_ref.actor.policy_loss.tau_pos=1.0"])
def test_a_fix_for_an_argument_hydra_refuses_goes_in_its_place(base_cfg, refused):
    """Hydra stops at an argument it refuses (a misspelt key without '+', '+' on a key that exists), whatever
    follows it: the issue names that argument (``replaces``), and its fix written in its place leaves no error,
    where the same fix pasted after it would not help."""
    argv = [*BASE, *BASIC, refused]
    (issue,) = [i for i in evaluate(argv).errors if i.replaces]
    assert issue.replaces == refused and issue.override
    assert not evaluate([*BASE, *BASIC, *shlex.split(issue.override)]).errors
    assert evaluate([*argv, *shlex.split(issue.override)]).errors


@pytest.mark.parametrize("written", ["trainer.max_ckpt_to_keep=2", "+trainer.max_ckpt_to_keep=2"])
def test_a_key_written_without_the_qualifier_its_section_splits_it_by_gets_each_one(base_cfg, written):
    """verl's PPO trainer has max_actor_ckpt_to_keep and max_critic_ckpt_to_keep, no max_ckpt_to_keep (verl#7295).
    No one key is meant, so no '+' line that verl would silently ignore: each of them, with the value. Without '+'
    Hydra stops at it (an error, the fix in its place); with '+' it is accepted and never read (a warning)."""
    argv = [*BASE, *BASIC, written]
    (issue,) = [i for i in evaluate(argv).issues if i.key == "trainer.max_ckpt_to_keep"]
    assert issue.severity == ("warning" if written.startswith("+") else "error")
    assert issue.override.endswith("trainer.max_actor_ckpt_to_keep=2 trainer.max_critic_ckpt_to_keep=2")
    fixed = evaluate([*argv, *shlex.split(issue.override)] if written.startswith("+") else
                     [*BASE, *BASIC, *shlex.split(issue.override)])
    assert not [i for i in fixed.issues if "ckpt_to_keep" in i.key], [(i.key, str(i.message)) for i in fixed.issues]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_misspelt_key_without_plus_is_said_to_stop_hydra_not_verl(base_cfg, lang):
    """Without '+', a misspelt key of verl's tree never reaches verl: Hydra stops at it. The message says that
    first, and why '+' would not help (verl's dataclass has no such field); 'verl stops with TypeError' alone
    was what the message said, which is what happens only with '+'."""
    res = evaluate([*BASE, *BASIC, "algorithm.adv_estimatr=grpo"])
    (issue,) = [i for i in res.errors if i.key == "algorithm.adv_estimatr"]
    text = render(issue.message, lang)
    assert text.startswith("Hydra") and "algorithm.adv_estimatr=grpo" in text and "AlgoConfig" in text, text
    assert issue.override == "algorithm.adv_estimator=grpo" and issue.replaces == "algorithm.adv_estimatr=grpo"
    with_plus = evaluate([*BASE, *BASIC, "+algorithm.adv_estimatr=grpo"]).errors
    (plus,) = [i for i in with_plus if i.key == "algorithm.adv_estimatr"]
    assert str(plus.message).startswith("verl 0.9.1 converts 'algorithm' into AlgoConfig"), str(plus.message)


def test_megatron_keys_on_the_fsdp_config_are_one_error_whose_fix_composes_the_megatron_config(base_cfg):
    """A launch that forgot --config-name=ppo_megatron_trainer (a recipe's script): every Megatron argument,
    override_transformer_config ones included, was its own error whose advice was to delete it; they are one
    error whose fix composes the Megatron trainer, and a top-level choice written under a section
    (actor_rollout_ref.actor.model_engine) is moved to the top level."""
    fsdp = ["algorithm.adv_estimator=grpo", *BASIC, "actor_rollout_ref.actor.model_engine=megatron",
            f"{M}.tensor_model_parallel_size=2", f"{M}.param_offload=True", f"{O}.recompute_granularity=selective"]
    res = evaluate(fsdp)
    fixes = {i.rule: i for i in res.errors}
    assert sorted(fixes) == ["unknown-key", "verl-key-other-config"], [(i.rule, i.key) for i in res.errors]
    assert fixes["unknown-key"].override == "model_engine=megatron"
    assert fixes["verl-key-other-config"].override == "--config-name=ppo_megatron_trainer"
    assert "3 arguments" in str(fixes["verl-key-other-config"].message)
    fixed = [a if a != "actor_rollout_ref.actor.model_engine=megatron" else "model_engine=megatron" for a in fsdp]
    assert not evaluate([*fixed, "--config-name=ppo_megatron_trainer"]).errors


def test_a_role_size_fix_does_not_follow_a_warnings_fix(base_cfg):
    """The actor runs VPP 2 under mbridge (a warning, whose advice is VPP null) and the critic, built first, owns
    the groups without VPP: the critic is aligned on the actor's VPP 2, not on the warning's null, which the
    2,000-launch fix-point run showed looping (critic VPP null, the actor's VPP 2 still differing)."""
    model = str(FIXTURES / "models" / "Qwen3-0.6B")
    argv = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=gae", *BASIC,
            "critic.ppo_micro_batch_size_per_gpu=1", f"{M}.pipeline_model_parallel_size=2",
            f"{M}.virtual_pipeline_model_parallel_size=2", "critic.megatron.pipeline_model_parallel_size=2"]
    (issue,) = evaluate(argv, model_config=model).errors
    assert issue.rule == "role-sizes-agree"
    assert issue.override == "++critic.megatron.virtual_pipeline_model_parallel_size=2"
    assert not evaluate([*argv, *shlex.split(issue.override)], model_config=model).errors


def test_a_stage_size_another_roles_dict_sets_counts_at_pp_2(base_cfg):
    """MindSpeed's namespace hands the critic's num_layers_in_first_pipeline_stage to the actor built after it:
    with the actor's own last-stage size, megatron-core 0.12.1 divides by PP - 2 = 0 (the oracle ran it: a
    ZeroDivisionError in the actor's TransformerConfig). The error says so and its fix nulls the leaked size in the
    actor's dict, which wins over the namespace; on megatron-core 0.16 (core_r0.16.0) nothing fails."""
    model = str(FIXTURES / "models" / "Qwen3-0.6B")  # 28 layers
    argv = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=gae", *BASIC,
            "critic.ppo_micro_batch_size_per_gpu=1", f"{M}.pipeline_model_parallel_size=2",
            "critic.megatron.pipeline_model_parallel_size=2", f"++{O}.num_layers_in_last_pipeline_stage=13",
            "++critic.megatron.override_transformer_config.num_layers_in_first_pipeline_stage=15"]
    on_26 = [*argv, f"{M}.vanilla_mbridge=True", "critic.megatron.vanilla_mbridge=True"]  # 0.12.1: mbridge only
    (issue,) = evaluate(on_26, model_config=model, release="26.1").errors
    assert (issue.rule, issue.key) == ("uneven-pp-needs-middle", f"{O}.num_layers_in_last_pipeline_stage")
    assert issue.override == f"++{O}.num_layers_in_first_pipeline_stage=null"
    assert not evaluate([*on_26, issue.override], model_config=model, release="26.1").errors
    assert not evaluate(argv, model_config=model, release="core_r0.16.0").errors


def test_an_uneven_split_fix_uses_the_key_another_role_sets(base_cfg):
    """61 layers over PP 2 on the critic, whose dict reaches the actor's namespace: the split goes through the key
    the actor's dict already uses (last stage 30), not the first stage 31, which with the actor's last-stage size
    would fail at PP=2 (the fix-point run's gen-0787 took three rounds that way)."""
    model = str(FIXTURES / "models" / "DeepSeek-V3")  # 61 layers
    argv = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=gae", *BASIC,
            "critic.ppo_micro_batch_size_per_gpu=1", f"{M}.pipeline_model_parallel_size=2",
            "critic.megatron.pipeline_model_parallel_size=2", f"++{O}.num_layers_in_last_pipeline_stage=30"]
    (issue,) = [i for i in evaluate(argv, model_config=model).errors if i.rule == "model-layers-pp"]
    assert issue.override == "++critic.megatron.override_transformer_config.num_layers_in_last_pipeline_stage=30"
    fixed = evaluate([*argv, issue.override], model_config=model).errors
    assert not [i for i in fixed if i.rule in ("model-layers-pp", "uneven-pp-needs-middle")], fixed


def test_an_uneven_split_fix_keeps_interleaving_only_where_every_stage_divides_by_it(base_cfg):
    """27 layers over PP 2 with VPP 2: no split gives both stages an even count, and megatron-core refuses the
    uneven one under interleaving ("number of layers on each middle pipeline rank:13 must be divisible by virtual
    pipeline parallel degree 2"; the doctor's round trip met it after pasting the split alone). The line sets the
    split and drops VPP; 30 layers over PP 4 with VPP 2 keep it (a split of even stages exists)."""
    argv = ["--config-name=ppo_megatron_trainer", *BASIC, f"{M}.pipeline_model_parallel_size=2",
            f"{M}.virtual_pipeline_model_parallel_size=2", f"{M}.vanilla_mbridge=True"]
    model = str(FIXTURES / "models" / "Moonlight-16B-A3B-Instruct")  # 27 layers
    (issue,) = [i for i in evaluate(argv, model_config=model, release="26.1").errors if i.rule == "model-layers-pp"]
    assert issue.override == (f"++{O}.num_layers_in_first_pipeline_stage=14 "
                              f"{M}.virtual_pipeline_model_parallel_size=null")
    fixed = evaluate([*argv, *issue.override.split()], model_config=model, release="26.1").errors
    assert not [i for i in fixed if i.rule.startswith(("model-layers", "model-vpp", "uneven-pp"))], fixed
    from verl_mindspeed.model._constraints import interleaved_split

    assert interleaved_split(27, 2, 2) == ((14, None), False)
    split, keeps = interleaved_split(30, 4, 2)  # 30 = 8 + 8 + 8 + 6: every stage even
    assert keeps and split != (None, None)


def test_the_allgather_overlap_on_a_moe_model_is_dropped_not_cycled(base_cfg):
    """On a MoE model the allgather overlap needs the allgather dispatcher, which megatron refuses under the
    variable_seq_lengths=True verl builds with: the fix drops the overlap (it proposed allgather, whose own rule
    then proposed alltoall, and back: a cycle the 2,000-launch fix-point run found)."""
    model = str(FIXTURES / "models" / "Qwen3-30B-A3B")
    argv = [*BASE, *BASIC, f"+{O}.moe_allgather_overlap_comm=True"]
    first = evaluate(argv, model_config=model)
    assert [(i.rule, i.override) for i in first.errors] == [
        ("moe-allgather-overlap", f"++{O}.moe_allgather_overlap_comm=False")]
    assert not evaluate([*argv, *shlex.split(first.errors[0].override)], model_config=model).errors


def test_a_dict_size_fix_follows_the_engine_size_fixed_in_the_same_report(base_cfg):
    """The dict's EP is aligned on the engine's EP as fixed by the same report (the device count refuses EP 4 on
    2 devices), not on the engine's EP as written: the two fixes pasted together agree."""
    argv = [*BASE, *BASIC, "trainer.n_gpus_per_node=2", f"{M}.expert_model_parallel_size=4",
            f"++{O}.expert_model_parallel_size=1"]
    res = evaluate(argv)
    fixes = {i.rule: i.override for i in res.errors}
    assert f"{M}.expert_model_parallel_size=2" in fixes["expert-parallel-divides-world"].split()
    assert fixes["dict-sizes-agree"] == f"++{O}.expert_model_parallel_size=2"  # not the 4 written for the engine


def test_a_dict_size_is_measured_against_the_size_the_role_sizes_line_makes_live(base_cfg):
    """The actor asks for CP 4 (its dict repeats it, as the preset's injection copies it) and reuses the process
    groups of the critic, built first at CP 1. role-sizes-agree gives the critic CP 4; the dict rule measured the dict
    against the critic's CP 1 and gave CP 1: pasted together, the two lines left the dict's error (the doctor's
    round trip through the preset found it). The dict agrees with the size that line makes live: no error."""
    argv = [*BASE, *BASIC, "algorithm.adv_estimator=gae", f"{M}.context_parallel_size=4",
            f"++{O}.context_parallel_size=4", f"{M}.vanilla_mbridge=True", "critic.megatron.vanilla_mbridge=True"]
    res = evaluate(argv, release="26.1.0_core_r0.12.1")
    rules = {i.rule for i in res.errors}
    assert "role-sizes-agree" in rules and "dict-sizes-agree" not in rules, res.errors
    fixed = list(argv)
    for issue in res.errors:
        fixed += shlex.split(issue.override)
    assert not evaluate(fixed, release="26.1.0_core_r0.12.1").errors


def test_overrides_apply_in_order_as_hydra_applies_them(base_cfg):
    """A key added then deleted on the same line is gone, not an error; deleted twice, the second '~' fails, as in
    Hydra. With another override Hydra refuses on the line, each is screened in the order Hydra applies them."""
    added_and_gone = [f"+{M}.foo=1", f"~{M}.foo"]
    assert not evaluate([*BASE, *BASIC, *added_and_gone]).errors
    refused = f"+{M}.tensor_model_parallel_size=2"  # it exists: '+' fails
    res = evaluate([*BASE, *BASIC, *added_and_gone, refused])
    assert [(i.key, i.rule) for i in res.errors] == [(f"{M}.tensor_model_parallel_size", "hydra-append")]
    res = evaluate([*BASE, *BASIC, *added_and_gone, f"~{M}.foo", refused])
    assert {(i.key, i.rule) for i in res.errors} == {(f"{M}.tensor_model_parallel_size", "hydra-append"),
                                                     (f"{M}.foo", "hydra-delete")}


_FLAGS = sorted(f.name for f in catalog.flags("otc") if len(f.name) > 8)


@st.composite
def _typo(draw):
    name = draw(st.sampled_from(_FLAGS))
    i = draw(st.integers(1, len(name) - 2))
    kind = draw(st.sampled_from(["drop", "swap", "double"]))
    typed = {"drop": name[:i] + name[i + 1:], "swap": name[:i] + name[i + 1] + name[i] + name[i + 2:],
             "double": name[:i] + name[i] + name[i:]}[kind]
    return typed, name


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_typo(), min_size=3, max_size=8, unique_by=lambda t: t[1]))
def test_random_typos_either_get_no_fix_or_a_fix_that_pastes_back(base_cfg, typos):
    typos = [(t, m) for t, m in typos if t != m and t not in universe.known_otc_keys()]
    argv = [*BASE, *(f"+{O}.{t}={_value(m)}" for t, m in typos)]
    first = evaluate(argv)
    with_fix = [f"{O}.{t}" for t, _ in typos
                if any(i.key == f"{O}.{t}" and i.severity == "error" and i.override for i in first.issues)]
    if with_fix:
        round_trip(argv[len(BASE):], with_fix)


def test_fix_lines_stay_whole_in_a_shell():
    from verl_mindspeed.errors import Issue
    from verl_mindspeed.resolver._review import review

    issues = [Issue("error", "a.b", "m", override="+a.b=[8, 16]"),
              Issue("error", "c.d", "m", override="++c.d=1 ++e.f=2"),
              Issue("error", "g.h", "m", override="g.h='\"0,7\"'")]
    assert [i.override for i in review(issues, None, [])] == ["'+a.b=[8, 16]'", "++c.d=1 ++e.f=2", "g.h='\"0,7\"'"]


def paste_all(argv: list[str], issues) -> list[str]:
    """Every word of every fix line, as a user pastes a report's fixes: each replaces the argument of its key or
    is added."""
    out = list(argv)
    for issue in issues:
        for word in shlex.split(issue.override or ""):
            at = [i for i, arg in enumerate(out) if _key(arg) == _key(word)]
            if at:
                out[at[-1]] = word
            else:
                out.append(word)
    return out


def test_the_fixes_of_one_report_agree_when_pasted_together(base_cfg):
    """The actor's TP does not divide the heads (fix: TP=2) and the critic, built first, has another TP. The fix
    that aligns the roles proposes the actor's fixed TP, so one round of pasting leaves no error (it used to
    propose the actor's TP as written, 3, and a third check was needed)."""
    argv = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=gae", "trainer.n_gpus_per_node=8",
            f"{M}.tensor_model_parallel_size=3", "critic.megatron.tensor_model_parallel_size=2"]
    model = str(FIXTURES / "models" / "Qwen3-0.6B")
    first = evaluate(argv, model_config=model)
    assert {i.rule for i in first.errors} >= {"role-sizes-agree"}
    fixed = paste_all(argv, first.errors)
    assert "critic.megatron.tensor_model_parallel_size=2" in " ".join(fixed)
    assert not evaluate(fixed, model_config=model).errors


A_SP = f"++{O}.sequence_parallel=True"
INTERACTING = {
    # SP at TP=1 where PP x CP already take the 8 devices: raising TP would not divide them; SP goes off
    "sp-without-room-for-tp": ("Qwen3-0.6B", [f"{M}.pipeline_model_parallel_size=2", f"{M}.context_parallel_size=4",
                                              A_SP]),
    # the fix that moves PP to 1 takes VPP and the uneven first stage with it
    "pp-to-1-takes-vpp": ("Qwen3-0.6B", [f"{M}.tensor_model_parallel_size=2", f"{M}.pipeline_model_parallel_size=2",
                                         f"{M}.context_parallel_size=4", f"{M}.virtual_pipeline_model_parallel_size=1",
                                         f"++{O}.num_layers_in_first_pipeline_stage=4"]),
    # MC2 at TP=1 where PP x CP take the devices: MC2 goes off rather than a TP the devices refuse
    "mc2-without-room-for-tp": ("Qwen3-8B", [f"{M}.pipeline_model_parallel_size=2", f"{M}.context_parallel_size=4",
                                             f"++{O}.use_ascend_mc2=True"]),
    # EP on a dense model with TP and no SP: both errors propose EP=1 (SP on would meet TP fixed elsewhere)
    "dense-ep-with-tp": ("Qwen3-0.6B", [f"{M}.expert_model_parallel_size=2", f"++{O}.tensor_model_parallel_size=4",
                                        f"++{O}.sequence_parallel=False"]),
    # the alltoall overlap with moe_tp_extend_ep on megatron-core 0.12, where verl's variable_seq_lengths rules
    # alltoall_seq out: moe_tp_extend_ep goes off instead of a dispatcher the next check refuses
    "overlap-tp-extend-on-0.12": ("DeepSeek-V3", [f"{M}.expert_model_parallel_size=4",
                                                  f"++{O}.moe_tp_extend_ep=True",
                                                  f"++{O}.moe_alltoall_overlap_comm=True"]),
    # SP (and MC2) with the actor's TP=4 where the critic, built first, owns TP=1 groups that mbridge builds with:
    # the critic's TP moves, as role-sizes-agree proposes, not the actor's, which is 4 already
    "sp-on-groups-of-another-role": ("Qwen3-0.6B", ["algorithm.adv_estimator=gae", f"{M}.tensor_model_parallel_size=4",
                                                    f"{M}.vanilla_mbridge=True", A_SP]),
    "mc2-on-groups-of-another-role": ("Qwen3-8B", ["algorithm.adv_estimator=gae", f"{M}.tensor_model_parallel_size=4",
                                                   f"{M}.vanilla_mbridge=True", A_SP, f"++{O}.use_ascend_mc2=True"]),
    # the alltoall overlap with its MoE companions on a model without experts: every overlap error turns the
    # overlap off, where its companions' fixes (grouped GEMM, alltoall_seq, moe_tp_extend_ep) met the next check
    "overlap-on-a-dense-model": ("Qwen2.5-7B-Instruct", [
        f"{M}.context_parallel_size=4", f"{M}.expert_model_parallel_size=4", f"{M}.tensor_model_parallel_size=4",
        f"++{O}.moe_tp_extend_ep=True", f"++{O}.moe_alltoall_overlap_comm=True", f"++{O}.sequence_parallel=False",
        "trainer.n_gpus_per_node=2"]),
    # roles aligned on the actor's VPP where the actor has no pipeline: VPP goes for every role
    "vpp-aligned-without-pp": ("Qwen3-0.6B", ["algorithm.adv_estimator=gae",
                                              f"{M}.virtual_pipeline_model_parallel_size=1"]),
}


@pytest.mark.parametrize("case", sorted(INTERACTING))
def test_interacting_fixes_reach_no_error_in_one_round(base_cfg, case):
    """Launches whose fixes used to undo each other (found by the fix-point run over the generated space): each
    fix line now takes the others' effect into account, so pasting every fix once leaves no error."""
    model, lines = INTERACTING[case]
    argv = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo", "trainer.n_gpus_per_node=8",
            "actor_rollout_ref.actor.use_kl_loss=True", *lines]
    kw = {"model_config": str(FIXTURES / "models" / model), "release": "26.1.0_core_r0.12.1"}
    first = evaluate(argv, **kw)
    assert first.errors and all(i.override for i in first.errors), [(i.rule, i.override) for i in first.errors]
    fixed = paste_all(argv, first.errors)
    left = evaluate(fixed, **kw).errors
    assert not left, (fixed, [(i.rule, i.key, str(i.message)) for i in left])


def test_a_layout_no_single_size_can_fit_shrinks_to_the_devices(base_cfg):
    """TP 4 x CP 4 on 2 devices: no one size can change enough, so the fix sets CP to 1 and TP to the largest size
    the 2 devices and the model allow, instead of leaving the error without a fix (found by the fix-point run)."""
    argv = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo", *BASIC, "trainer.n_gpus_per_node=2",
            f"{M}.tensor_model_parallel_size=4", f"{M}.context_parallel_size=4"]
    kw = {"model_config": str(FIXTURES / "models" / "Qwen3-8B"), "release": "26.1.0_core_r0.12.1"}
    first = evaluate(argv, **kw)
    world = [i for i in first.errors if i.rule == "model-parallel-divides-world"]
    assert world and world[0].override, [(i.rule, i.override) for i in first.errors]
    fixed = paste_all(argv, first.errors)
    assert not evaluate(fixed, **kw).errors, fixed


@pytest.mark.parametrize("train, mini, n, nodes", [(30, 12, 1, 1), (4, 12, 1, 1), (100, 24, 5, 2), (64, 7, 3, 1),
                                                   (9, 9, 1, 2), (1000, 250, 4, 4)])
def test_batch_sizes_verl_refuses_get_the_nearest_sizes_that_pass(base_cfg, train, mini, n, nodes):
    """Every batch-divisibility error has a fix; pasted together they clear them all (the mini batch first: it
    bounds the train batch), and the sizes move no further than they must."""
    argv = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo", *BASIC,
            "trainer.n_gpus_per_node=8", f"trainer.nnodes={nodes}", f"data.train_batch_size={train}",
            f"actor_rollout_ref.actor.ppo_mini_batch_size={mini}", f"actor_rollout_ref.rollout.n={n}"]
    found = [i for i in evaluate(argv).errors if i.rule == "batch-divisibility"]
    assert found and all(i.override for i in found)
    fixed = [*argv, *(w for i in found for w in shlex.split(i.override))]
    assert [i.line() for i in evaluate(fixed).errors] == []


@pytest.mark.parametrize("written, fixed", [
    ("context_parallel_algo=ring_attention", "context_parallel_algo=megatron_cp_algo"),
    ("moe_token_dispatcher_type=all_to_all", "moe_token_dispatcher_type=alltoall"),
    ("recompute_num_layers=1.5", "recompute_num_layers=2"),
])
def test_a_value_far_from_every_choice_gets_the_one_it_names(base_cfg, written, fixed):
    """A name MindSpeed's docs give a choice, and a fraction where an integer goes, are value errors whose fix is the
    choice or the nearest integer; pasted, the value error is gone."""
    otc = "actor_rollout_ref.actor.megatron.override_transformer_config"
    argv = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo", *BASIC, f"+{otc}.{written}",
            f"+{otc}.recompute_granularity=full", f"+{otc}.recompute_method=uniform"] if "recompute" in written else \
        ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo", *BASIC, f"+{otc}.{written}"]
    (issue,) = [i for i in evaluate(argv).errors if i.rule == "value"]
    assert issue.override == f"++{otc}.{fixed}"
    assert not [i for i in evaluate([*argv, issue.override]).errors if i.rule == "value"]


def test_noop_layers_with_a_stray_item_keeps_its_digits(base_cfg):
    otc = "actor_rollout_ref.actor.megatron.override_transformer_config"
    argv = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo", *BASIC, f"+{otc}.noop_layers='a,1'"]
    (issue,) = [i for i in evaluate(argv).errors if i.rule == "noop-layers-format"]
    assert issue.override == f"'++{otc}.noop_layers=\"1\"'"
    assert not [i for i in evaluate([*argv, *shlex.split(issue.override)]).errors if i.rule == "noop-layers-format"]


def test_a_fix_for_a_role_that_inherits_the_actors_dict_keeps_the_inheritance(base_cfg):
    """The ref inherits the actor's dict (TP 4) but its engine says TP 2: the fix moves the ref's engine, not a line
    under the ref's dict, which would replace the inherited dict and drop the actor's other switches (the lost-keys
    warning). Pasted with the report's other fixes, the launch has no error and the ref still inherits."""
    import sys

    sys.path.insert(0, str(FIXTURES.parent / "conformance"))
    import fixpoint

    ref = "actor_rollout_ref.ref.megatron"
    argv = [*BASE, *BASIC, f"{M}.tensor_model_parallel_size=4", f"{M}.expert_model_parallel_size=2",
            f"{ref}.expert_model_parallel_size=2", f"{ref}.tensor_model_parallel_size=2", f"+{O}.use_flash_attn=True",
            f"+{O}.moe_grouped_gemm=True", f"+{O}.tensor_model_parallel_size=4"]
    check = lambda a: evaluate(a, model_config=str(FIXTURES / "models" / "Qwen3-30B-A3B"))  # noqa: E731
    (issue,) = [i for i in check(argv).errors if i.rule == "dict-sizes-agree"]
    assert issue.override == f"{ref}.tensor_model_parallel_size=4"
    outcome = fixpoint.converge(argv, check)
    assert outcome.status == "fixed" and outcome.rounds == 1
    assert not any(".ref.megatron.override_transformer_config" in a for a in outcome.argv)
    assert "ref-lost-inherited" not in {i.rule for i in outcome.last.issues}


@pytest.mark.parametrize("typo, meant", [("use_flash_atn", "use_flash_attn"),
                                         ("moe_grouped_gem", "moe_grouped_gemm")])
def test_a_near_miss_the_bridge_refuses_gets_one_line_and_it_pasted_leaves_no_error(base_cfg, typo, meant):
    """On core_r0.18.0 the Megatron-Bridge provider refuses any key it lacks. A near miss is one error, the near
    miss's: the bridge's own error on that key printed a second ``~key``, and pasting both lines as printed ended in
    Hydra's "Could not delete" (the first deletion had already run)."""
    argv = [*BASE, *BASIC, f"++{O}.{typo}=True"]
    first = evaluate(argv, release="core_r0.18.0")
    on_key = [i for i in first.errors if i.key == f"{O}.{typo}"]
    assert [i.rule for i in on_key] == ["unknown-key"], [(i.rule, str(i.message)) for i in on_key]
    pasted = [*argv, *(word for i in first.errors for word in shlex.split(i.override or ""))]
    second = evaluate(pasted, release="core_r0.18.0")
    assert not second.errors, [(i.rule, i.key, str(i.message)) for i in second.errors]
    assert meant in second.roles["actor"]["override_transformer_config"]


def test_a_dict_vpp_beside_a_critic_built_first_with_vpp_is_refused_in_the_first_report(base_cfg):
    """mbridge builds every role on the process groups of the critic, built first with VPP 2; the actor leaves VPP
    unset and its dict says VPP 2. role-sizes-agree's line aligns the critic on the actor (VPP null), so the dict is
    measured against that null, in the same report: one round of pasting leaves no error. The actor's unset VPP was
    read as "no planned size" and the dict was measured against the critic's VPP 2, so its error showed only after
    the first paste."""
    argv = [*BASE, *BASIC, "algorithm.adv_estimator=gae", "trainer.n_gpus_per_node=8",
            "critic.ppo_micro_batch_size_per_gpu=1", f"{M}.vanilla_mbridge=True",
            "critic.megatron.vanilla_mbridge=True",
            f"{M}.pipeline_model_parallel_size=2", "critic.megatron.pipeline_model_parallel_size=2",
            "critic.megatron.virtual_pipeline_model_parallel_size=2", f"++{O}.virtual_pipeline_model_parallel_size=2"]
    model = str(FIXTURES / "models" / "Qwen3-8B")
    first = evaluate(argv, model_config=model)
    dict_vpp = ("dict-sizes-agree", f"{O}.virtual_pipeline_model_parallel_size")
    assert dict_vpp in {(i.rule, i.key) for i in first.errors}
    pasted = [*argv, *(word for i in first.errors for word in shlex.split(i.override or ""))]
    assert not evaluate(pasted, model_config=model).errors
