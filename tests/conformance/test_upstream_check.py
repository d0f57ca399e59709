"""``check --upstream``: the user's own MindSpeed run on the launch, through the command line a user types.

Each test runs ``verl-mindspeed check`` in-process (its upstream worker is a subprocess) on the repository's
dense example, against a shared release archive or a copy of one changed the way a future release could be.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import differential
import pytest
import sources

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "qwen3_8b_dense_grpo.args")
MODEL = str(ROOT / "tests" / "fixtures" / "models" / "Qwen3-8B")
RELEASE = "26.1.0_core_r0.12.1"
OTC = "actor_rollout_ref.actor.megatron.override_transformer_config"

#: A feature a future release might add: it refuses fused RoPE when the patches are registered (which
#: ``repatch``, verl's only entry into MindSpeed, does) and, differently worded, in ``validate_args`` (which
#: MindSpeed runs only when it parses Megatron's command line, never on verl's path).
SYNTHETIC = '''
from mindspeed.features_manager.feature import MindSpeedFeature


class SyntheticReleaseCheck(MindSpeedFeature):
    def __init__(self):
        super().__init__("use-fused-rotary-pos-emb", 2)

    def validate_args(self, args):
        raise AssertionError("synthetic check in validate_args")

    def register_patches(self, patch_manager, args):
        raise AssertionError("synthetic release: fused RoPE is refused by this release")
'''


def check(capsys, *args: str) -> tuple[int, str, str]:
    from verl_mindspeed.cli import main

    code = main(["check", "--args-file", EXAMPLE, "--model-config", MODEL, *args])
    out, err = capsys.readouterr()
    return code, out, err


def archive(release: str) -> str:
    return str(sources.upstream_dir() / f"{sources.mindspeed_name(release)}.tar.gz")


@pytest.fixture(scope="module")
def synthetic(upstream, tmp_path_factory) -> str:
    """A copy of a release with one more feature: a release no hand rule has seen."""
    mindspeed, _ = sources.release_sources(RELEASE)
    root = tmp_path_factory.mktemp("unseen") / "mindspeed-synthetic-master"
    shutil.copytree(mindspeed / "mindspeed", root / "mindspeed")
    manager = root / "mindspeed" / "features_manager"
    (manager / "synthetic_release_check.py").write_text(SYNTHETIC)
    with (manager / "__init__.py").open("a") as fh:
        fh.write("\nfrom mindspeed.features_manager.synthetic_release_check import SyntheticReleaseCheck\n"
                 "MindSpeedFeaturesManager.FEATURES_LIST.append(SyntheticReleaseCheck())\n")
    return str(root)


def test_an_unseen_release_check_is_an_error_the_hand_rules_cannot_see(capsys, synthetic):
    _, megatron = sources.release_sources(RELEASE)
    code, out, _ = check(capsys, "--json")
    assert code == 0 and json.loads(out)["ok"], "the hand rules alone accept the example"
    code, out, _ = check(capsys, "--json", "--upstream", "--mindspeed-src", synthetic, "--megatron-src", str(megatron))
    report = json.loads(out)
    assert code == 1
    (found,) = [e for e in report["errors"] if e["rule"] == "upstream"]
    assert "fused RoPE is refused by this release" in found["message"]
    assert found["source"].startswith("mindspeed/features_manager/synthetic_release_check.py:")
    assert "synthetic-master" in found["message"]  # the release, named after the folder given
    assert report["upstream"]["megatron_core"] == "0.12.1" and report["upstream"]["megatron_core_from"] == "default"
    assert not any("validate_args" in e["message"] for e in report["errors"])  # never reached on verl's path


#: MindSpeed 26.1.0 runs on megatron-core 0.12.1, where only mbridge builds the model (stack-bridge-import), with
#: the companion the example's fused RoPE needs there: the fix line check prints
ON_MBRIDGE = ("actor_rollout_ref.actor.megatron.vanilla_mbridge=True", f"++{OTC}.position_embedding_type=rope")


def test_a_mindspeed_feature_outside_the_catalogue_is_an_upstream_error(capsys, upstream):
    override = f"+{OTC}.dist_train=True"
    code, out, _ = check(capsys, override, *ON_MBRIDGE, "--json")
    plain = json.loads(out)
    assert code == 0 and any(n["rule"] == "no-hand-rule" for n in plain["notes"])
    code, out, _ = check(capsys, override, *ON_MBRIDGE, "--json", "--upstream", "--mindspeed-src", archive(RELEASE))
    report = json.loads(out)
    assert code == 1
    (found,) = [e for e in report["errors"] if e["rule"] == "upstream"]
    assert found["source"].startswith("mindspeed/") and found["source"].rsplit(":", 1)[1].isdigit()
    assert "no hand rule" in found["hint"]
    assert report["versions"]["mindspeed_release"] == RELEASE  # the hand rules judged the archive's release


def test_a_repeated_launch_comes_from_the_cache_with_the_same_findings(capsys, upstream):
    args = ("--json", "--upstream", "--mindspeed-src", archive("core_r0.16.0"), f"++{OTC}.use_fused_swiglu=False")
    first = json.loads(check(capsys, *args)[1])
    again = json.loads(check(capsys, *args)[1])
    assert again["upstream"]["cached"] is True
    assert again["upstream"]["megatron_core"] == "0.16.1" and again["upstream"]["megatron_core_from"] == "name"
    strip = lambda r: [(i["rule"], i["key"]) for i in r["errors"] + r["warnings"]]  # noqa: E731
    assert strip(first) == strip(again)
    (summary,) = [n for n in again["notes"] if n["rule"] == "upstream" and n["message"].startswith("upstream:")]
    assert "config build" in summary["message"] and "agrees with the hand rules" in summary["message"]


def test_every_format_carries_the_upstream_finding(capsys, upstream):
    args = (f"+{OTC}.dist_train=True", *ON_MBRIDGE, "--upstream", "--mindspeed-src", archive(RELEASE))
    code, out, _ = check(capsys, *args, "--format", "sarif")
    results = json.loads(out)["runs"][0]["results"]
    (found,) = [r for r in results if r["ruleId"] == "upstream"]
    assert found["properties"]["upstreamSource"].startswith("mindspeed/")
    assert found["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    code, out, _ = check(capsys, *args, "--format", "github")
    assert code == 1 and any(line.startswith("::error") and "title=upstream" in line for line in out.splitlines())
    code, out, _ = check(capsys, *args, "--lang", "zh")
    assert code == 1 and "拒绝了本次启动" in out and "上游更严格" in out


def test_without_a_model_only_the_model_free_steps_run_and_the_report_says_so(capsys, upstream):
    from verl_mindspeed.cli import main

    code = main(["check", "--args-file", EXAMPLE, *ON_MBRIDGE, "--json", "--upstream", "--mindspeed-src",
                 archive(RELEASE)])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    (summary,) = [n for n in report["notes"] if n["rule"] == "upstream"]
    assert "repatch and parallel state only" in summary["message"]


def test_sources_that_cannot_be_used_are_one_clear_line(capsys, tmp_path):
    from verl_mindspeed.cli import main

    empty = tmp_path / "mindspeed-empty"
    empty.mkdir()
    assert main(["check", "--args-file", EXAMPLE, "--upstream", "--mindspeed-src", str(empty)]) == 2
    err = capsys.readouterr().err
    assert "holds no mindspeed/megatron_adaptor.py" in err
    assert main(["check", "--args-file", EXAMPLE, "--mindspeed-src", str(empty)]) == 2
    assert "need --upstream" in capsys.readouterr().err


def test_the_callback_stops_the_launch_on_an_upstream_error_before_ray(capsys, upstream, monkeypatch):
    """``+mindspeed=<preset>`` with ``VERL_MINDSPEED_CHECK_UPSTREAM=1``: the hand rules pass, upstream refuses,
    verl's driver stops with exit 1; without the variable the same launch goes on."""
    from verl_mindspeed.compose import compose_argv
    from verl_mindspeed.integrations.hydra_callback import UPSTREAM_ENV, MindSpeedCallback

    argv = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo", "+mindspeed=dense",
            f"+{OTC}.dist_train=True", *differential.BASIC]
    cfg = compose_argv(argv).cfg
    MindSpeedCallback(quiet=True, mindspeed_src=archive(RELEASE)).on_run_start(cfg)  # the hand rules pass
    assert "upstream" not in capsys.readouterr().out
    monkeypatch.setenv(UPSTREAM_ENV, "1")
    cfg = compose_argv(argv).cfg
    with pytest.raises(SystemExit) as stopped:
        MindSpeedCallback(quiet=True, mindspeed_src=archive(RELEASE)).on_run_start(cfg)
    assert stopped.value.code == 1
    err = capsys.readouterr().err
    assert "refuses this launch" in err and "stopping before Ray starts" in err


