"""The runtime guard without MindSpeed, megatron or verl: its comparisons, its wiring over stand-ins, its import hook.

MindSpeed's real ``repatch`` and megatron's real parallel state drive it in ``tests/conformance/test_guard_oracle.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from verl_mindspeed.catalog import ROLE_PREFIXES
from verl_mindspeed.integrations import guard
from verl_mindspeed.integrations import guard_checks as gc

ROOT = Path(__file__).resolve().parents[2]
TP, ETP = "tensor_model_parallel_size", "expert_tensor_parallel_size"


def sizes(**given):
    return gc.asked_sizes(lambda n: given.get(n))


# --------------------------------------------------------------------------- comparisons

def test_sections_are_the_catalogues():
    assert gc.SECTIONS == dict(ROLE_PREFIXES)


def test_roles_from_what_the_engine_knows():
    assert gc.role_of("value_model", False) == "critic"
    assert gc.role_of("language_model", True) == "ref"
    assert gc.role_of("language_model", False) == "actor"


def test_asked_sizes_follow_megatron_defaults():
    got = sizes(tensor_model_parallel_size=2)
    assert got[TP] == 2 and got[ETP] == 2 and got["pipeline_model_parallel_size"] == 1
    assert got["virtual_pipeline_model_parallel_size"] is None
    assert sizes(tensor_model_parallel_size=2, expert_tensor_parallel_size=1)[ETP] == 1


def test_equal_layout_passes():
    asked = sizes(tensor_model_parallel_size=2, context_parallel_size=2)
    assert gc.layout_mismatch("actor", asked, dict(asked), gc.Owner("critic", asked)) is None


def test_a_layout_built_by_an_earlier_role_names_it_and_the_fix():
    msg = gc.layout_mismatch("actor", sizes(tensor_model_parallel_size=2), sizes(), gc.Owner("critic", sizes()))
    assert msg == ("actor asked for TP=2 but the process groups were built with TP=1 by the critic, which was "
                   "built first (verl builds them once per process): set critic.megatron.tensor_model_parallel_size=2")
    assert "critic.megatron.tensor_model_parallel_size=2" in msg.render("zh") and "请设置" in msg.render("zh")


def test_an_explicit_expert_size_is_reported_on_its_own():
    asked = sizes(tensor_model_parallel_size=2, expert_tensor_parallel_size=1, expert_model_parallel_size=4)
    msg = gc.layout_mismatch("ref", asked, sizes(expert_model_parallel_size=2), gc.Owner("critic", {}))
    assert "ref asked for TP=2, EP=4 but" in msg
    assert "set critic.megatron.tensor_model_parallel_size=2 critic.megatron.expert_model_parallel_size=4" in msg


def test_groups_built_outside_the_engines_or_by_the_role_itself():
    outside = gc.layout_mismatch("actor", sizes(pipeline_model_parallel_size=2), sizes(), None)
    assert "actor asked for PP=2" in outside and "before any verl engine" in outside
    own = gc.layout_mismatch("actor", sizes(context_parallel_size=2), sizes(), gc.Owner("actor", {}))
    assert own == "actor asked for CP=2 but megatron built the process groups with CP=1"


def test_a_size_megatron_cannot_report_is_not_compared():
    live = sizes()
    del live["virtual_pipeline_model_parallel_size"]
    asked = sizes(virtual_pipeline_model_parallel_size=2)
    assert gc.layout_mismatch("actor", asked, live, gc.Owner("critic", {})) is None


def test_live_sizes_read_megatrons_getters():
    fake = {"get_tensor_model_parallel_world_size": lambda: 4, "get_context_parallel_world_size": lambda: 2}
    assert gc.live_sizes(fake.get) == {TP: 4, "context_parallel_size": 2}


def test_namespace_must_hold_what_repatch_received():
    sent = {"use_flash_attn": True, "use_fused_rmsnorm": True}
    assert gc.namespace_mismatch("actor", sent, {**sent, "other": 1}) is None
    msg = gc.namespace_mismatch("actor", sent, {"use_flash_attn": False})
    assert msg == ("actor: after its repatch MindSpeed's namespace holds use_flash_attn=False, "
                   "use_fused_rmsnorm=<absent>, but verl handed MindSpeed use_flash_attn=True, use_fused_rmsnorm=True")


def test_switch_notes_report_switches_only():
    before = {"use_fused_rmsnorm": False, "use_ascend_mc2": False, "recompute_granularity": None}
    critic = {"use_fused_rmsnorm": True, "recompute_granularity": "full", "use_ascend_mc2": True}
    actor = {"use_fused_rmsnorm": False, "recompute_granularity": None}
    namespace = {**before, **critic, **actor}
    notes = gc.switch_notes("actor", actor, namespace, before, {"critic": critic})
    assert notes[0] == ("the critic asked for use_fused_rmsnorm=True, but the actor's repatch set "
                        "use_fused_rmsnorm=False for the whole process (MindSpeed's patches are process-wide; "
                        "the last build wins)")
    assert notes[1].startswith("actor runs with use_ascend_mc2=True although its dict does not set them")
    assert len(notes) == 2  # recompute_granularity differs too, but it is per-role TransformerConfig
    assert gc.switch_notes("actor", critic, {**before, **critic}, before, {"critic": critic}) == []


# --------------------------------------------------------------------------- wiring, over stand-ins

class _Mpu(types.ModuleType):
    """megatron's parallel state reduced to what the guard and verl's engine call."""

    def __init__(self):
        super().__init__("megatron.core.parallel_state")
        self.sizes = None

    def is_initialized(self):
        return self.sizes is not None

    def initialize_model_parallel(self, **kwargs):
        self.sizes = kwargs

    def get_tensor_model_parallel_world_size(self):
        return self.sizes["tensor_model_parallel_size"]

    def get_context_parallel_world_size(self):
        return self.sizes["context_parallel_size"]


@pytest.fixture
def world(monkeypatch):
    """Stand-in megatron and MindSpeed modules, a fresh guard state, and an engine class wrapped by the guard."""
    mpu = _Mpu()
    core = types.ModuleType("megatron.core")
    core.parallel_state = mpu
    ns = types.SimpleNamespace(use_flash_attn=False, use_fused_rmsnorm=False)
    args_utils = types.ModuleType("mindspeed.args_utils")
    args_utils.get_full_args = lambda: ns
    for name, module in {"megatron": types.ModuleType("megatron"), "megatron.core": core,
                         "megatron.core.parallel_state": mpu, "mindspeed": types.ModuleType("mindspeed"),
                         "mindspeed.args_utils": args_utils}.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(guard, "_state", guard._State())

    def repatch(args):  # MindSpeed's: merge the dict into its namespace (and re-apply its patches, which
        # would take a recording wrapper installed at that moment for megatron's own function)
        assert not guard.is_wrapped(mpu.initialize_model_parallel)
        for k, v in args.items():
            setattr(ns, k, v)

    wrapped_repatch = guard._wrap_repatch(repatch)

    class Base:  # verl's MegatronEngine: the first engine initializes the parallel state, later ones return
        def __init__(self, role, **config):
            self.model_config = types.SimpleNamespace(model_type="value_model" if role == "critic" else "lm")
            otc = config.pop("otc", {})
            self.engine_config = types.SimpleNamespace(**{
                "forward_only": role == "ref", "tensor_model_parallel_size": 1, "context_parallel_size": 1,
                "override_transformer_config": otc, **config})

        def _init_device_mesh(self):
            if mpu.is_initialized():
                return
            mpu.initialize_model_parallel(tensor_model_parallel_size=self.engine_config.tensor_model_parallel_size,
                                          context_parallel_size=self.engine_config.context_parallel_size)

    class Engine(Base):  # verl's MindSpeed engine: repatch, then the base class's
        def _init_device_mesh(self):
            wrapped_repatch({"use_flash_attn": True, **self.engine_config.override_transformer_config})
            super()._init_device_mesh()

    Base._init_device_mesh = guard._wrap_mesh(Base._init_device_mesh, True)
    Engine._init_device_mesh = guard._wrap_mesh(Engine._init_device_mesh, False)
    return types.SimpleNamespace(mpu=mpu, ns=ns, Engine=Engine, Base=Base)


def test_equal_layouts_build_and_say_so(world, capsys):
    for role in ("critic", "ref", "actor"):
        world.Engine(role, tensor_model_parallel_size=2)._init_device_mesh()
    assert guard._state.owner == gc.Owner("critic", sizes(tensor_model_parallel_size=2))
    assert world.mpu.initialize_model_parallel.__name__ == "initialize_model_parallel"
    assert not guard.is_wrapped(world.mpu.initialize_model_parallel)  # the scoped wrapper is gone again
    err = capsys.readouterr().err
    assert "verl-mindspeed guard: actor runs with the layout it asked for (TP=2, CP=1)" in err


def test_the_actor_stops_when_the_critic_built_another_layout(world):
    world.Engine("critic")._init_device_mesh()
    with pytest.raises(gc.GuardError) as exc:
        world.Engine("actor", tensor_model_parallel_size=2)._init_device_mesh()
    assert str(exc.value) == (
        "verl-mindspeed guard: actor asked for TP=2 but the process groups were built with TP=1 by the critic, "
        "which was built first (verl builds them once per process): set critic.megatron.tensor_model_parallel_size=2")


def test_an_engine_without_mindspeed_is_checked_too(world):
    world.Base("critic")._init_device_mesh()
    with pytest.raises(gc.GuardError,
                       match="actor asked for CP=2 but the process groups were built with CP=1 by the critic"):
        world.Base("actor", context_parallel_size=2)._init_device_mesh()


def test_a_repatch_that_does_not_reach_the_namespace_stops(world, monkeypatch):
    world.Engine("critic")._init_device_mesh()
    monkeypatch.setattr(guard, "_namespace", lambda: {"use_flash_attn": True, "use_fused_rmsnorm": False})
    with pytest.raises(gc.GuardError,
                       match="actor: after its repatch MindSpeed's namespace holds use_fused_rmsnorm=False"):
        world.Engine("actor", otc={"use_fused_rmsnorm": True})._init_device_mesh()


def test_differing_switches_are_reported_not_stopped(world, capsys):
    world.Engine("critic", otc={"use_fused_rmsnorm": True})._init_device_mesh()
    world.Engine("actor", otc={"use_fused_rmsnorm": False})._init_device_mesh()
    err = capsys.readouterr().err
    assert "the critic asked for use_fused_rmsnorm=True, but the actor's repatch set use_fused_rmsnorm=False" in err


def test_chinese_messages_follow_the_locale(world, monkeypatch):
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_MESSAGES", raising=False)
    world.Engine("critic")._init_device_mesh()
    with pytest.raises(gc.GuardError, match="请设置 critic.megatron.tensor_model_parallel_size=2"):
        world.Engine("actor", tensor_model_parallel_size=2)._init_device_mesh()


# --------------------------------------------------------------------------- switch and import hook

def _python(code: str, env: dict, path: list[str]) -> str:
    environ = {k: v for k, v in os.environ.items() if k != guard.ENV}
    environ.update(env, PYTHONPATH=os.pathsep.join([*path, str(ROOT / "src")]))
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=environ, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_disabled_installs_nothing():
    out = _python("""
        import sys
        from verl_mindspeed.integrations import guard
        print(guard.installed(), any(type(f).__name__ == "_Hook" for f in sys.meta_path), "torch" in sys.modules)
    """, {}, [])
    assert out == "False False False"


def test_enabled_wraps_modules_imported_later(tmp_path):
    """verl's MindSpeed engine binds ``repatch`` at import: the hook wraps the adaptor's before it does."""
    files = {
        "mindspeed/__init__.py": "",
        "mindspeed/megatron_adaptor.py": "def repatch(args):\n    pass\n",
        "verl/__init__.py": "", "verl/workers/__init__.py": "", "verl/workers/engine/__init__.py": "",
        "verl/workers/engine/mindspeed/__init__.py": "",
        "verl/workers/engine/mindspeed/transformer_impl.py": textwrap.dedent("""
            from mindspeed.megatron_adaptor import repatch
            class Base:
                def _init_device_mesh(self):
                    pass
            class MindspeedEngine(Base):
                def _init_device_mesh(self):
                    repatch({})
        """),
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    out = _python("""
        from verl_mindspeed.integrations import guard
        import mindspeed.megatron_adaptor as a
        import verl.workers.engine.mindspeed.transformer_impl as ti
        print(guard.installed(), guard.is_wrapped(ti.repatch), ti.repatch is a.repatch,
              guard.is_wrapped(ti.MindspeedEngine._init_device_mesh), guard.is_wrapped(ti.Base._init_device_mesh))
    """, {guard.ENV: "1"}, [str(tmp_path)])
    assert out == "True True True True True"
