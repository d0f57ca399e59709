"""What each phase holds (verl 0.9.1's offloads), the tokens of each phase, the planner's split per CP and recompute."""

from __future__ import annotations

import json

import pytest

from helpers import FIXTURES, ROOT
from verl_mindspeed.compose import compose_argv
from verl_mindspeed.compose._script import read_launch_file
from verl_mindspeed.model import Layout, MemoryOptions, _engine, estimate_memory, load_model_spec
from verl_mindspeed.model._constraints import pipeline_splits
from verl_mindspeed.model._stages import held_parts
from verl_mindspeed.model.layouts import plan_layouts
from verl_mindspeed.model.memory import GIB
from verl_mindspeed.model.recompute import Recompute
from verl_mindspeed.model.verl_options import options_from_config

MODELS = FIXTURES / "models"
LAUNCHES = ROOT / "benchmarks" / "data" / "ascend_launches"
QWEN_MOE = load_model_spec(MODELS / "Qwen3-30B-A3B")[0]
LAYOUT, WORLD = Layout(tp=4, ep=4, etp=1), 16


def test_the_old_log_prob_pass_holds_only_what_eval_mode_loads():
    """BaseEngineCtx._context_switch: eval mode loads the weights only; offloaded gradients and Adam states stay on the
    host for the old-log-prob pass, and stay on the device when not offloaded."""
    long_log_prob = dict(seq_len=2048, log_prob_tokens=262144)
    kept = estimate_memory(QWEN_MOE, LAYOUT, WORLD, MemoryOptions(**long_log_prob))
    assert kept.phase == "log_prob" and kept.gradients > 0 and kept.optimizer > 0
    off = estimate_memory(QWEN_MOE, LAYOUT, WORLD, MemoryOptions(**long_log_prob, param_offload=True,
                                                                 optimizer_offload=True))
    assert off.phase == "log_prob" and off.gradients == 0 and off.optimizer == 0
    assert off.weights == kept.weights and off.logits == kept.logits
    slack = _engine.build(QWEN_MOE, LAYOUT, WORLD, MemoryOptions()).slack_s
    assert kept.peak - off.peak == pytest.approx((kept.gradients + kept.optimizer) * (1 + slack), rel=1e-6)
    grads_only = estimate_memory(QWEN_MOE, LAYOUT, WORLD, MemoryOptions(**long_log_prob, optimizer_offload=True))
    assert grads_only.gradients == kept.gradients and grads_only.optimizer == 0


def test_stage_terms_hold_each_phases_long_lived_bytes():
    for flags in [(False, False, False), (True, False, True), (True, True, False), (False, True, True)]:
        opts = MemoryOptions(param_offload=flags[0], optimizer_offload=flags[1], ref_param_offload=flags[2])
        stages, candidates = _engine.stage_terms(QWEN_MOE, LAYOUT, WORLD, opts)
        for i in candidates:
            s = stages[i]
            parts = (s.weights, s.grads, s.optimizer, s.ref)
            assert s.held == tuple(sum(held_parts(flags, phase, *parts))
                                   for phase in ("update", "log_prob", "ref_log_prob"))


def test_each_log_prob_pass_uses_its_own_tokens():
    """The old-log-prob pass at rollout.log_prob_*, with entropy (10 bytes per logit entry); the ref's at ref.log_prob_*
    without (6); with dynamic batch size each CP rank holds the whole budget (sp_size = CP)."""
    opts = MemoryOptions(seq_len=3072, dynamic_batch=True, log_prob_tokens=9216, ref_log_prob_tokens=4096)
    assert _engine.phase_tokens(opts, 2) == (3072, 9216, 4096)
    assert _engine.phase_tokens(MemoryOptions(seq_len=3072, log_prob_tokens=9216), 2) == (1536, 4608, 4608)
    assert _engine.phase_tokens(MemoryOptions(seq_len=4096, ref_dynamic_batch=True, ref_log_prob_tokens=8192), 4) \
        == (1024, 1024, 8192)
    prof = _engine.build(QWEN_MOE, Layout(tp=4, cp=2, ep=4), WORLD, opts)
    vocab = QWEN_MOE.vocab_size / 4
    assert prof.logits_lp == 9216 * vocab * 10 and prof.logits_ref == 4096 * vocab * 6
    assert estimate_memory(QWEN_MOE, LAYOUT, WORLD, MemoryOptions(ref_model=False)).ref_weights == 0
    no_ref = _engine.build(QWEN_MOE, LAYOUT, WORLD, MemoryOptions(ref_model=False))
    assert no_ref.logits_ref == 0 and not no_ref.ref_pass


