"""The command line behaves like the tools users know: options anywhere, Hydra's own argv rules,
exit 2 with one line (or one JSON object) for every bad input, --version, --fail-on, --lang."""

from __future__ import annotations

import json

import pytest
from pytest import param

from helpers import BASIC, FIXTURES, ROOT
from verl_mindspeed import __version__
from verl_mindspeed.cli import main

O = "actor_rollout_ref.actor.megatron.override_transformer_config."
M = "actor_rollout_ref.actor.megatron."
BASE = ["--config-path=config", "--config-name=ppo_megatron_trainer.yaml", *BASIC]
TYPO = f"+{O}use_flash_atn=True"
FAR = f"+{O}completely_unrelated_thing=1"
EXAMPLE = ROOT / "examples" / "qwen3_8b_dense_grpo.args"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


@pytest.mark.parametrize("where", ["first", "last", "middle"])
def test_json_anywhere(base_cfg, capsys, where):
    argv = {"first": ["--json", *BASE], "last": [*BASE, "--json"], "middle": [BASE[0], "--json", *BASE[1:]]}[where]
    code, out, _ = run(capsys, "check", *argv)
    assert code == 0 and json.loads(out)["ok"] is True


def test_strict_and_lang_at_the_end(base_cfg, capsys):
    code, out, _ = run(capsys, "check", "--json", *BASE, FAR)
    assert code == 0 and json.loads(out)["warnings"]
    code, out, _ = run(capsys, "check", "--json", *BASE, FAR, "--strict")
    assert code == 1
    code, out, _ = run(capsys, "check", *BASE, TYPO, "--lang", "zh")
    assert code == 1 and "未通过" in out


def test_everything_after_double_dash_is_the_launch(base_cfg, capsys):
    code, _, err = run(capsys, "check", *BASE, "--", "--json")
    assert code == 2 and "--json" in err  # Hydra's entry does not know --json


@pytest.mark.parametrize("flag, near", [
    param("--confg-path=x", "--config-path", id="typo-with-value"),
    param("--reslove", "--resolve", id="typo-bare"),
    param("--jsn", "--json", id="own-option-typo"),
])
def test_unknown_flag_has_a_did_you_mean(capsys, flag, near):
    code, _, err = run(capsys, "check", *BASE, flag)
    assert code == 2
    assert f"did you mean {near}?" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("flags", [["--cfg", "job"], ["--cfg=job", "--resolve"], ["-m"], ["--info"],
                                   ["--hydra-help"], ["-cn", "ppo_megatron_trainer"],
                                   ["--config-dir", "/tmp"]])
def test_hydra_flags_are_accepted(base_cfg, capsys, flags):
    code, out, _ = run(capsys, "check", "--json", *BASE, "algorithm.adv_estimator=grpo", *flags)
    assert code == 0, out


def test_config_dir_adds_a_folder_to_the_search_path_as_hydra_does(base_cfg, capsys, tmp_path):
    """A user's own primary config in --config-dir, inheriting verl's trainer config from the primary folder."""
    (tmp_path / "my_grpo.yaml").write_text("defaults:\n  - ppo_megatron_trainer\n  - _self_\n"
                                           "algorithm:\n  adv_estimator: grpo\n"
                                           "actor_rollout_ref:\n  actor:\n    megatron:\n"
                                           "      override_transformer_config:\n        use_flash_atn: true\n")
    code, out, _ = run(capsys, "check", "--json", "--config-path=config", f"--config-dir={tmp_path}",
                       "--config-name=my_grpo")
    assert code == 1
    assert any("use_flash_attn" in json.dumps(i) for i in json.loads(out)["errors"])


def test_overrides_split_by_a_flag_are_refused_as_hydra_would(capsys):
    code, _, err = run(capsys, "check", *BASE, "a=1", "--cfg", "job", "algorithm.adv_estimator=grpo")
    assert code == 2 and "keep the overrides together" in err


@pytest.mark.parametrize("argv", [[], ["--json"], ["--strict", "--lang", "en"]])
def test_no_launch_is_a_usage_error(capsys, argv):
    code, out, err = run(capsys, "check", *argv)
    assert code == 2 and "--args-file" in err
    if "--json" in argv:
        assert json.loads(out)["exit_code"] == 2
    else:
        assert err.startswith("usage: verl-mindspeed check")


