"""verl's key history across releases: the shipped index, checks against other releases and entry points,
and the real public launch scripts under tests/fixtures/scripts (their sources are in their headers). The
corpus of launch lines outside the repository is read by tests/conformance/test_corpus_versions.py.

The release trees come from PyPI once (``verl_mindspeed.compose._trees``, the code ``check --verl-version``
uses); offline they skip, and under ``VERL_MINDSPEED_FULL_STACK=1`` a missing tree is a failure.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pytest import param

from helpers import BASIC, FIXTURES, ROOT, full_stack
from verl_mindspeed.catalog import verl_keys
from verl_mindspeed.cli import main
from verl_mindspeed.compose import _trees
from verl_mindspeed.errors import EvaluationError

A = "actor_rollout_ref.actor"
ALL = ("0.4.1", "0.5.0", "0.6.0", "0.6.1", "0.7.0", "0.7.1", "0.8.0", "0.9.0", "0.9.1")
CHECKED = ("0.6.1", "0.7.1", "0.8.0", "0.9.0", "0.9.1")
SCRIPTS = FIXTURES / "scripts"
ENV = {"HOME": "/home/user"}


def tree(version: str) -> Path:
    try:
        return _trees.fetch_tree(version)
    except EvaluationError as exc:
        if full_stack():
            pytest.fail(f"verl {version}'s tree must be available under tools/test.sh: {exc}")
        pytest.skip(f"verl {version}'s tree: {exc}")


def check(capsys, *argv: str, env=None) -> tuple[int, dict]:
    """``check --json`` on a launch with the micro batch sizes every real launch sets (verl-micro-batch)."""
    old = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    try:
        code = main(["check", "--json", *argv, *BASIC])
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    return code, json.loads(capsys.readouterr().out)


def errors(data: dict) -> dict[str, dict]:
    return {e["key"]: e for e in data["errors"]}


# --- the index -------------------------------------------------------------------------------------------
def test_the_index_states_the_known_facts():
    assert verl_keys.releases() == ALL
    gone = verl_keys.base_releases(f"{A}.megatron.grad_offload")
    assert gone == ALL[:-1]  # 0.4.1 to 0.9.0, gone in 0.9.1
    assert verl_keys.base_releases("critic.megatron.grad_offload") == ALL[:-1]
    assert verl_keys.base_releases(f"{A}.load_weight")[-1] == "0.8.0"
    assert verl_keys.base_releases(f"{A}.router_replay")[-1] == "0.9.0"
    assert verl_keys.base_releases(f"{A}.megatron.router_replay") == ("0.7.1", "0.8.0", "0.9.0", "0.9.1")
    assert verl_keys.move_of(f"{A}.router_replay.mode") == (f"{A}.megatron.router_replay.mode", "0.9.1")
    assert verl_keys.group_options("model_engine")["mindspeed"] == ("0.8.0", "0.9.0")
    mindspeed = verl_keys.configs()["model_engine=mindspeed"]
    assert mindspeed["releases"] == "0.8.0-0.9.0" and f"{A}.mindspeed.param_offload" in mindspeed["keys"]
    for key in (f"{A}.megatron.pad_to_length", f"{A}.megatron.pad_to_length_bucket",
                f"{A}.entropy_from_logits_with_chunking", f"{A}.entropy_from_logits_chunk_size"):
        assert verl_keys.base_releases(key) == ("0.9.0", "0.9.1"), key
    entries = {info["entry"] for info in verl_keys.configs().values()}
    assert {"verl.experimental.one_step_off_policy.main_ppo",
            "verl.experimental.fully_async_policy.fully_async_main"} <= entries


def test_the_shipped_index_is_what_the_tool_builds():
    for version in ALL:
        tree(version)
    spec = importlib.util.spec_from_file_location("build_key_history", ROOT / "tools" / "build_key_history.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    shipped = (ROOT / "src/verl_mindspeed/catalog/data/verl_keys.json").read_text(encoding="utf-8")
    assert tool.render(tool.build()) == shipped, "run: python tools/build_key_history.py"


# --- other releases --------------------------------------------------------------------------------------
@pytest.mark.parametrize("version", CHECKED)
def test_check_against_a_release_composes_its_tree(capsys, version):
    tree(version)
    base = ("--verl-version", version, "--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo",
            f"{A}.use_kl_loss=True")
    code, data = check(capsys, *base)
    if version < "0.8":  # verl before 0.8 hands MindSpeed no use_flash_attn: the first forward stops
        assert code == 1 and {e["rule"] for e in data["errors"]} == {"flash-attn-mask-crash"}, data["errors"]
        code, data = check(capsys, *base, f"+{A}.megatron.override_transformer_config.use_flash_attn=True")
    assert code == 0 and data["ok"], data["errors"]
    assert data["versions"]["verl"] == version
    assert data["roles"]["actor"]["megatron"]["tensor_model_parallel_size"] == 1


@pytest.mark.parametrize("version, key, rule, says", [
    param("0.9.1", f"{A}.megatron.grad_offload", "verl-key-removed", "exists in verl 0.4.1 to 0.9.0", id="removed"),
    param("0.8.0", f"{A}.megatron.pad_to_length", "verl-key-added", "added in verl 0.9.0", id="added"),
    param("0.9.1", f"{A}.load_weight", "verl-key-removed", "removed after 0.8.0", id="load-weight"),
    param("0.6.1", f"{A}.router_replay.mode", "verl-key-added", "added in verl 0.7.0", id="router-replay-early"),
])
def test_a_key_of_other_releases_is_an_error_that_names_them(capsys, version, key, rule, says):
    tree(version)
    code, data = check(capsys, "--verl-version", version, "--config-name=ppo_megatron_trainer", f"{key}=True")
    err = errors(data)[key]
    assert code == 1 and err["rule"] == rule and says in err["message"]
    assert err["override"] is None and "+" + key not in json.dumps(err)  # never '+key' advice
    assert "delete the argument" in err["hint"] and "'~' removal fails too" in err["hint"]


def test_a_moved_key_is_written_where_it_lives_now(capsys):
    code, data = check(capsys, "--config-name=ppo_megatron_trainer", f"{A}.router_replay.mode=R3")
    err = errors(data)[f"{A}.router_replay.mode"]
    assert err["rule"] == "verl-key-moved" and "0.9.1" in err["message"]
    # set where it lives, R3 needs the rollout's routes (verl-router-replay): the line takes that fix too
    assert err["override"] == (f"{A}.megatron.router_replay.mode=R3 "
                               "actor_rollout_ref.rollout.enable_rollout_routing_replay=True")
    code, data = check(capsys, "--config-name=ppo_megatron_trainer", *err["override"].split())
    assert code == 0, data["errors"]


def test_a_plus_key_of_another_release_is_explained_too(capsys):
    code, data = check(capsys, "--config-name=ppo_megatron_trainer", f"+{A}.megatron.grad_offload=True")
    (err,) = data["errors"]
    assert err["rule"] == "verl-key-removed" and "0.4.1 to 0.9.0" in err["message"]


def test_offline_without_a_cache_is_one_clear_line(tmp_path):
    env = {**os.environ, "VERL_MINDSPEED_CACHE": str(tmp_path), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "",
           "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-m", "verl_mindspeed", "check", "--verl-version", "0.8.0",
                           "--config-name=ppo_megatron_trainer"], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "verl 0.8.0 is not in the cache" in line and "could not be downloaded from PyPI" in line


# --- MindSpeed-LLM engine: one error ----------------------------------------------------------------------
def test_the_mindspeed_llm_engine_is_one_error_on_091(capsys):
    code, data = check(capsys, "--args-file", str(SCRIPTS / "qwen3_8b_mindspeedllm_npu.sh"), env=ENV)
    (err,) = data["errors"]
    assert err["key"] == "model_engine" and err["rule"] == "verl-engine-other-release"
    assert "MindSpeed-LLM engine" in err["message"] and "0.8.0 to 0.9.0" in err["message"]
    assert re.match(r"\d+ arguments", err["message"]) and int(err["message"].split()[0]) >= 19
    assert err["location"]["line"] == 217 and err["location"]["file"].endswith("qwen3_8b_mindspeedllm_npu.sh")


def test_the_mindspeed_llm_engine_composes_on_090(capsys):
    tree("0.9.0")
    code, data = check(capsys, "--verl-version", "0.9.0", "--config-name=ppo_trainer", "model_engine=mindspeed",
                       f"{A}.mindspeed.param_offload=True", f"+{A}.mindspeed.fsdp_kwargs.x=1")
    assert data["errors"] == [], data["errors"]


# --- the real scripts -------------------------------------------------------------------------------------
SCRIPT_CASES = [
    # (script, verl release, {key: (rule, line)} of every error)
    ("moonlight_16b_r3_npu.sh", "0.9.1", {f"{A}.megatron.grad_offload": ("verl-key-removed", 137),
                                          f"{A}.router_replay.mode": ("verl-key-moved", 140)}),
    ("moonlight_16b_r3_npu.sh", "0.9.0", {}),
    ("fully_async_qwen3_235b_npu.sh", "0.9.1", {f"{A}.megatron.grad_offload": ("verl-key-removed", 112)}),
    ("fully_async_qwen3_235b_npu.sh", "0.9.0", {}),
    ("one_step_off_mindspeed_npu.sh", "0.9.1", {f"{A}.megatron.grad_offload": ("verl-key-removed", 147)}),
    ("one_step_off_mindspeed_npu.sh", "0.8.0", {}),
    ("qwen3_235b_absolute_config_path_npu.sh", "0.9.1", {
        f"{A}.megatron.grad_offload": ("verl-key-removed", 128),
        "actor_rollout_ref.rollout.rollout_world_size": ("verl-dataclass-rejects", 119),
        "actor_rollout_ref.rollout.enable_expert_parallel": ("verl-dataclass-rejects", 120)}),
    ("qwen3_8b_mindspeedllm_npu.sh", "0.9.0", {f"{A}.mindspeed.llm_kwargs.spec": ("verl-dataclass-rejects", 121)}),
]


@pytest.mark.parametrize("name, version, expected", SCRIPT_CASES, ids=[f"{c[0][:-3]}-{c[1]}" for c in SCRIPT_CASES])
def test_real_scripts(capsys, name, version, expected):
    tree(version)
    path = SCRIPTS / name
    code, data = check(capsys, "--verl-version", version, "--args-file", str(path), env=ENV)
    mine = [e for e in data["errors"] if e["rule"].startswith("verl-")]  # the MindSpeed rules judge the rest
    found = {e["key"]: (e["rule"], e["location"]["line"]) for e in mine}
    assert found == expected
    for err in mine:
        assert err["location"]["file"] == str(path)
        if err["rule"] != "verl-key-moved":
            assert err["override"] is None, err  # deleting the argument is the fix, never '+key'


def test_an_authors_absolute_config_path_maps_onto_the_tree(capsys):
    code, data = check(capsys, "--args-file", str(SCRIPTS / "qwen3_235b_absolute_config_path_npu.sh"), env=ENV)
    (note,) = [n for n in data["notes"] if n["rule"] == "config-path-mapped"]
    assert note["key"] == "--config-path" and "/verl/trainer/config does not exist here" in note["message"]
    assert note["location"]["line"] == 83
    code, data = check(capsys, "--entry", "verl.experimental.one_step_off_policy.main_ppo",
                       "--config-path=/home/someone/src/verl/verl/experimental/one_step_off_policy/config",
                       "--config-name=one_step_off_ppo_megatron_trainer", "rollout.nnodes=2")
    assert code == 0, data["errors"]
    assert data["versions"]["verl_config"].endswith("verl/experimental/one_step_off_policy/config/"
                                                    "one_step_off_ppo_megatron_trainer.yaml")


def test_experimental_keys_on_the_main_entry_point_at_their_entry(capsys):
    code, data = check(capsys, "--config-name=ppo_megatron_trainer", "async_training.staleness_threshold=0.5",
                       "async_training.require_batches=2")
    (err,) = data["errors"]
    assert err["rule"] == "verl-entry-config" and "fully_async_ppo_megatron_trainer" in err["message"]
    assert "--entry verl.experimental.fully_async_policy.fully_async_main" in err["hint"]


def test_an_entry_a_release_lacks_is_judged_against_the_config_it_extends(capsys):
    """An entry the release lacks (a later release's, a recipe) still gets a verdict: the Megatron trainer config
    stands in for its config, and a note says so and how to check the rest."""
    tree("0.7.1")
    for version, entry in (("0.7.1", "verl.experimental.one_step_off_policy.main_ppo"),
                           ("0.9.1", "recipe.dapo.main_dapo")):
        code, data = check(capsys, "--verl-version", version, "--entry", entry)
        assert code in (0, 1)
        note = next(n for n in data["notes"] if n["rule"] == "entry-standin")
        assert f"{entry} is not part of verl {version}" in note["message"]
        assert data["versions"]["verl_config"].endswith("ppo_megatron_trainer.yaml")


def test_a_recipe_entry_in_a_source_checkout(capsys, tmp_path):
    """A checkout with recipe/ next to verl/: the recipe's @hydra.main folder and name are used."""
    source = tree("0.9.1")
    (tmp_path / "verl").symlink_to(source / "verl", target_is_directory=True)
    recipe = tmp_path / "recipe" / "dapo"
    (recipe / "config").mkdir(parents=True)
    (recipe / "main_dapo.py").write_text('import hydra\n\n\n@hydra.main(config_path="config", '
                                         'config_name="dapo_megatron_trainer", version_base=None)\ndef main(cfg):\n'
                                         '    pass\n')
    (recipe / "config" / "dapo_megatron_trainer.yaml").write_text(
        "hydra:\n  searchpath:\n    - file://verl/trainer/config\ndefaults:\n  - ppo_megatron_trainer\n  - _self_\n"
        "data:\n  gen_batch_size: 8\n")
    code, data = check(capsys, "--verl-config-dir", str(tmp_path / "verl" / "trainer" / "config"),
                       "--entry", "recipe.dapo.main_dapo", "data.gen_batch_size=16", f"{A}.megatron.param_offload=True")
    assert code == 0, data["errors"]
    assert data["versions"]["verl_config"].endswith("recipe/dapo/config/dapo_megatron_trainer.yaml")


def test_a_plus_typo_in_a_plain_section_is_a_warning_with_a_fix(capsys):
    code, data = check(capsys, "--config-name=ppo_megatron_trainer", "+trainer.total_epoch=15", "+trainer.my_flag=1")
    assert code == 0
    (warn,) = data["warnings"]
    assert warn["key"] == "trainer.total_epoch" and warn["override"] == "trainer.total_epochs=15"


def test_keys_of_an_engine_the_release_has_but_the_launch_does_not_select(capsys):
    tree("0.9.0")
    code, data = check(capsys, "--verl-version", "0.9.0", "--config-name=ppo_megatron_trainer",
                       f"{A}.mindspeed.param_offload=True", f"{A}.mindspeed.strategy=mindspeed_megatron")
    (err,) = data["errors"]
    assert err["rule"] == "verl-engine-not-selected" and "model_engine=mindspeed" in err["hint"]
    code, data = check(capsys, "--verl-version", "0.9.0", "--config-name=ppo_megatron_trainer",
                       "model_engine=mindspeed", f"{A}.mindspeed.param_offload=True")
    assert data["errors"] == []


def test_the_shipped_choices_are_what_the_tool_builds():
    """The values verl's named choices accept, read from each release's wheel (fetched with pip once)."""
    spec = importlib.util.spec_from_file_location("build_verl_choices", ROOT / "tools" / "build_verl_choices.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    try:
        built = tool.build()
    except subprocess.CalledProcessError as exc:  # pip could not fetch a wheel
        if full_stack():
            pytest.fail(f"verl's wheels must be available under tools/test.sh: {exc}")
        pytest.skip(f"verl's wheels are not available offline: {exc}")
    shipped = (ROOT / "src/verl_mindspeed/catalog/data/verl_choices.json").read_text(encoding="utf-8")
    assert tool.render(built) == shipped, "run: python tools/build_verl_choices.py"
