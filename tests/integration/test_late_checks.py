"""verl's refusals that only its workers, rollout servers or first step reach (``compose/_late.py``), on the trees of
verl 0.6.1, 0.7.1, 0.8.0, 0.9.0 (their wheels) and 0.9.1 (installed).

Each release's verdict is tied to that release's own source (its wheel's, or the installed package's): where a
launch is refused, the words the rule quotes are in the file it names in that release; where it is not, they are
nowhere in it. Every line, pasted, leaves no such error.
"""

from __future__ import annotations

from pathlib import Path

from _verl_cases import BASE, run

from verl_mindspeed.compose import _late as late
from verl_mindspeed.doctor._replay import pasted

O = "actor_rollout_ref.actor.megatron.override_transformer_config"
PROMETHEUS, STATS = "actor_rollout_ref.rollout.prometheus.enable", "actor_rollout_ref.rollout.disable_log_stats"
QAT, VANILLA = "actor_rollout_ref.actor.megatron.qat.enable", "actor_rollout_ref.actor.megatron.vanilla_mbridge"
SUM_PI, FUSED = "actor_rollout_ref.actor.calculate_sum_pi_squared", "actor_rollout_ref.model.use_fused_kernels"
OPTIMAL = "algorithm.adv_estimator=optimal_token_baseline"


def _late(argv: list[str], tree: Path) -> list:
    return [i for i in run([*BASE, *argv], str(tree), do_inject=False).comp.issues if i.rule == late.RULE]



def _refused_and_cleared(argv: list[str], tree: Path, key: str) -> None:
    (found,) = _late(argv, tree)
    assert (found.severity, found.key) == ("error", key)
    assert not _late(pasted(argv, found.override), tree)


def test_the_rollouts_metrics_without_their_stats(verl_tree, verl_source):
    version, tree = verl_tree
    said, file = late.METRICS[version]
    assert f'"{said}' in verl_source.read(file)
    argv = [f"{PROMETHEUS}=True"] + (["actor_rollout_ref.rollout.mode=async"] if version == "0.6.1" else [])
    _refused_and_cleared(argv, tree, STATS)
    (found,) = _late(argv, tree)
    assert said in found.message and f"verl {version} {file}" in found.message
    if version == "0.6.1":  # its default sync mode starts no server
        assert not _late([f"{PROMETHEUS}=True"], tree)


def test_qat_beside_mbridge_where_the_engine_refuses_it(verl_tree, verl_source):
    version, tree = verl_tree
    argv = [f"{QAT}=True", f"{VANILLA}=True"]
    if version not in late.QAT_RELEASES:
        assert "QAT requires non-vanilla" not in verl_source.everything() and not _late(argv, tree)
        return
    engine = verl_source.read("verl/workers/engine/megatron/transformer_impl.py")
    assert "QAT requires non-vanilla Megatron bridge" in engine
    (found,) = _late(argv, tree)
    assert found.override is None and "vanilla_mbridge=False" in found.hint


def test_the_per_token_loss_where_the_engine_checks_it(verl_tree, verl_source):
    version, tree = verl_tree
    padding = [f"+{O}.calculate_per_token_loss=True", "actor_rollout_ref.model.use_remove_padding=False"]
    mean = [f"+{O}.calculate_per_token_loss=True", "actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean"]
    engine = "verl/workers/engine/megatron/transformer_impl.py"
    if version not in late.V1_RELEASES:
        assert "calculate_per_token_loss=True requires" not in verl_source.everything()
        assert not _late(padding, tree) and not _late(mean, tree)
        return
    assert "calculate_per_token_loss=True requires use_remove_padding=True" in verl_source.read(engine)
    _refused_and_cleared(padding, tree, "actor_rollout_ref.model.use_remove_padding")
    incompatible = "loss_agg_mode='seq-mean-token-mean' is incompatible" in verl_source.read(engine)
    assert incompatible == (version in late.AGG_RELEASES)
    found = _late(mean, tree)
    assert [(i.key, i.override) for i in found] == ([("actor_rollout_ref.actor.loss_agg_mode", None)]
                                                    if incompatible else [])
    if incompatible:  # dynamic context parallelism composes the sequences' means: accepted
        assert not _late([*mean, "actor_rollout_ref.actor.megatron.dynamic_context_parallel=True"], tree)