@pytest.mark.parametrize("argv, fragment", [
    param(["--verl-config-dir", "/nonexistent", *BASE], "is not a directory", id="verl-config-dir"),
    param(["--config-path=" + "a" * 3000], "File name too long", id="long-config-path"),
    param(["--args-file", "/nonexistent.args"], "cannot read /nonexistent.args", id="args-file"),
    param(["--mindspeed-release", "9.9", *BASE], "unknown MindSpeed release '9.9'", id="release"),
    param(["--device-memory-gib", "-1", *BASE], "'-1' is not a positive number", id="device-memory"),
    param(["--lang", "fr", *BASE], "invalid value 'fr'", id="lang"),
    param([*BASE, "--cfg", "yaml"], "invalid choice: 'yaml'", id="hydra-choice"),
])
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_bad_input_is_exit_2_with_one_line(base_cfg, capsys, argv, fragment, fmt):
    code, out, err = run(capsys, "check", *(["--json"] if fmt == "json" else []), *argv)
    assert code == 2
    assert fragment in err and len(err.strip().splitlines()) == 1
    if fmt == "json":
        data = json.loads(out)
        assert data["ok"] is False and data["exit_code"] == 2 and fragment in data["fatal"]
    else:
        assert out == ""


@pytest.mark.parametrize("value", ["'2'", "[2]", "${nope}", "${oc.env:VERL_MINDSPEED_UNSET}"])
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_bad_values_are_located_errors(base_cfg, capsys, monkeypatch, value, fmt):
    monkeypatch.delenv("VERL_MINDSPEED_UNSET", raising=False)
    code, out, _ = run(capsys, "check", *(["--json"] if fmt == "json" else []), *BASE,
                       f"{M}tensor_model_parallel_size={value}")
    assert code == 1
    if fmt == "json":
        assert any(e["key"] == f"{M}tensor_model_parallel_size" for e in json.loads(out)["errors"])
    else:
        assert f"✗ {M}tensor_model_parallel_size" in out


def test_unresolvable_interpolation_in_the_dict(base_cfg, capsys, monkeypatch):
    monkeypatch.delenv("VERL_MINDSPEED_UNSET", raising=False)
    code, out, _ = run(capsys, "check", "--json", *BASE, f"+{O}use_flash_attn=${{oc.env:VERL_MINDSPEED_UNSET}}")
    assert code == 1 and json.loads(out)["errors"]


@pytest.mark.parametrize("field, value", [
    ("num_hidden_layers", "28"), ("num_hidden_layers", None), ("num_hidden_layers", 28.0),
    ("hidden_size", [1024]), ("hidden_size", float("nan")), ("num_attention_heads", 0), ("vocab_size", True),
    ("num_hidden_layers", 10 ** 30),  # found by the fuzzer: the memory estimate walked every layer
])
def test_garbled_model_config_is_an_error_on_the_option(base_cfg, capsys, tmp_path, field, value):
    cfg = json.loads((FIXTURES / "models" / "Qwen3-0.6B" / "config.json").read_text())
    cfg[field] = value
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    code, out, _ = run(capsys, "check", "--json", "--model-config", str(tmp_path), *BASE)
    data = json.loads(out)
    assert code == 1 and [e["key"] for e in data["errors"]] == ["--model-config"]


def test_missing_model_path_is_a_note(base_cfg, capsys):
    code, out, _ = run(capsys, "check", "--json", *BASE, "actor_rollout_ref.model.path=/nonexistent/Qwen3-8B")
    notes = [n for n in json.loads(out)["notes"] if n["key"] == "actor_rollout_ref.model.path"]
    assert code == 0 and "does not exist on this machine" in notes[0]["message"]


def test_version(capsys):
    for argv in (["--version"], ["check", "--version"], ["features", "--version"]):
        code, out, _ = run(capsys, *argv)
        first, assumed, here = out.strip().splitlines()
        assert code == 0 and first == f"verl-mindspeed {__version__}"
        assert "MindSpeed core_r0.16.0 on megatron-core 0.16.1 with Megatron-Bridge 0.3.1" in assumed
        assert here.startswith("installed here: ")