@pytest.mark.parametrize("release,line", [("core_r0.17.0", "0.17"), ("core_r0.18.0", "0.18")])
def test_a_three_layer_release_is_not_run_and_the_report_says_why(capsys, upstream, release, line):
    """MindSpeed core_r0.17.0/0.18.0 import MegatronAdaptor's ``megatron_adaptor`` (on no package index) and run
    on megatron-core lines no environment here has: nothing runs, the verdict is the hand rules' and says so,
    and the exit code is theirs."""
    given = archive(release)
    if not Path(given).is_file():
        pytest.skip(f"{given} is not in the upstream folder")
    args = ("--json", *ON_MBRIDGE)
    hand = json.loads(check(capsys, *args, "--mindspeed-release", release)[1])
    code, out, _ = check(capsys, *args, "--upstream", "--mindspeed-src", given)
    report = json.loads(out)
    assert code == (0 if hand["ok"] else 1)
    assert report["upstream"]["verdict"] == "not-run" and report["upstream"]["megatron_core"] == line
    assert report["versions"]["mindspeed_release"] == release
    (said,) = [w for w in report["warnings"] if w["rule"] == "upstream-unavailable"]
    assert "megatron_adaptor" in said["message"] and f"megatron-core {line}" in said["message"]
    assert not any(i["rule"] == "upstream-harness" for i in report["warnings"])
    # a megatron-core line asked for does not make it runnable: the adaptor is still missing
    code, out, _ = check(capsys, *args, "--upstream", "--mindspeed-src", given, "--megatron-core", "0.16.1")
    (said,) = [w for w in json.loads(out)["warnings"] if w["rule"] == "upstream-unavailable"]
    assert "megatron_adaptor" in said["message"] and "megatron-core 0.16" not in said["message"]