def test_the_optimal_token_baseline_where_its_sum_comes_from(verl_tree, verl_source):
    version, tree = verl_tree
    if version not in late.BASELINE_RELEASES:
        assert "requires sum_pi_squared" not in verl_source.everything()
        return
    trainer = verl_source.read("verl/trainer/ppo/ray_trainer.py")
    assert "Step-dependent optimal baseline requires sum_pi_squared" in trainer
    megatron = verl_source.read("verl/workers/engine/megatron/transformer_impl.py")
    if version == "0.7.1":  # its Megatron workers never compute it
        assert "sum_pi_squared" not in megatron
        assert "sum_pi_squared" not in verl_source.read("verl/workers/actor/megatron_actor.py")
        (found,) = _late([OPTIMAL], tree)
        assert found.override is None and "0.8.0" in found.hint
        return
    legacy = [] if version == "0.8.0" else ["trainer.use_v1=False"]
    assert "calculate_sum_pi_squared=True is not supported with use_fused_kernels=True" in megatron
    _refused_and_cleared([OPTIMAL, *legacy], tree, SUM_PI)
    _refused_and_cleared([OPTIMAL, *legacy, f"{FUSED}=True"], tree, SUM_PI)  # the line turns the fused kernels off
    _refused_and_cleared([*legacy, f"{SUM_PI}=True", f"{FUSED}=True"], tree, FUSED)
    (bypassed,) = _late([OPTIMAL, *legacy, f"{SUM_PI}=True", "algorithm.rollout_correction.bypass_mode=True"], tree)
    assert bypassed.override is None and "bypass_mode=False" in bypassed.hint
    if version in late.V1_RELEASES:  # the v1 trainer never asks, whatever the switch says
        (v1,) = _late([OPTIMAL, f"{SUM_PI}=True"], tree)
        assert v1.override is None and "trainer.use_v1=False" in v1.hint
        assert not _late([f"{SUM_PI}=True", f"{FUSED}=True"], tree)


def test_fp16_and_mtp_without_mbridge_on_the_legacy_worker(verl_tree, verl_source):
    version, tree = verl_tree
    half = ["actor_rollout_ref.actor.megatron.dtype=float16", "actor_rollout_ref.actor.megatron.use_mbridge=False"]
    mtp = ["actor_rollout_ref.model.mtp.enable=True", "actor_rollout_ref.actor.megatron.use_mbridge=False"]
    if version not in late.FP16_RELEASES:
        assert "fp16 mode requires use_mbridge" not in verl_source.everything() and not _late(half, tree)
        return
    worker = verl_source.read("verl/workers/megatron_workers.py")
    assert "fp16 mode requires use_mbridge to be True" in worker
    _refused_and_cleared(half, tree, "actor_rollout_ref.actor.megatron.use_mbridge")
    # the engine worker has no such check
    assert not _late([*half, "++trainer.use_legacy_worker_impl=disable"], tree)
    if version in late.MTP_BRIDGE_RELEASES:
        assert "MTP requires use_mbridge to be True" in worker
        _refused_and_cleared(mtp, tree, "actor_rollout_ref.actor.megatron.use_mbridge")


def test_mtp_drafts_without_the_rollouts_stats(verl_tree, verl_source):
    version, tree = verl_tree
    argv = ["actor_rollout_ref.model.mtp.enable=True", "actor_rollout_ref.model.mtp.enable_rollout=True"]
    said = "vLLM MTP rollout requires request_spec_decode_stats; set disable_log_stats=False."
    if version not in late.MTP_STATS_RELEASES:
        assert said not in verl_source.everything() and not _late(argv, tree)
        return
    assert said in verl_source.read("verl/workers/rollout/vllm_rollout/vllm_async_server.py")
    _refused_and_cleared(argv, tree, STATS)
