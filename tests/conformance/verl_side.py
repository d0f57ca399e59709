"""What verl 0.9.1 hands MindSpeed and megatron-core for a composed launch config: the oracle's input.

Runs in the project's venv (verl, transformers, megatron-core 0.12.1), independently of the project's own
prediction (of ``verl_mindspeed`` only the harness that runs Megatron-Bridge, ``upstream._bridge_layer``, is
imported here; its rules, resolver and simulation never are):

- roles and their order: verl's ``need_critic`` / ``need_reference_policy``; engines are built critic,
  then ref, then actor, each in the same process per device (``verl/workers/engine_workers.py``);
- each role's engine config: verl's ``omega_conf_to_dataclass`` (its own validation runs; a failure is an
  upstream error at stage ``verl-config``);
- each role's ``repatch`` dict: verl's real ``_mindspeed_repatch`` with a recording ``repatch``;
- the parallel state: ``initialize_model_parallel`` with the FIRST engine's sizes (later engines return
  early, ``MegatronEngine._init_device_mesh``);
- each role's built config (the model bridge's view), in three layers, later ones winning:

  ================================  =========================================================================
  layer                             where the values come from
  ================================  =========================================================================
  model                             verl's converter ``hf_to_mcore_config`` (``models/mcore/config_converter``)
                                    executed on the HF ``config.json``; megatron's ``mpu`` getters answer the
                                    engine's sizes; the constructor is intercepted to take its kwargs
  Megatron-Bridge provider         the values Megatron-Bridge 0.3.1's provider holds on megatron-core 0.16.1 for
                                    :data:`PROVIDER_KEYS`, executed (``upstream._bridge_layer``, one run for every
                                    fixture model, :func:`provider_values`): the MindSpeed environments cannot import
                                    Megatron-Bridge themselves, so the provider runs beside them and its values are
                                    handed over; nothing here is hand-written
  verl's provider overrides         verl's real ``MegatronEngine._build_tf_config`` (Megatron-Bridge branch,
                                    verl 0.9.1's default) run with a stand-in ``AutoBridge`` that records
                                    ``apply_overrides_and_finalize(overrides=...)``: parallel sizes,
                                    ``sequence_parallel``, dispatcher ``alltoall``, and the role's dict
  ================================  =========================================================================

Values that are not JSON (dtypes, activation functions, enums) are encoded for the worker.
"""

from __future__ import annotations

import contextlib
import copy
import enum
import json
import sys
import types
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

from helpers import deep_copy, interpolations_parsed_once
from verl_mindspeed.upstream._provider import PROVIDER_KEYS  # the values check --upstream executes too

ROLE_SECTIONS = {
    "actor": "actor_rollout_ref.actor.megatron",
    "ref": "actor_rollout_ref.ref.megatron",
    "critic": "critic.megatron",
}
#: Build order of the engines in one colocated worker process (verl 0.8+).
BUILD_ORDER = ("critic", "ref", "actor")

#: The megatron-core line whose environment runs the provider, and the bridge there (``_bridge_layer.LAYERS``).
PROVIDER_LINE = "0.16.1"


class Captured(Exception):
    """Raised by the stand-ins to stop verl right where the value of interest is known."""

    def __init__(self, value):
        super().__init__("captured")
        self.value = value


@dataclass
class Upstream:
    """The oracle's input for one launch, or the verl-side error that stops it before MindSpeed runs."""

    steps: list[dict] = field(default_factory=list)
    switches: list[str] = field(default_factory=list)
    verl_error: Optional[dict] = None

    def case(self) -> dict:
        return {"steps": self.steps, "switches": self.switches}

    def key(self) -> str:
        return json.dumps(self.case(), sort_keys=True)


# --------------------------------------------------------------------------- encoding

def encode(value: Any) -> Any:
    import torch
    from omegaconf import DictConfig, ListConfig, OmegaConf

    if isinstance(value, (DictConfig, ListConfig)):
        value = OmegaConf.to_container(value, resolve=True)
    if isinstance(value, torch.dtype):
        return {"__dtype__": str(value).rsplit(".", 1)[-1]}
    if isinstance(value, enum.Enum):
        return {"__enum__": f"{type(value).__name__}.{value.name}"}
    if callable(value) and getattr(value, "__module__", "").startswith("torch.nn.functional"):
        return {"__func__": value.__name__}
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot send {type(value).__name__} to the oracle: {value!r}")


# --------------------------------------------------------------------------- verl's code, recorded