def _launch_options(name: str) -> dict:
    source = read_launch_file(str(LAUNCHES / f"{name}.args"))
    return options_from_config(compose_argv(source.argv, entry=source.entry).cfg)


@pytest.mark.parametrize("name, expected", [
    ("run_dapo_moonlight-16b_megatron_npu", dict(seq_len=3072, dynamic_batch=True, log_prob_tokens=9216,
                                                 ref_log_prob_tokens=9216, ref_model=True, param_offload=True,
                                                 optimizer_offload=True, ref_param_offload=True)),
    ("run_qwen3_30b_a3b_dppo_megatron_npu", dict(seq_len=1536, micro_batch_size=4, log_prob_tokens=6144,
                                                 ref_model=False, optimizer_offload_fraction=0.4,
                                                 grad_reduce_in_fp32=False, hybrid_optimizer=True,
                                                 precision_aware_optimizer=True)),
    ("run_qwen3_30b_a3b_sapo_megatron_npu", dict(seq_len=8192, dynamic_batch=True, ref_model=False,
                                                 optimizer_offload_fraction=1.0, optimizer_offload=False,
                                                 grad_reduce_in_fp32=True, hybrid_optimizer=True,
                                                 precision_aware_optimizer=True)),
    ("run_qwen3_235b_256k_megatron", dict(seq_len=262144, micro_batch_size=1, log_prob_tokens=262144,
                                          optimizer_offload_fraction=1.0, ref_dynamic_batch=False)),
])
def test_a_launch_gives_the_options_verl_reads(name, expected):
    found = _launch_options(name)
    assert {k: found.get(k) for k in expected} == expected


def test_optimizer_offload_fraction_needs_optimizer_cpu_offload():
    """megatron-core offloads optimizer_offload_fraction only with optimizer_cpu_offload."""
    optim = {"override_optimizer_config": {"optimizer_offload_fraction": 0.5}}
    cfg = {"actor_rollout_ref": {"actor": {"optim": optim, "megatron": {}}}}
    assert "optimizer_offload_fraction" not in options_from_config(cfg)
    optim["override_optimizer_config"]["optimizer_cpu_offload"] = True
    assert options_from_config(cfg)["optimizer_offload_fraction"] == 0.5
    optim.update(use_precision_aware_optimizer=True, main_grads_dtype="bf16")
    assert options_from_config(cfg)["grad_reduce_in_fp32"] is False  # _resolve_override_ddp_config
    cfg["actor_rollout_ref"]["actor"]["megatron"]["override_ddp_config"] = {"grad_reduce_in_fp32": True}
    assert options_from_config(cfg)["grad_reduce_in_fp32"] is True  # an explicit value wins
    assert options_from_config(cfg)["precision_aware_optimizer"] is True
    optim["override_optimizer_config"]["use_precision_aware_optimizer"] = False  # verl applies the override last
    assert options_from_config(cfg)["precision_aware_optimizer"] is False