MOE = str(ROOT / "tests" / "fixtures" / "models" / "Qwen3-30B-A3B")


def test_the_megatron_bridge_provider_is_executed_and_the_mindspeed_build_takes_its_values(capsys, upstream):
    """On core_r0.16.0 (megatron-core 0.16.1) the actor's config comes from Megatron-Bridge 0.3.1's provider, run for
    the launch's model: Qwen3-MoE's provider leaves bias_activation_fusion off where verl's old converter sets it,
    and the MindSpeed run builds the config with the provider's value."""
    from verl_mindspeed.cli import main
    from verl_mindspeed.model import load_model_spec
    from verl_mindspeed.upstream import model_kwargs

    main(["check", "--args-file", EXAMPLE, "--model-config", MOE, "--json", "--upstream", "--mindspeed-src",
                 archive("core_r0.16.0"), f"~{OTC}.bias_activation_fusion"])
    report = json.loads(capsys.readouterr().out)
    bridge = report["upstream"]["bridge"]
    assert bridge["line"] == "0.16.1" and bridge["package"] == "megatron-bridge 0.3.1"
    _, converter = model_kwargs(load_model_spec(MOE)[0])
    assert converter["bias_activation_fusion"] is True
    assert bridge["values"]["actor"]["bias_activation_fusion"] is False
    assert bridge["values"]["actor"]["position_embedding_type"] == "rope"
    (said,) = [n for n in report["notes"] if n["rule"] == "upstream-bridge"]
    assert "executed on megatron-core 0.16.1 for ref, actor" in said["message"]
    assert any(w["rule"] == "fused-swiglu-inert" for w in report["warnings"])  # the rule the provider value feeds