@lru_cache(maxsize=None)
def _transformer_impl():
    """verl's ``workers/engine/mindspeed/transformer_impl``, imported with a stand-in MindSpeed adaptor."""
    saved = {k: sys.modules.get(k) for k in ("mindspeed", "mindspeed.megatron_adaptor")}
    package, adaptor = types.ModuleType("mindspeed"), types.ModuleType("mindspeed.megatron_adaptor")
    adaptor.repatch = lambda args: None
    package.megatron_adaptor = adaptor
    sys.modules.update({"mindspeed": package, "mindspeed.megatron_adaptor": adaptor})
    try:
        import importlib

        return importlib.import_module("verl.workers.engine.mindspeed.transformer_impl")
    finally:
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old


def repatch_dict(engine_config) -> dict:
    """The dict verl's ``_mindspeed_repatch`` passes to MindSpeed's ``repatch`` for this engine."""
    impl = _transformer_impl()
    calls: list = []
    saved = impl.repatch
    impl.repatch = calls.append
    try:
        impl._mindspeed_repatch(engine_config)
    finally:
        impl.repatch = saved
    (args,) = calls
    return dict(args)


@lru_cache(maxsize=None)
def hf_config(model_dir: str):
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(model_dir)


@lru_cache(maxsize=None)
def _executed_providers(model_dirs: tuple[str, ...]) -> dict[str, dict]:
    from verl_mindspeed.upstream import _bridge_layer  # the harness that runs the bridge, not the prediction

    requests = [{"model_dir": d, "overrides": {}, "keys": PROVIDER_KEYS} for d in model_dirs]
    found = _bridge_layer.providers(PROVIDER_LINE, requests)
    out = {}
    for d, run in zip(model_dirs, found):
        if run["error"] is not None:
            raise RuntimeError(f"Megatron-Bridge's provider failed for {d}: {run['error']}")
        out[d] = {k: v for k, v in run["values"].items() if v != "<absent>"}
    return out


def provider_values(model_dir: str) -> dict:
    """What the executed Megatron-Bridge provider holds for :data:`PROVIDER_KEYS` before verl's overrides, for this
    HF model folder (every fixture model is run at the first call, in one process)."""
    models = _fixture_dirs()
    key = models if model_dir in models else (model_dir,)
    return dict(_executed_providers(key)[model_dir])


def converter_view(model_dir: str, engine_config) -> tuple[str, dict]:
    """(config class name, kwargs) from verl's converter for this model, with the engine's parallel sizes."""
    import torch
    from megatron.core import config as mcore_config
    from verl.models.mcore import config_converter as cc
    from verl.models.mcore import patch as mcore_patch
    from verl.models.mcore.registry import hf_to_mcore_config

    e = engine_config
    mpu = types.SimpleNamespace(
        get_tensor_model_parallel_world_size=lambda: e.tensor_model_parallel_size,
        get_pipeline_model_parallel_world_size=lambda: e.pipeline_model_parallel_size,
        get_expert_model_parallel_world_size=lambda: e.expert_model_parallel_size,
        get_expert_tensor_parallel_world_size=lambda: e.expert_tensor_parallel_size or e.tensor_model_parallel_size,
        get_virtual_pipeline_model_parallel_world_size=lambda: e.virtual_pipeline_model_parallel_size,
        get_context_parallel_world_size=lambda: e.context_parallel_size,
    )

    def capture(original_config, cls):
        raise Captured((cls.__name__, dict(original_config)))

    saved = (cc.mpu, cc.check_and_construct_configs, mcore_patch.apply_patch,
             getattr(mcore_config, "set_experimental_flag", None))
    cc.mpu, cc.check_and_construct_configs = mpu, capture
    mcore_patch.apply_patch = lambda: None  # verl's runtime patches of megatron modules: not config values
    # The DeepSeek converter switches megatron's experimental flag (absent from megatron-core 0.12.1, which
    # this venv has): a process flag, not a config value.
    mcore_config.set_experimental_flag = lambda flag: None
    hf = copy.deepcopy(hf_config(model_dir))
    # As verl's check_mtp_config does with MTP off (and as the converter's own message asks): no MTP layers;
    # an FP8 checkpoint's quantization_config concerns weights, not the config view.
    if getattr(hf, "num_nextn_predict_layers", None):
        hf.num_nextn_predict_layers = 0
    if getattr(hf, "quantization_config", None):
        hf.quantization_config = None
    try:
        hf_to_mcore_config(hf, torch.bfloat16)
    except Captured as got:
        return got.value
    finally:
        cc.mpu, cc.check_and_construct_configs, mcore_patch.apply_patch = saved[:3]
        if saved[3] is None:
            del mcore_config.set_experimental_flag
        else:
            mcore_config.set_experimental_flag = saved[3]
    raise AssertionError("verl's converter built no config")


