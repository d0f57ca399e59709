"""Run in a megatron-core environment with the Megatron-Bridge layer on PYTHONPATH (``_bridge_layer.provider``).

Reads a list of ``{"model_dir", "overrides", "keys"}`` on stdin and prints one JSON line, a list with, for each: the
provider Megatron-Bridge builds
for the HF model folder, after the overrides are applied the way verl 0.9.1's ``_build_tf_config`` applies them
(``verl/workers/engine/megatron/transformer_impl.py`` lines 343-410: ``AutoBridge.from_hf_pretrained``,
``to_megatron_provider(load_weights=False)``, then ``apply_overrides_and_finalize`` where the release has it, else
``setattr`` of each override and ``finalize()``), with the values of ``keys``; or the exception with its upstream
``file:line``.

Stand-ins, each named in the output (``stand_ins``) where it is used: megatron-core's fused MoE permute functions
(:data:`FUSED_PERMUTE`); and two for imports only, removed once Megatron-Bridge is imported:
``transformer_engine.pytorch`` (imported unconditionally by Megatron-Bridge's ``peft/lora_layers.py``; megatron-core
has decided its own TE paths before it exists) and ``triton`` (imported by megatron-core's mamba/inference kernels
that the provider never runs). No value printed comes from a stand-in: the provider is a dataclass of megatron-core's
``TransformerConfig``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import traceback
import types
import warnings

try:  # imported as part of the verl_mindspeed package
    from ._oracle_harness import traceback_text
except ImportError:  # run as a script in the bridge's Python: the sibling by name (standard library only)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _oracle_harness import traceback_text


class _Meta(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Meta(name, (_Stand,), {})


class _Stand(metaclass=_Meta):
    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):  # a stand-in decorator (``@triton.jit(...)``) leaves the function as it is
        return args[0] if len(args) == 1 and callable(args[0]) else self


def _stand_in(name: str) -> types.ModuleType:
    module = types.ModuleType(name)

    def attribute(attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Meta(attr, (_Stand,), {})

    module.__getattr__ = attribute
    return module


def _import_auto_bridge(kind: str):
    """The ``AutoBridge`` of Megatron-Bridge or of mbridge, imported with the import-only stand-ins."""
    import megatron.core.models.gpt.gpt_layer_specs  # noqa: F401  megatron-core decides its TE paths without TE
    import megatron.core.transformer.transformer_config  # noqa: F401
    import transformers.utils.import_utils  # noqa: F401  transformers decides its optional packages first

    # triton only where it is absent (the CPU torch); the CUDA torch of the Python 3.12 layer brings the real one
    names = ("transformer_engine", "transformer_engine.pytorch",
             *(() if importlib.util.find_spec("triton") else ("triton", "triton.language")))
    stands = {name: _stand_in(name) for name in names}
    stands["transformer_engine"].pytorch = stands["transformer_engine.pytorch"]
    stands["transformer_engine"].__version__ = "0.0.0"  # asked by megatron-core's TE extension module on import
    if "triton" in stands:
        stands["triton"].language = stands["triton.language"]
    import megatron.core.utils as utils

    cached = getattr(utils, "_te_version", None)
    sys.modules.update(stands)
    try:
        if kind == "mbridge":
            _verl_patch_mbridge()
            from mbridge import AutoBridge
        else:
            from megatron.bridge import AutoBridge
    finally:
        for name in stands:
            sys.modules.pop(name, None)
        if hasattr(utils, "_te_version"):
            utils._te_version = cached  # the stand-in's version is not megatron-core's to keep
    return AutoBridge


def _verl_patch_mbridge() -> None:
    """verl 0.9.1's ``apply_patch_mbridge`` (verl/models/mcore/patch.py line 446), run before it imports mbridge: a
    ``get_tensor_model_parallel_group_if_none`` for megatron-core releases without it (0.12.x)."""
    import megatron.core.utils as utils

    if not hasattr(utils, "get_tensor_model_parallel_group_if_none"):
        utils.get_tensor_model_parallel_group_if_none = lambda tp_group, is_expert=False, check_initialized=True: \
            tp_group


def _mbridge_config(AutoBridge, request: dict):  # noqa: N803
    """verl 0.9.1's vanilla path (transformer_impl.py lines 328-333): ``AutoBridge.from_config(hf_config, dtype)``,
    ``set_extra_args(**dict)``, ``bridge.config``; the parallel sizes mbridge reads from Megatron's parallel state
    are given as its ``ParallelStates``."""
    import torch
    from mbridge.core.parallel_states import ParallelStates
    from transformers import AutoConfig

    g = request.get("groups") or {}
    states = ParallelStates(tp_size=g.get("tensor_model_parallel_size", 1),
                            pp_size=g.get("pipeline_model_parallel_size", 1),
                            vpp_size=g.get("virtual_pipeline_model_parallel_size"),
                            cp_size=g.get("context_parallel_size", 1), ep_size=g.get("expert_model_parallel_size", 1),
                            etp_size=g.get("expert_tensor_parallel_size") or g.get("tensor_model_parallel_size", 1))
    bridge = AutoBridge.from_config(AutoConfig.from_pretrained(request["model_dir"]), dtype=torch.bfloat16,
                                    parallel_states=states)
    bridge.set_extra_args(**request["overrides"])
    return bridge.config


#: megatron-core's fused MoE permute functions, None without Transformer Engine; ``finalize()`` refuses
#: ``moe_permute_fusion=True`` (which Megatron-Bridge sets for MoE models) without them. On an NPU, MindSpeed's fused
#: permute patch provides them: here a named stand-in does, and a verdict on ``moe_permute_fusion`` is not this probe's.
FUSED_PERMUTE = ("fused_permute", "fused_permute_with_probs", "fused_sort_chunks_by_index",
                 "fused_sort_chunks_by_index_with_probs", "fused_unpermute")


def _stand_in_fused_permute() -> list[str]:
    from megatron.core.transformer.moe import moe_utils

    placed = []
    for name in FUSED_PERMUTE:
        if getattr(moe_utils, name, None) is None:
            setattr(moe_utils, name, _Meta(name, (_Stand,), {}))
            placed.append(f"megatron.core.transformer.moe.moe_utils.{name}")
    return placed


def _plain(value):
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return str(value)


def _where(exc: BaseException) -> dict:
    """The exception, its innermost upstream ``file:line``, and its traceback as Python prints it from the first
    upstream frame on (the oracle's own ``traceback_text``: what a worker's log shows)."""
    every = traceback.extract_tb(exc.__traceback__)
    frames = [f for f in every if "/megatron/" in f.filename]
    last = frames[-1] if frames else every[-1]
    path = last.filename.split("site-packages/")[-1].split("/megatron-bridge-")[-1]
    text = str(exc)
    return {"type": type(exc).__name__, "message": text.splitlines()[0] if text else "",
            "file": path, "line": last.lineno, "traceback": traceback_text(exc, roots=("megatron",))}


def main() -> None:
    warnings.filterwarnings("ignore")
    requests = json.loads(sys.stdin.read())
    kind = sys.argv[1] if len(sys.argv) > 1 else "megatron-bridge"
    auto_bridge = _import_auto_bridge(kind)
    stand_ins = _stand_in_fused_permute()
    do = run_mbridge if kind == "mbridge" else run
    print(json.dumps([{**do(auto_bridge, r), "stand_ins": stand_ins} for r in requests]))


def run_mbridge(AutoBridge, request: dict) -> dict:  # noqa: N803
    try:
        config = _mbridge_config(AutoBridge, request)
    except Exception as exc:  # the verdict of upstream's code on this dict
        return {"class": None, "error": _where(exc), "values": {}}
    return {"class": type(config).__name__, "error": None,
            "values": {k: _plain(getattr(config, k, "<absent>")) for k in request["keys"]}}


def run(AutoBridge, request: dict) -> dict:  # noqa: N803  (the class, as verl names it)
    import torch

    bridge = AutoBridge.from_hf_pretrained(request["model_dir"], trust_remote_code=False)
    provider = bridge.to_megatron_provider(load_weights=False)
    out = {"class": type(provider).__name__, "error": None}
    try:
        overrides = dict(request["overrides"])
        if isinstance(overrides.get("attention_backend"), str):  # verl passes the enum (AttnBackend.flash)
            from megatron.core.transformer.enums import AttnBackend

            overrides["attention_backend"] = AttnBackend[overrides["attention_backend"]]
        if hasattr(provider, "apply_overrides_and_finalize"):
            provider.apply_overrides_and_finalize(dtype=torch.bfloat16, overrides=overrides)
        else:
            provider.params_dtype, provider.fp16, provider.bf16 = torch.bfloat16, False, True
            for name, value in overrides.items():
                setattr(provider, name, value)
            if hasattr(provider, "finalize"):
                provider.finalize()
    except Exception as exc:  # the verdict of upstream's code on these overrides
        out["error"] = _where(exc)
    out["values"] = {k: _plain(getattr(provider, k, "<absent>")) for k in request["keys"]}
    return out


if __name__ == "__main__":
    main()
