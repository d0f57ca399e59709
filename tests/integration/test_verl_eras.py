"""verl's real trainer config, for verl 0.6.1, 0.7.1, 0.8.0 (YAML from their wheels) and 0.9.1 (installed):
compose with user overrides and every preset, resolve, inject, and check each role's dict exactly."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from _verl_cases import BASE, CASE_IDS, CASES, ROLES, A, C, O, R, otc, run, section
from omegaconf import OmegaConf

from verl_mindspeed import eras as vv
from verl_mindspeed.compose import era_of_tree, tree_version

ROOT = Path(__file__).resolve().parents[2]
PRESETS = sorted(p.stem for p in (ROOT / "conf" / "mindspeed").glob("*.yaml"))
ERAS = {"0.6.1": vv.LEGACY, "0.7.1": vv.LEGACY, "0.8.0": vv.ENGINE, "0.9.0": vv.ENGINE, "0.9.1": vv.ENGINE}


def test_tree_version_and_era(verl_tree):
    version, tree = verl_tree
    assert tree_version(tree) == version
    assert era_of_tree(tree) == ERAS[version] == vv.era_of(version)


def test_era_from_layout_without_version_file(verl_tree, tmp_path):
    version, tree = verl_tree
    copy_dir = tmp_path / "config"
    import shutil

    shutil.copytree(tree, copy_dir)
    assert tree_version(copy_dir) is None
    assert era_of_tree(copy_dir) == ERAS[version]


@pytest.mark.parametrize("text, era", [("0.6.0", vv.LEGACY), ("0.7.1", vv.LEGACY), ("0.8.0.dev0", vv.ENGINE),
                                       ("0.9.1+npu", vv.ENGINE), ("1.0", vv.ENGINE)])
def test_era_of_version(text, era):
    assert vv.era_of(text) == era


def test_era_before_repatch_hands_mindspeed_nothing():
    """verl 0.4/0.5 build the roles as the legacy workers do but never call repatch (it arrived in 0.6.0)."""
    assert vv.era_of("0.5.0") == vv.era_of("0.4.1") == vv.PRE_REPATCH
    spec = vv.ERAS[vv.PRE_REPATCH]
    assert not any(spec.repatches(r) for r in ("actor", "critic", "ref"))
    assert spec.owner_of(["ref", "actor"]) == "actor"


def test_engine_keys_come_from_the_tree(verl_tree):
    """known_megatron_keys / otc_defaults are the tree's own (read independently here)."""
    version, tree = verl_tree
    from verl_mindspeed.compose import find_verl_tree

    found = find_verl_tree(str(tree))
    engine = OmegaConf.to_container(OmegaConf.load(tree / "engine" / "megatron.yaml"), resolve=False)
    assert found.otc_defaults == engine["override_transformer_config"]
    assert set(engine) <= found.known_megatron_keys
    # grad_offload exists in 0.6/0.7's engine YAML and was removed by 0.9.1
    assert ("grad_offload" in found.known_megatron_keys) == (version != "0.9.1")


def test_key_of_another_release_is_reported(verl_tree):
    version, tree = verl_tree
    r = run([*BASE, f"{A}.grad_offload=True"], str(tree))
    if version == "0.9.1":  # not in the YAML: Hydra refuses, reported on the override
        assert [i.key for i in r.comp.issues] == [f"{A}.grad_offload"]
    else:
        assert r.comp.issues == [] and r.res.ok
        assert OmegaConf.select(r.cfg, f"{A}.grad_offload") is True


def test_untouched_launch_gets_only_flash_attention(verl_tree):
    version, tree = verl_tree
    r = run(list(BASE), str(tree))
    assert r.res.ok and r.comp.issues == []
    for role in ROLES:
        legacy_critic = role == "critic" and ERAS[version] == vv.LEGACY  # never handed to MindSpeed
        assert otc(r.cfg, role) == {**r.defaults, **({} if legacy_critic else {"use_flash_attn": True})}, role


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_case_injects_exact_dicts(verl_tree, case):
    version, tree = verl_tree
    r = run([*BASE, *case.overrides], str(tree))
    assert r.comp.issues == []
    assert r.res.errors == []
    warned = {i.rule for i in r.res.warnings}
    assert set(case.warnings) <= warned
    for role in ROLES:
        expected = case.expected(role, r.defaults, ERAS[version])
        assert otc(r.cfg, role) == expected, role
        assert r.res.roles[role]["override_transformer_config"] == expected, role
        for key, value in case.megatron.get(role, {}).items():
            assert OmegaConf.select(section(r.cfg, role), key) == value, (role, key)
    # after injection ref holds its own copy, equal to the actor's (it no longer interpolates)
    assert not OmegaConf.is_interpolation(section(r.cfg, "ref"), "override_transformer_config")
    assert otc(r.cfg, "ref") == otc(r.cfg, "actor")


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_resolving_again_changes_nothing(verl_tree, case):
    version, tree = verl_tree
    r = run([*BASE, *case.overrides], str(tree))
    before = OmegaConf.to_container(r.cfg, resolve=False)
    again = run_again(r)
    assert again.roles == r.res.roles
    assert [i for i in again.issues if i.severity == "error"] == []
    assert OmegaConf.to_container(r.cfg, resolve=False) == before


def run_again(r):
    from verl_mindspeed.resolver import inject, resolve

    res = resolve(r.cfg, known_megatron_keys=r.comp.tree.known_megatron_keys, otc_defaults=r.comp.tree.otc_defaults,
                  era=era_of_tree(r.comp.tree.config_dir), injected=True)
    inject(r.cfg, res)
    return res