def provider_overrides(model_dir: str, engine_config) -> dict:
    """What verl 0.9.1's ``_build_tf_config`` applies to Megatron-Bridge's provider for this engine."""
    from verl.workers.engine.megatron import transformer_impl as mimpl

    class Provider:
        def apply_overrides_and_finalize(self, dtype, overrides):
            raise Captured(dict(overrides))

    class Bridge:
        @classmethod
        def from_hf_pretrained(cls, path, trust_remote_code=False):
            return cls()

        def to_megatron_provider(self, load_weights=False):
            return Provider()

    fake = types.ModuleType("verl.models.mcore.bridge")
    fake.AutoBridge = Bridge
    hf = copy.deepcopy(hf_config(model_dir))
    engine = types.SimpleNamespace(
        model_config=types.SimpleNamespace(
            model_type="language_model", share_embeddings_and_output_weights=False, hf_config=hf,
            local_path=model_dir, trust_remote_code=False, architectures=hf.architectures,
            mtp=types.SimpleNamespace(enable=False)),
        engine_config=engine_config,
        enable_routing_replay=False,
        _qat_enabled=False,
    )
    saved = sys.modules.get("verl.models.mcore.bridge")
    sys.modules["verl.models.mcore.bridge"] = fake
    saved_check = mimpl.check_mtp_config
    mimpl.check_mtp_config = lambda model_config, engine_config: None  # MTP off: verl's own no-op path
    try:
        mimpl.MegatronEngine._build_tf_config(engine)
    except Captured as got:
        return got.value
    finally:
        mimpl.check_mtp_config = saved_check
        if saved is None:
            sys.modules.pop("verl.models.mcore.bridge", None)
        else:
            sys.modules["verl.models.mcore.bridge"] = saved
    raise AssertionError("verl built no provider")


def engine_checks(engine_config, model_dir: Optional[str]) -> Optional[dict]:
    """Run verl's real ``MegatronEngine.__init__`` up to its device mesh: the checks it makes on the config
    before any device is touched (``use_mbridge must be True``, ``_check_dcp_unsupported_features``).
    ``None`` when they pass, else the exception's type and first line."""
    from unittest import mock

    from verl.workers.engine.megatron import transformer_impl as ti

    def stop(self):
        raise Captured(None)

    model = types.SimpleNamespace(hf_config=hf_config(model_dir) if model_dir else types.SimpleNamespace())
    try:
        with mock.patch.object(ti.MegatronEngine, "_init_device_mesh", stop), _quiet():
            ti.MegatronEngine(model, engine_config, None, None)
    except Captured:
        return None
    except Exception as exc:  # noqa: BLE001 - verl's own refusal is the verdict
        return refusal(exc)
    return None


def refusal(exc: BaseException) -> dict:
    """verl's refusal as the oracle records it: the exception's type, the first line of its message, and the
    exception as a worker's log prints it (from verl's first frame)."""
    from verl_mindspeed.upstream._oracle_harness import traceback_text

    text = str(exc).strip()
    return {"exc_type": type(exc).__name__, "message": text.splitlines()[0][:300] if text else "",
            "traceback": traceback_text(exc, ("verl", "hydra", "omegaconf"))}


def driver_checks(cfg) -> Optional[dict]:
    """Run verl's real ``validate_config`` on a resolved config, as ``main_ppo``'s driver does first: ``None``
    when it passes, else the exception's type and first line.

    The one stand-in: ``HFModelConfig`` does not load the model (the critic's config loads its ``config.json`` and
    tokenizer from the model path, which exists on the user's machine, not here); every check runs as written."""
    from unittest import mock

    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config
    from verl.workers.config.model import HFModelConfig

    try:
        with contextlib.redirect_stderr(None), _quiet(), \
                mock.patch.object(HFModelConfig, "__post_init__", lambda self: None):
            validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    except Exception as exc:  # noqa: BLE001 - verl's own refusal is the verdict
        return refusal(exc)
    return None


def parallel_sizes(e) -> dict:
    return {"tp": e.tensor_model_parallel_size, "pp": e.pipeline_model_parallel_size,
            "vpp": e.virtual_pipeline_model_parallel_size, "cp": e.context_parallel_size,
            "ep": e.expert_model_parallel_size, "etp": e.expert_tensor_parallel_size}


