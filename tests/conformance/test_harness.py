"""The oracle harness itself: where its code comes from, and that its one acceleration changes no verdict."""

from __future__ import annotations

import os

import pytest
import sources

PROOF_RELEASE = "26.1.0_core_r0.12.1"
#: Cases of the proof that the filtered patch scan changes no verdict. The full scan costs some 15 s a case, so CI
#: runs a dozen varied ones; after a change to the harness, run the proof with VERL_MINDSPEED_PROOF_CASES=50 or more.
PROOF_CASES = int(os.environ.get("VERL_MINDSPEED_PROOF_CASES", "12"))


@pytest.mark.parametrize("release", list(sources.RELEASES))
def test_sources_resolve(oracle, release):
    """MindSpeed and megatron.training come from the release's sources, megatron.core from the installed wheel
    of the release's line; only NPU-only names (and Megatron-LM's absent ``megatron.rl``) are stubbed."""
    info = oracle.worker(release).info
    mindspeed, megatron = sources.release_sources(release)
    assert info["mindspeed"] == str(mindspeed / "mindspeed")
    assert info["megatron_training"] == str(megatron / "megatron" / "training")
    assert "site-packages" in info["megatron_core"]
    assert info["megatron_core_version"] == sources.RELEASES[release]
    assert set(info["stubbed"]) <= {"torch_npu", "torchair", "transformer_engine", "apex", "acl", "tbe",
                                    "flash_attn", "triton", "megatron.rl", "torch.npu"}
    assert info["has_repatch"] == (release != "2.1.0_core_r0.12.1")


def test_filtered_patch_scan_changes_no_verdict(upstream, verl_base):
    """MindSpeed's patch manager rebinds ``from x import f`` copies in every loaded module; the oracle restricts
    that scan to megatron, MindSpeed and the NPU-only names (``worker.FilteredModules``). The same varied cases,
    run with the full scan and with the filtered one, get identical verdicts."""
    import differential
    import pool

    configs = differential.generate(PROOF_CASES, seed=7)
    with pool.OraclePool(full_scan=True) as full, pool.OraclePool(cache=False) as fast:
        judged_fast = differential.Judge(fast, [PROOF_RELEASE]).judge(configs)
        judged_full = differential.Judge(full, [PROOF_RELEASE]).judge(configs)
    assert len(judged_fast) == PROOF_CASES
    kinds = {r.oracle_detail.get("stage") or r.oracle for r in judged_fast}
    assert len(kinds) >= 3, kinds  # varied: several stages or verdicts, not one repeated answer
    for a, b in zip(judged_fast, judged_full):
        assert a.oracle_detail == b.oracle_detail, a.config


def test_a_case_is_judged_as_in_a_fresh_process(upstream, verl_base):
    """One worker judges case after case, and each verdict is the one a fresh process gives. The case that once
    broke this: ``disable_gloo_group`` patches ``torch.distributed.new_group`` with a wrapper that asks megatron's
    training args (which verl never sets, so the launch fails at the process groups); the patch wrapped the
    oracle's own shim, ``remove_patches`` left it, and every later case failed the same way."""
    import differential
    import pool

    otc = "actor_rollout_ref.actor.megatron.override_transformer_config"
    plain = differential.Config("plain", {}, "Qwen3-0.6B")
    gloo = differential.Config("gloo", {f"{otc}.disable_gloo_group": True}, "Qwen3-0.6B")
    with pool.OraclePool(cache=False) as fresh, pool.OraclePool(cache=False) as reused:
        alone = differential.Judge(fresh, [PROOF_RELEASE]).judge([plain])[0]
        # the switch first, in a new worker (what the shim wraps depends on what ran before), then alternating
        rows = differential.Judge(reused, [PROOF_RELEASE]).judge([gloo, plain, gloo, plain])
    assert rows[0].oracle == "error" and rows[0].oracle_detail["stage"] == "parallel", rows[0].oracle_detail
    assert "args is not initialized" in rows[0].oracle_detail["message"]
    assert rows[2].oracle_detail == rows[0].oracle_detail
    assert [r.oracle_detail for r in rows[1::2]] == [alone.oracle_detail] * 2


def test_the_oracle_records_the_warnings_upstream_gives(upstream, verl_base):
    """megatron-core 0.16.1 only warns (``warnings.warn``) where EP and TP run without SP; the oracle keeps that
    warning, from the file the project's rule cites, so the project's warning agrees with upstream's."""
    import differential
    import pool

    a = "actor_rollout_ref.actor.megatron"
    cfg = differential.Config("ep-tp-without-sp", {f"{a}.tensor_model_parallel_size": 2,
                                                    f"{a}.expert_model_parallel_size": 2,
                                                    f"{a}.override_transformer_config.sequence_parallel": False},
                              "Qwen3-30B-A3B")
    with pool.OraclePool(cache=False) as oracle:
        row = differential.Judge(oracle, ["core_r0.16.0"]).judge([cfg])[0]
    warned = row.oracle_detail.get("upstream_warnings", [])
    assert any(w.startswith("megatron/core/model_parallel_config.py:") and "sequence parallelism must be used" in w
               for w in warned), warned
    assert "ep-tp-requires-sp" in row.project_rules and row.klass in ("agree", "stricter-documented"), row
