"""The ``mindspeed`` presets composed with verl 0.9.1's real trainer config, as ``main_ppo`` composes them."""

from __future__ import annotations

from pathlib import Path

import pytest
from _preset_cases import CASES, ROOT, after_preset, corpus_argv, launch, require
from omegaconf import OmegaConf

from helpers import BASIC
from verl_mindspeed import presets
from verl_mindspeed.catalog import OTC, ROLE_PREFIXES
from verl_mindspeed.compose import compose_argv
from verl_mindspeed.launch import evaluate
from verl_mindspeed.resolver import resolve

A, R = ROLE_PREFIXES["actor"], ROLE_PREFIXES["ref"]
PRESETS = sorted(CASES)
BASE = ["--config-name=ppo_megatron_trainer", "actor_rollout_ref.actor.use_kl_loss=True",
        "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2", "critic.megatron.tensor_model_parallel_size=2",
        *BASIC]


@pytest.fixture(autouse=True)
def _verl():
    require("verl")


def _otc(preset: str) -> dict:
    prefix = f"{A}.{OTC}."
    return {k[len(prefix):]: v for k, v in presets.settings(preset).items() if k.startswith(prefix)}


def test_every_yaml_is_a_documented_preset():
    files = sorted(p.stem for p in (ROOT / "conf" / "mindspeed").glob("*.yaml"))
    assert files == presets.names() == PRESETS
    for name in files:
        text = (ROOT / "conf" / "mindspeed" / f"{name}.yaml").read_text(encoding="utf-8")
        assert text.startswith("# @package _global_\n"), name
        assert f"# mindspeed={name}: " in text and "MindSpeed release" in text, name
        assert presets.installs_callback(name), name


def test_the_search_path_plugin_is_discovered():
    from hydra.core.plugins import Plugins
    from hydra.plugins.search_path_plugin import SearchPathPlugin

    found = {f"{c.__module__}.{c.__name__}" for c in Plugins.instance().discover(SearchPathPlugin)}
    assert "hydra_plugins.verl_mindspeed.verl_mindspeed_searchpath.VerlMindSpeedSearchPathPlugin" in found


@pytest.mark.parametrize("preset", PRESETS)
def test_preset_on_a_real_launch_resolves_without_errors(preset):
    comp = compose_argv(launch(preset))
    assert comp.issues == []
    res = resolve(comp.cfg, known_megatron_keys=comp.tree.known_megatron_keys, otc_defaults=comp.tree.otc_defaults,
                  injected=True)
    assert res.errors == [], [i.line() for i in res.errors]
    assert OmegaConf.select(comp.cfg, "hydra") is None  # the callback lives in Hydra's node, not verl's
    for key, value in _otc(preset).items():
        # where verl reads it: the actor's dict, and ref's through verl's interpolation
        assert comp.cfg.actor_rollout_ref.actor.megatron[OTC][key] == value, key
        assert OmegaConf.select(comp.cfg, f"{R}.{OTC}.{key}") == value, key
        assert res.roles["actor"][OTC][key] == value, key


@pytest.mark.parametrize("preset", [p for p in PRESETS if p != "validate"])
def test_check_reports_exactly_what_the_preset_turns_on(preset):
    # MC2 is process-wide, so injection gives it to the critic, which does not inherit the actor's TP
    base = list(BASE)
    without = evaluate(base, launcher=True)  # the same injection, without the preset's own keys
    with_preset = evaluate(base + [f"+mindspeed={preset}"])
    assert with_preset.ok, [i.line() for i in with_preset.errors]
    before, after = without.roles["actor"][OTC], with_preset.roles["actor"][OTC]
    turned_on = {k: v for k, v in after.items() if before.get(k) != v}
    expected = {k: v for k, v in _otc(preset).items() if before.get(k) != v}
    # MindSpeed's repatch needs TP in the dict for MC2 (mindspeed/features_manager/tensor_parallel/mc2.py):
    # the resolver adds it
    if preset == "mc2":
        expected["tensor_model_parallel_size"] = 2
    assert turned_on == expected


def test_validate_sets_nothing():
    assert presets.settings("validate") == {}
    assert evaluate(BASE + ["+mindspeed=validate"]).roles == evaluate(BASE, launcher=True).roles


def test_user_overrides_after_a_preset_win_with_plus_plus():
    key = f"{A}.{OTC}.use_fused_swiglu"
    comp = compose_argv(BASE + ["+mindspeed=dense", f"++{key}=False"])
    assert comp.issues == [] and OmegaConf.select(comp.cfg, key) is False
    comp = compose_argv(BASE + ["+mindspeed=dense", f"{key}=False"])
    assert comp.issues == [] and OmegaConf.select(comp.cfg, key) is False


def test_plus_on_a_key_the_preset_set_fails_with_the_plus_plus_fix():
    key = f"{A}.{OTC}.use_flash_attn"
    comp = compose_argv(BASE + ["+mindspeed=dense", f"+{key}=True"])
    assert [(i.rule, i.override) for i in comp.issues] == [("hydra-append", f"++{key}=True")]


def test_launch_lines_need_only_the_documented_rewrite():
    """A preset on a launch line: exactly the '+' lines of keys the preset also sets become '++'."""
    argv = corpus_argv("qwen3_30b_a3b_moe_grpo")
    rewritten = after_preset(argv, "moe")
    changed = [(a, b) for a, b in zip(argv, rewritten) if a != b]
    keys = ("use_flash_attn", "moe_token_dispatcher_type", "moe_grouped_gemm",
            "use_fused_moe_token_permute_and_unpermute")
    assert [a for a, _ in changed] == [a for a in argv if a.startswith("+") and a[1:].split("=")[0] in
                                       {f"{A}.{OTC}.{k}" for k in keys}]
    assert all(b == "+" + a for a, b in changed) and len(changed) == len(keys)


def test_two_presets_compose_as_a_list():
    comp = compose_argv(BASE + ["+mindspeed=[moe,memory_saving]"])
    otc = comp.cfg.actor_rollout_ref.actor.megatron[OTC]
    assert otc.moe_grouped_gemm is True and otc.swap_optimizer is True and otc.recompute_granularity == "full"


@pytest.mark.parametrize("typo, near", [("dens", "dense"), ("memory-saving", "memory_saving"), ("mla-moe", "mla_moe")])
def test_a_typo_in_the_preset_name_fails_loudly(typo, near):
    comp = compose_argv(BASE + [f"+mindspeed={typo}"])
    (issue,) = comp.issues
    assert issue.severity == "error" and issue.rule == "hydra-group" and f"did you mean '{near}'" in issue.message
    assert issue.override == f"+mindspeed={near}"


def test_mc2_needs_tensor_parallelism():
    # MindSpeed 26.1.0 raises (core_r0.16.0 warns), on megatron-core 0.12.1, where only mbridge builds the model
    res = evaluate(["--config-name=ppo_megatron_trainer", "+mindspeed=mc2", *BASIC,
                    "actor_rollout_ref.actor.megatron.vanilla_mbridge=True", "critic.megatron.vanilla_mbridge=True"],
                   release="26.1")
    assert {i.key.rsplit(".", 1)[-1] for i in res.errors} == {"tensor_model_parallel_size", "sequence_parallel"}


def test_presets_are_package_data_next_to_the_repository_conf():
    shipped = Path(presets.compose.__globals__["resources"].files(presets.PACKAGE)) / presets.GROUP
    assert sorted(p.name for p in shipped.glob("*.yaml")) == sorted(
        p.name for p in (ROOT / "conf" / "mindspeed").glob("*.yaml"))
