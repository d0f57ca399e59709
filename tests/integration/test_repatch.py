"""What MindSpeed's ``repatch`` receives per role, from verl's real code (0.9.1) and the 0.6/0.7 call shape.

The only stand-in is ``mindspeed.megatron_adaptor.repatch`` (MindSpeed needs an NPU): a recorder.
"""

from __future__ import annotations

import sys
import types

import pytest
from _verl_cases import BASE, CASE_IDS, CASES, ROLES, O, run, section
from omegaconf import DictConfig, OmegaConf

from helpers import require
from verl_mindspeed import eras as vv
from verl_mindspeed import resolve
from verl_mindspeed.compose import era_of_tree


@pytest.fixture(scope="module")
def impl():
    """verl 0.9.1's transformer_impl, imported while a fake ``mindspeed.megatron_adaptor`` exists."""
    require("verl")
    saved = {k: sys.modules.get(k) for k in ("mindspeed", "mindspeed.megatron_adaptor")}
    package, adaptor = types.ModuleType("mindspeed"), types.ModuleType("mindspeed.megatron_adaptor")
    adaptor.repatch = lambda args: None
    package.megatron_adaptor = adaptor
    sys.modules.update({"mindspeed": package, "mindspeed.megatron_adaptor": adaptor})
    try:
        module = require("verl.workers.engine.mindspeed.transformer_impl")
    finally:  # leave no fake MindSpeed behind for other tests
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old
    return module


@pytest.fixture
def received(impl, monkeypatch):
    calls: list = []
    monkeypatch.setattr(impl, "repatch", calls.append)
    return calls


def engine_calls(impl, received, cfg) -> dict[str, dict]:
    """Each role's engine config as verl builds it, through verl's real ``_mindspeed_repatch``."""
    from verl.utils.config import omega_conf_to_dataclass

    OmegaConf.resolve(cfg)
    out = {}
    for role in ROLES:
        impl._mindspeed_repatch(omega_conf_to_dataclass(section(cfg, role)))
        (out[role],) = received
        received.clear()
    return out


def predicted_calls(cfg: DictConfig, era: str) -> list[tuple[str, dict]]:
    """The repatch calls ``check`` predicts: the simulation its rules read, for a plain launch of ``cfg``."""
    return [(role, dict(args)) for role, args in resolve(cfg, era=era, injected=False).simulation.calls]


def with_enum(args: dict) -> dict:
    from megatron.core.transformer.enums import AttnBackend

    return {**args, "attention_backend": AttnBackend[args["attention_backend"]]}


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_engine_era_per_role(impl, received, case):
    r = run([*BASE, *case.overrides], None)
    predicted = dict(predicted_calls(r.cfg, vv.ENGINE))
    got = engine_calls(impl, received, r.cfg)
    assert set(got) == set(ROLES) == set(predicted)
    for role in ROLES:
        assert got[role] == with_enum(case.expected(role, r.defaults)), role
        assert got[role] == with_enum(predicted[role]), role


def test_mc2_needs_injection(impl, received):
    """Without injection MindSpeed gets MC2 but neither TP nor SP (its MC2 patch then fails); with it, both."""
    case = next(c for c in CASES if c.name == "mc2")
    bare = engine_calls(impl, received, run([*BASE, *case.overrides], None, do_inject=False).cfg)
    for role in ("actor", "ref"):
        assert bare[role]["use_ascend_mc2"] is True
        assert "tensor_model_parallel_size" not in bare[role] and "sequence_parallel" not in bare[role]
    assert "use_ascend_mc2" not in bare["critic"]  # critic's own dict: the actor's switch never reaches it
    injected = engine_calls(impl, received, run([*BASE, *case.overrides], None).cfg)
    for role in ROLES:
        assert (injected[role]["use_ascend_mc2"], injected[role]["tensor_model_parallel_size"],
                injected[role]["sequence_parallel"]) == (True, 2, True), role


def test_batch_invariant_turns_flash_attention_off(impl, received):
    r = run([*BASE, f"+{O}.use_flash_attn_npu_batch_invariant=True"], None, do_inject=False)
    got = engine_calls(impl, received, r.cfg)
    predicted = dict(predicted_calls(r.cfg, vv.ENGINE))
    assert got["actor"]["use_flash_attn"] is False
    assert got["actor"] == with_enum(predicted["actor"])


# --- verl 0.6.x / 0.7.x: megatron_workers.ActorRolloutRefWorker.__init__, read from verl 0.6.1's wheel:
#     if repatch is not None: repatch(self.config.actor.megatron.get("override_transformer_config", {}))
#     with self.config = config.actor_rollout_ref, for every role the worker plays (actor, ref).
def legacy_worker_init(config: DictConfig, role: str, repatch) -> None:
    assert role in ("actor", "rollout", "ref", "actor_rollout", "actor_rollout_ref")
    repatch(config.actor.megatron.get("override_transformer_config", {}))


def legacy_calls(cfg: DictConfig) -> list[dict]:
    OmegaConf.resolve(cfg)
    calls: list = []
    for role in ("actor_rollout", "ref"):  # critic workers never call repatch
        legacy_worker_init(cfg.actor_rollout_ref, role, calls.append)
    assert all(isinstance(c, DictConfig) for c in calls)  # MindSpeed gets the DictConfig itself
    return [OmegaConf.to_container(c) for c in calls]


@pytest.mark.parametrize("version", ["0.6.1", "0.7.1"])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_legacy_era(old_verl_trees, version, case):
    tree = str(old_verl_trees[version])
    r = run([*BASE, *case.overrides], tree)
    predicted = predicted_calls(r.cfg, era_of_tree(tree))
    got = legacy_calls(r.cfg)
    actor = case.expected("actor", r.defaults)
    assert got == [actor, actor]  # the ref worker gets the ACTOR's dict too
    assert [role for role, _ in predicted] == ["actor", "ref"]
    assert [args for _, args in predicted] == got


@pytest.mark.parametrize("version", ["0.6.1", "0.7.1"])
def test_legacy_era_needs_injection(old_verl_trees, version):
    """0.6/0.7 add nothing: without injection MindSpeed never sees use_flash_attn nor the CP size."""
    case = next(c for c in CASES if c.name == "long_context")
    tree = str(old_verl_trees[version])
    overrides = [o for o in case.overrides if "use_flash_attn" not in o]
    bare = legacy_calls(run([*BASE, *overrides], tree, do_inject=False).cfg)
    assert all("use_flash_attn" not in c and "context_parallel_size" not in c for c in bare)
    injected = legacy_calls(run([*BASE, *overrides], tree).cfg)
    assert all(c["use_flash_attn"] is True and c["context_parallel_size"] == 2 for c in injected)


def test_07_new_engine_workers(old_verl_trees):
    """0.7.1 with use_legacy_worker_impl=disable: engines force FA and copy CP; the critic still never repatches."""
    # a GRPO launch: 0.7's engine workers have no Megatron critic (critic-engine-07)
    r = run([*BASE, "algorithm.adv_estimator=grpo", "trainer.use_legacy_worker_impl=disable",
             "actor_rollout_ref.actor.megatron.context_parallel_size=2"], str(old_verl_trees["0.7.1"]))
    calls = predicted_calls(r.cfg, vv.LEGACY)
    assert [role for role, _ in calls] == ["ref", "actor"]  # init_model builds the ref first
    assert all(args["use_flash_attn"] is True and args["context_parallel_size"] == 2 for _, args in calls)