def test_fail_on_warning(base_cfg, capsys):
    code, out, _ = run(capsys, "check", "--json", *BASE, FAR, "--fail-on", "warning")
    data = json.loads(out)
    assert code == 1 and data["ok"] is False and data["exit_code"] == 1 and data["errors"] == []
    code, out, _ = run(capsys, "check", *BASE, FAR, "--fail-on=warning")
    assert code == 1 and "FAILED" in out


def test_json_has_a_schema_version(base_cfg, capsys):
    _, out, _ = run(capsys, "check", "--json", *BASE)
    data = json.loads(out)
    assert data["schema_version"] == 1 and data["exit_code"] == 0


def test_chinese_everywhere(base_cfg, capsys):
    code, out, _ = run(capsys, "check", "--json", "--lang", "zh", *BASE, "actor_rollout_ref.model.path=/nope")
    note = next(n for n in json.loads(out)["notes"] if n["key"] == "actor_rollout_ref.model.path")
    assert "已跳过模型相关的检查" in note["message"]
    code, out, _ = run(capsys, "features", "--lang", "zh")
    assert code == 0 and "配置参数" in out and "预览" in out and "Preview" not in out
    code, out, _ = run(capsys, "presets", "--lang", "zh")
    assert code == 0 and "稠密模型" in out and "用法" in out
    code, _, err = run(capsys, "check", "--lang", "zh", *BASE, "--confg-path=x")
    assert code == 2 and "您是不是想用 --config-path" in err


def test_language_follows_the_locale(base_cfg, capsys, monkeypatch):
    monkeypatch.setenv("LC_ALL", "zh_CN.UTF-8")
    code, out, _ = run(capsys, "check", *BASE, TYPO)
    assert code == 1 and "未通过" in out
    code, out, _ = run(capsys, "check", *BASE, TYPO, "--lang", "en")
    assert "FAILED" in out


def test_every_preset_describes_itself_in_both_languages(capsys):
    """Each preset's file carries its Chinese description next to the English one: every key, value and release
    the English names is named in the Chinese too, and ``presets NAME --lang zh`` prints all of it."""
    import re

    from verl_mindspeed import presets

    token = re.compile(r"[A-Za-z_][A-Za-z0-9_]*_[A-Za-z0-9_]+|\d+\.\d+\.\d+(?:_core_r\d+\.\d+\.\d+)?"
                       r"|[A-Z][A-Za-z]*\d(?:[A-Za-z0-9]|\.\d)*")
    for name in presets.names():
        en, zh = presets.description(name), presets.description(name, "zh")
        assert zh != en and len(zh.splitlines()) >= len(en.splitlines()) - 1, name
        assert sorted(set(token.findall(en)) - set(token.findall(zh))) == [], name
        code, out, _ = run(capsys, "presets", name, "--lang", "zh")
        assert code == 0 and zh in out


def test_unknown_preset_is_a_usage_error(capsys):
    code, _, err = run(capsys, "presets", "dens")
    assert code == 2 and "did you mean 'dense'?" in err


def test_an_internal_error_is_one_line(capsys, monkeypatch):
    import verl_mindspeed.cli.check as check

    def boom(*a, **k):
        raise ZeroDivisionError("bug")

    monkeypatch.setattr(check, "evaluate", boom)
    code, out, err = run(capsys, "check", "--json", *BASE)
    assert code == 2 and "internal error: ZeroDivisionError('bug')" in err
    assert json.loads(out)["exit_code"] == 2
    monkeypatch.setenv("VERL_MINDSPEED_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        main(["check", *BASE])


def test_args_file_and_command_line_together(base_cfg, capsys):
    code, out, _ = run(capsys, "check", "--args-file", str(EXAMPLE), TYPO, "--json")
    data = json.loads(out)
    assert code == 1 and [e["rule"] for e in data["errors"]] == ["unknown-key"]


def test_an_interpolation_the_checks_need_is_a_located_error(base_cfg, capsys, monkeypatch):
    """Found by the fuzzer: algorithm.adv_estimator=${oc.env:UNSET} decides which roles run."""
    monkeypatch.delenv("VERL_MINDSPEED_UNSET", raising=False)
    code, out, _ = run(capsys, "check", "--json", *BASE, "algorithm.adv_estimator=${oc.env:VERL_MINDSPEED_UNSET}")
    (error,) = json.loads(out)["errors"]
    assert code == 1 and error["key"] == "algorithm.adv_estimator" and error["rule"] == "interpolation"
