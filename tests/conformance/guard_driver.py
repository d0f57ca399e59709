"""MindSpeed's real ``repatch`` for the runtime guard's and the era model's conformance tests.

    <python> guard_driver.py --mindspeed DIR --megatron DIR --release NAME < request.json > answer.json

Imports MindSpeed exactly as the oracle worker does (``verl_mindspeed/upstream/_oracle_stubs.py`` for the NPU-only modules,
``_oracle_worker.py``'s ``Oracle`` for the per-case reset and its filtered patch scan), then answers ONE
request (a JSON object on stdin) with one JSON object on stdout:

``{"mode": "era", "sequences": [{"name": ..., "calls": [dict, ...], "enum": bool}, ...]}``
    For each sequence, from the state right after ``import mindspeed.megatron_adaptor``: ``repatch(dict)``
    call after call, and after each call MindSpeed's namespace (``mindspeed.args_utils.get_full_args()``):
    the value of every key any dict of the sequence carries, and every other key that changed against the
    namespace before the first call. ``enum``: ``attention_backend`` is handed over as megatron's enum, as
    verl's engines do (``mapping_string_to_attn_backend``). Runs in an oracle venv; verl is not needed.
``{"mode": "guard", "scenarios": [{"name": ..., "engines": [{"role", "section"}, ...]}, ...]}``
    Needs verl (the project's venv, megatron-core 0.12.1): ``import verl`` loads the ``verl.plugins`` entry
    points (the caller puts the guard's on the path), then every engine of a scenario runs verl's real
    ``_init_device_mesh`` of its MindSpeed engine class (value head for the critic), with the engine config
    verl builds from the role's section (``omega_conf_to_dataclass``), in the order given, over torch's
    single-process ``fake`` process group of world size 8. Answers per scenario whether the guard stopped
    it (its message), and the live parallel sizes.

Harness choices beyond the oracle's: MindSpeed's patch scan is filtered from the import on (the project's
venv holds transformers, whose lazy module the unfiltered scan would walk); the gloo groups megatron asks
for are made on the fake backend (gloo needs real peers; the groups decide no size).
"""  # noqa: E501  (a docstring: re-wrapping would change its value)

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
UPSTREAM = os.path.join(os.path.dirname(os.path.dirname(HERE)), "src", "verl_mindspeed", "upstream")


def plain(value):
    """A namespace value as JSON: enums by name, sets sorted, anything else unknown by repr."""
    import enum

    if isinstance(value, enum.Enum):
        return value.name
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple, set)):
        return [plain(v) for v in (sorted(value) if isinstance(value, set) else value)]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return repr(value)