def test_plan_fraction_option_decides_the_hybrid_optimizer(capsys):
    """``--optimizer-offload-fraction 0`` on a launch with the HybridDeviceOptimizer is megatron's plain optimizer
    (12 bytes per parameter on the device), not the hybrid one keeping everything (16 with the precision-aware
    optimizer)."""
    from verl_mindspeed.cli import main

    def peak(*extra):
        assert main(["plan", "--json", "--args-file", str(LAUNCHES / "run_qwen3_30b_a3b_sapo_megatron_npu.args"),
                     "--model", str(FIXTURES / "models" / "Qwen3-30B-A3B"), *extra]) in (0, 1)
        data = json.loads(capsys.readouterr().out)
        return data["layouts"][data["launch"]["row"] - 1]["memory_breakdown_gib"]["optimizer"]

    assert peak() == 0  # the launch's fraction 1 with the precision-aware optimizer: every state on the host
    plain, half = peak("--optimizer-offload-fraction", "0"), peak("--optimizer-offload-fraction", "0.5")
    assert half == pytest.approx(plain * 8 / 12, rel=1e-3)  # 16 bytes on the kept half, against 12


def _recompute(label: str) -> Recompute:
    if label == "none":
        return Recompute()
    if label.startswith("sel:"):
        return Recompute("selective", modules=tuple(label[4:].split("+")))
    method, layers = label[5:].split("/")
    return Recompute("full", method, int(layers))


def test_the_split_is_the_lowest_for_each_cp_and_recompute():
    """Every plain pipeline layout plan lists holds the lowest peak of all (first, last) splits on its CP size and
    algorithm under every recompute choice it tried, the one it kept included; splits differ across CP sizes."""
    spec = load_model_spec(MODELS / "Moonlight-16B-A3B-Instruct")[0]
    opts = MemoryOptions(seq_len=8192)
    plans = plan_layouts(spec, 1, 8, device_memory_gib=57.6, options=opts)
    checked, splits_seen = 0, {}
    for plan in plans:
        lay = plan.layout
        splits = pipeline_splits(spec.num_layers, lay.pp)
        if lay.pp == 1 or lay.vpp or len(splits) < 2:
            continue
        for label, gib in plan.tried:
            peaks = [estimate_memory(spec, Layout(**{**lay.__dict__, "first_stage_layers": first,
                                                     "last_stage_layers": last, "recompute": _recompute(label)}),
                                     8, opts) for first, last in splits]
            assert min(e.peak for e in peaks if e) / GIB == pytest.approx(gib, rel=1e-9), (lay, label)
        assert plan.memory.peak / GIB == pytest.approx(dict(plan.tried)[lay.recompute.label()], rel=1e-9)
        splits_seen.setdefault((lay.tp, lay.pp, lay.ep, lay.etp), set()).add(
            (lay.first_stage_layers, lay.last_stage_layers))
        checked += 1
    assert checked > 50 and any(len(found) > 1 for found in splits_seen.values())


def test_optimizer_offload_leaves_the_hybrid_optimizers_fp32_clones_on_the_device():
    """verl's optimizer offload moves the optimizer's state entries (the moments); the HybridDeviceOptimizer's fp32
    clones and their fp32 gradient copies (8 of its 16 bytes per kept parameter) are no state entry and stay."""
    base = dict(hybrid_optimizer=True, optimizer_offload_fraction=0.5, precision_aware_optimizer=True,
                param_offload=True, optimizer_offload=True, ref_model=False)
    hybrid = _engine.build(QWEN_MOE, LAYOUT, WORLD, MemoryOptions(**base))
    plain = _engine.build(QWEN_MOE, LAYOUT, WORLD, MemoryOptions(**{**base, "hybrid_optimizer": False,
                                                                   "optimizer_offload_fraction": 0.0}))
    for stage_h, stage_p in zip(hybrid.stages, plain.stages):
        assert stage_h.optimizer == pytest.approx(stage_p.optimizer * 8 / 12)  # 16 x 0.5 against 12
        assert stage_h.optimizer_pinned == pytest.approx(stage_h.optimizer / 2) and stage_p.optimizer_pinned == 0
    outside = estimate_memory(QWEN_MOE, LAYOUT, WORLD, MemoryOptions(**base)).resident_outside_update
    assert outside > estimate_memory(QWEN_MOE, LAYOUT, WORLD, MemoryOptions(
        **{**base, "precision_aware_optimizer": False})).resident_outside_update