def test_ref_inherits_layout_only_from_07(verl_tree):
    """0.6.1's ref YAML inherits the dict but not TP/CP; 0.7.1+ inherit both (verl's own YAML)."""
    version, tree = verl_tree
    r = run([*BASE, f"{A}.tensor_model_parallel_size=2", f"{C}.tensor_model_parallel_size=2",
             f"+{O}.use_ascend_mc2=True"], str(tree))
    ref_tp = OmegaConf.select(section(r.cfg, "ref"), "tensor_model_parallel_size")
    if version == "0.6.1":  # the ref's own TP=1 is ignored: the actor's worker set up TP=2 groups
        assert ref_tp == 1 and r.res.errors == []
        assert [(i.key, i.severity) for i in r.res.issues if i.rule == "role-sizes-agree"] == [
            (f"{R}.tensor_model_parallel_size", "warning")]
    else:
        assert ref_tp == 2
        assert r.res.roles["ref"]["override_transformer_config"]["tensor_model_parallel_size"] == 2


def test_ref_write_replaces_inherited_dict(verl_tree):
    """Any write under ref's dict replaces the interpolation: ref loses the actor's keys."""
    version, tree = verl_tree
    r = run([*BASE, f"+{O}.use_fused_rmsnorm=True", f"+{O}.normalization=RMSNorm",
             f"++{R}.override_transformer_config.use_flash_attn=True"], str(tree))
    ref = r.res.roles["ref"]["override_transformer_config"]
    assert "normalization" not in ref  # a model-shape key does not travel
    lost = [i for i in r.res.warnings if i.rule == "ref-lost-inherited"]
    assert [i.key for i in lost] == [f"{R}.override_transformer_config"]
    if ERAS[version] == vv.ENGINE:  # the ref's engine repatches with its own dict: the switch is carried over
        assert ref["use_fused_rmsnorm"] is True
    else:  # legacy: MindSpeed only ever sees the actor's dict, which has it; the ref's dict stays as written
        assert "use_fused_rmsnorm" not in ref


@pytest.mark.skipif(not PRESETS, reason="no presets in conf/mindspeed yet")
@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset(verl_tree, preset):
    """Each preset with a user override on top: composes on every tree, resolves, injects, is idempotent."""
    version, tree = verl_tree
    user = [f"{A}.tensor_model_parallel_size=2", f"{R}.tensor_model_parallel_size=2",
            f"{C}.tensor_model_parallel_size=2", f"++{O}.recompute_modules=[core_attn]"]
    if preset == "long_context":
        user += [f"{A}.context_parallel_size=2", f"{R}.context_parallel_size=2", f"{C}.context_parallel_size=2",
                 f"++{O}.seq_length=4096"]
    if preset == "mla_moe":  # MLA's mask is seq_length x seq_length: mbridge and the converter leave it unset
        user += [f"++{O}.seq_length=4096", f"++{C}.override_transformer_config.seq_length=4096"]
    r = run([*BASE, f"+mindspeed={preset}", *user], str(tree), do_inject=False)
    assert r.comp.issues == [], r.comp.issues
    assert r.res.errors == [], [str(i) for i in r.res.errors]
    composed = {role: otc(r.cfg, role) for role in ROLES}
    if preset != "validate":
        assert composed["actor"] != r.defaults, "the preset set nothing in the actor's dict"
    from verl_mindspeed.resolver import inject

    inject(r.cfg, r.res)
    actor = otc(r.cfg, "actor")
    assert composed["actor"].items() <= actor.items()  # nothing the user or preset set is lost or changed
    assert actor.get("use_flash_attn") is True
    if OmegaConf.select(r.cfg, f"{A}.context_parallel_size") > 1:
        assert actor["context_parallel_size"] == OmegaConf.select(r.cfg, f"{A}.context_parallel_size")
    if actor.get("use_ascend_mc2"):
        assert actor["tensor_model_parallel_size"] == 2 and actor["sequence_parallel"] is True
    assert otc(r.cfg, "ref") == actor
    critic = otc(r.cfg, "critic")
    for key, value in critic.items():  # the critic's keys are its own or the actor's, never invented
        assert value == composed["critic"].get(key, actor.get(key, value)), key
    before = copy.deepcopy(OmegaConf.to_container(r.cfg, resolve=False))
    assert run_again(r).roles == r.res.roles
    assert OmegaConf.to_container(r.cfg, resolve=False) == before


def test_actor_tp2_with_the_default_critic(verl_tree):
    """verl 0.8+: the critic builds first and owns the groups, so the actor silently runs TP=1: an error with the
    fix. verl 0.6/0.7: the actor's worker owns them and the critic's TP=1 is ignored: a warning. Equal sizes pass."""
    version, tree = verl_tree
    r = run([*BASE, f"{A}.tensor_model_parallel_size=2", f"{R}.tensor_model_parallel_size=2"], str(tree),
            do_inject=False)
    found = [(i.severity, i.key, i.override) for i in r.res.issues if i.rule == "role-sizes-agree"]
    if ERAS[version] == vv.ENGINE:
        assert (("error", f"{A}.tensor_model_parallel_size", f"++{C}.tensor_model_parallel_size=2") in found)
    else:
        assert found == [("warning", f"{C}.tensor_model_parallel_size", f"++{C}.tensor_model_parallel_size=2")]
    aligned = run([*BASE, f"{A}.tensor_model_parallel_size=2", f"{R}.tensor_model_parallel_size=2",
                   f"{C}.tensor_model_parallel_size=2"], str(tree))
    assert [i for i in aligned.res.issues if i.rule == "role-sizes-agree"] == [] and aligned.res.ok