def setup(opts):
    os.environ.setdefault("PYTORCH_JIT", "0")
    sys.argv = [sys.argv[0]]
    import importlib.util

    def load(name):  # the project's upstream harness, loaded by path (this process never imports verl_mindspeed)
        spec = importlib.util.spec_from_file_location(name, os.path.join(UPSTREAM, f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module

    stubs = load("_oracle_stubs")
    sys.path.insert(0, opts.megatron)
    sys.path.insert(0, opts.mindspeed)
    stubs.install()
    worker = load("_oracle_worker")
    import mindspeed.patch_utils as patch_utils

    patch_utils.sys = worker.FilteredSys()
    return worker


def namespace():
    from mindspeed.args_utils import get_full_args

    return vars(get_full_args())


def era(oracle, sequences):
    out = []
    for seq in sequences:
        oracle.reset(remove=True)
        before = {k: plain(v) for k, v in namespace().items()}
        keys = sorted({k for call in seq["calls"] for k in call})
        steps = []
        for call in seq["calls"]:
            args = dict(call)
            if seq.get("enum") and isinstance(args.get("attention_backend"), str):
                from megatron.core.transformer.enums import AttnBackend

                args["attention_backend"] = AttnBackend[args["attention_backend"]]
            try:
                with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    oracle.adaptor.repatch(args)
            except Exception as exc:  # noqa: BLE001 - reported, the sequence stops
                steps.append({"error": f"{type(exc).__name__}: {exc}"[:300]})
                break
            now = {k: plain(v) for k, v in namespace().items()}
            steps.append({"values": {k: now.get(k, "<absent>") for k in keys},
                          "changed": {k: v for k, v in now.items() if k not in keys and before.get(k) != v}})
        out.append({"name": seq["name"], "steps": steps})
    return out


def _gloo_on_fake():
    import torch.distributed as dist

    original = dist.new_group
    if getattr(original, "_guard_driver", False):
        return

    def new_group(*args, **kwargs):
        if kwargs.get("backend") == "gloo":
            kwargs["backend"] = None
        return original(*args, **kwargs)

    new_group._guard_driver = True
    dist.new_group = new_group


def guard(oracle, scenarios):
    import types

    import torch.distributed as dist
    from omegaconf import OmegaConf
    from torch.testing._internal.distributed.fake_pg import FakeStore
    from verl.utils.config import omega_conf_to_dataclass
    from verl.workers.engine.mindspeed import transformer_impl as ti

    # isort: split
    # megatron after verl's MindSpeed engine, in the order this driver always imported them.
    from megatron.core import parallel_state as mpu

    from verl_mindspeed.integrations import guard as g

    info = {"enabled": g.enabled(), "installed": g.installed(), "repatch_wrapped": g.is_wrapped(ti.repatch),
            "mesh_wrapped": g.is_wrapped(ti.MegatronEngineWithLMHead._init_device_mesh)}
    out = []
    for sc in scenarios:
        oracle.reset(remove=True)  # which also puts back torch.distributed.new_group: the shims go on again
        sys.modules["_oracle_worker"].drop_stub_group_options()  # the harness loaded by name (setup)
        _gloo_on_fake()
        g.reset()
        dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=8)
        result = {"name": sc["name"], "stopped": None, "built": []}
        for eng in sc["engines"]:
            cls = ti.MindspeedEngineWithValueHead if eng["role"] == "critic" else ti.MindspeedEngineWithLMHead
            engine = cls.__new__(cls)
            engine.engine_config = omega_conf_to_dataclass(OmegaConf.create(eng["section"]))
            engine.model_config = types.SimpleNamespace(
                model_type="value_model" if eng["role"] == "critic" else "language_model")
            try:
                with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    engine._init_device_mesh()
            except Exception as exc:  # noqa: BLE001 - the guard's stop, or an upstream error
                result["stopped"] = {"role": eng["role"], "type": type(exc).__name__, "message": str(exc)}
                break
            result["built"].append(eng["role"])
        result["live"] = {"tp": mpu.get_tensor_model_parallel_world_size(),
                          "pp": mpu.get_pipeline_model_parallel_world_size(),
                          "cp": mpu.get_context_parallel_world_size()} if mpu.is_initialized() else None
        out.append(result)
    return {"info": info, "scenarios": out}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mindspeed", required=True)
    parser.add_argument("--megatron", required=True)
    parser.add_argument("--release", required=True)
    opts = parser.parse_args()
    out = sys.stdout
    sys.stdout = sys.stderr  # whatever upstream prints stays off the answer
    request = json.loads(sys.stdin.read())
    try:
        worker = setup(opts)
        if request["mode"] == "guard":
            import verl  # noqa: F401 - loads the verl.plugins entry points, the guard's among them
            import verl.workers.engine.mindspeed.transformer_impl  # noqa: F401 - imports MindSpeed's adaptor
        oracle = worker.Oracle(opts.release, False)
        if request["mode"] == "era":
            answer = {"has_repatch": oracle.has_repatch, "sequences": era(oracle, request["sequences"])}
        else:
            answer = guard(oracle, request["scenarios"])
    except Exception as exc:  # noqa: BLE001 - a harness failure, reported as such
        answer = {"harness_error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-3000:]}
    out.write(json.dumps(answer) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