def test_on_core_r0_18_the_bridge_judges_the_overrides_and_mindspeed_s_keys_are_held_back(capsys, upstream,
                                                                                       bridge_18):
    """MindSpeed core_r0.18.0 cannot run; Megatron-Bridge 0.5.1 on megatron-core 0.18.2 can. Driven with verl 0.9.1's
    overrides, it refuses a key that is neither a provider field nor MindSpeed's (AttributeError at the line
    bridge-refuses-unknown cites); MindSpeed's own keys are not sent, and the note lists them."""
    from verl_mindspeed.rules.stack import _MB_REFUSES

    given = archive("core_r0.18.0")
    if not Path(given).is_file():
        pytest.skip(f"{given} is not in the upstream folder")
    typo = f"+{OTC}.moe_router_topk_scalling=2.0"
    code, out, _ = check(capsys, "--json", "--upstream", "--mindspeed-src", given, typo)
    report = json.loads(out)
    assert code == 1 and report["upstream"]["verdict"] == "not-run"
    (refused,) = [e for e in report["errors"] if e["rule"] == "upstream-bridge"]  # the ref's inherited dict: once
    assert "for ref, actor" in refused["message"]
    (hand,) = [e for e in report["errors"] if e["rule"] == "bridge-refuses-unknown"]  # the hand rule agrees
    assert hand["key"] == refused["key"] and hand["override"] == refused["override"]
    assert refused["key"] == f"{OTC}.moe_router_topk_scalling" and "AttributeError" in refused["message"]
    file, line = refused["source"].rsplit(":", 1)
    assert file.split("megatron/bridge/")[-1] in _MB_REFUSES and f"line {line}" in _MB_REFUSES
    (ran,) = [n for n in report["notes"] if n["rule"] == "upstream-bridge" and "ref, actor" in n["message"]]
    assert "use_flash_attn" in ran["message"] and "use_ascend_mc2" in ran["message"]  # held back, never sent
    # without the typo the same launch's overrides finalize on that stack
    code, out, _ = check(capsys, "--json", "--upstream", "--mindspeed-src", given)
    report = json.loads(out)
    assert not [e for e in report["errors"] if e["rule"] == "upstream-bridge"]
    assert any(n["rule"] == "upstream-bridge" and ": ok;" in n["message"] for n in report["notes"])


@pytest.mark.parametrize("release", [RELEASE, "core_r0.16.0"])
def test_flash_attention_off_stops_the_first_forward_in_mindspeed_s_mask_generation(capsys, upstream, release):
    """MindSpeed's generate-mask wrapper makes the attention mask from the role's config when verl passes none: with
    flash attention off the role stops there, on both megatron-core lines, where the hand rule says so too."""
    path = [*ON_MBRIDGE] if release == RELEASE else []
    off = f"++{OTC}.use_flash_attn=False"
    code, out, _ = check(capsys, "--json", "--upstream", "--mindspeed-src", archive(release), *path, off)
    report = json.loads(out)
    assert code == 1 and report["upstream"]["detail"]["stage"] == "forward"
    (found,) = [e for e in report["errors"] if e["rule"] == "upstream"]
    assert found["source"].startswith("mindspeed/core/transformer/flash_attention/generate_mask/generate_mask.py:")
    (hand,) = [e for e in report["errors"] if e["rule"] == "flash-attn-mask-crash"]
    assert hand["override"] == f"++{OTC}.use_flash_attn=True"
    code, out, _ = check(capsys, "--json", "--upstream", "--mindspeed-src", archive(release), *path, off,
                         hand["override"])  # the fix line, pasted after
    report = json.loads(out)
    assert code == 0 and report["upstream"]["verdict"] == "ok", report["errors"]