def trainer_world(cfg) -> Optional[int]:
    """The device count verl's trainer pool spans: ``[trainer.n_gpus_per_node] * trainer.nnodes`` (verl 0.9.1
    ``trainer/ppo/v1/trainer_base.py``'s global pool; ``experimental/separation/utils.py``'s trainer pool for the
    trainers that run the rollout apart)."""
    from omegaconf import OmegaConf

    nodes, per_node = OmegaConf.select(cfg, "trainer.nnodes"), OmegaConf.select(cfg, "trainer.n_gpus_per_node")
    return nodes * per_node if isinstance(nodes, int) and isinstance(per_node, int) else None


# --------------------------------------------------------------------------- one launch

def upstream_of(cfg, model_dir: Optional[str], default_dict: dict, validates: bool = True) -> Upstream:
    """The oracle's case for a composed config (the caller's copy is not modified).

    ``default_dict`` is the tree's own ``override_transformer_config`` defaults: keys the user set are
    the others, and those are the switches whose silent non-application is a warning. ``validates``: the entry
    runs verl's ``validate_config`` in its driver first (``main_ppo`` does; the fully-async entry does not).
    """
    from omegaconf import OmegaConf
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass

    cfg = deep_copy(cfg)
    out = Upstream()
    try:
        with interpolations_parsed_once():
            OmegaConf.resolve(cfg)
        with contextlib.redirect_stderr(None), _quiet():
            roles = [r for r in BUILD_ORDER if r == "actor" or (r == "critic" and need_critic(cfg))
                     or (r == "ref" and need_reference_policy(cfg))]
    except Exception as exc:  # noqa: BLE001
        out.verl_error = {"stage": "verl-config", "exc_type": type(exc).__name__, "message": str(exc)[:300],
                          "traceback": refusal(exc)["traceback"]}
        return out
    if validates:
        failure = driver_checks(cfg)
        if failure is not None:  # verl's driver stops before any worker starts
            out.verl_error = {"stage": "verl-driver", **failure}
            return out
    first = True
    switches: set[str] = set()
    for role in roles:
        section = OmegaConf.select(cfg, ROLE_SECTIONS[role])
        try:
            with _quiet():
                engine = omega_conf_to_dataclass(section)
        except Exception as exc:  # noqa: BLE001 - verl refuses the section: the launch stops there
            out.verl_error = {"stage": "verl-config", "role": role, **refusal(exc)}
            return out
        failure = engine_checks(engine, model_dir)
        if failure is not None:  # verl's engine refuses the role before MindSpeed is ever called
            out.verl_error = {"stage": "verl-engine", "role": role, **failure}
            return out
        try:
            args = repatch_dict(engine)
        except Exception as exc:  # noqa: BLE001 - verl's own repatch refuses the dict (attention_backend=<typo>)
            out.verl_error = {"stage": "verl-engine", "role": role, **refusal(exc),
                              "where": "verl/workers/engine/mindspeed/transformer_impl.py _mindspeed_repatch"}
            return out
        user = {k for k, v in (engine.override_transformer_config or {}).items()
                if k not in default_dict or default_dict[k] != v}
        switches |= {k for k in user if args.get(k) not in (None, False, 0, "")}
        out.steps.append({"op": "repatch", "role": role, "args": encode(args)})
        if first:
            out.steps.append({"op": "parallel", "role": role, "sizes": {**parallel_sizes(engine),
                                                                         "world": trainer_world(cfg)}})
            first = False
        if model_dir is not None:
            cls, kwargs = converter_view(model_dir, engine)
            if getattr(engine, "vanilla_mbridge", False):
                # The mbridge path: mbridge's own view is verl's converter's for every value a MindSpeed check
                # reads (executed against mbridge 0.15.1 on 0.12.1 in test_bridge_executed.py; mbridge leaves
                # bias_activation_fusion False for dense models, which no MindSpeed check reads), then
                # set_extra_args(**dict).
                from verl.utils.megatron_utils import mapping_string_to_attn_backend

                kwargs.update(mapping_string_to_attn_backend(dict(engine.override_transformer_config or {})))
            else:
                kwargs.update(provider_values(model_dir))
                kwargs.update(provider_overrides(model_dir, engine))
            out.steps.append({"op": "build", "role": role, "cls": cls, "kwargs": encode(kwargs)})
    out.switches = sorted(switches)
    return out


@contextlib.contextmanager
def _quiet():
    import io
    import warnings

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


@lru_cache(maxsize=None)
def _fixture_dirs() -> tuple[str, ...]:
    return tuple(str(p) for p in fixture_models().values())


def fixture_models() -> dict[str, Path]:
    root = Path(__file__).resolve().parents[1] / "fixtures" / "models"
    return {p.name: p for p in sorted(root.iterdir()) if (p / "config.json").exists()}
