"""The upstream worker: runs one MindSpeed release against real megatron-core on CPU, one case per JSON line.

    <python> _oracle_worker.py --mindspeed DIR --megatron DIR --release NAME [--full-scan]

``DIR`` for ``--mindspeed`` holds ``mindspeed/``; for ``--megatron`` it holds ``megatron/training`` and
``megatron/legacy`` (Megatron-LM's training code, not in the megatron-core wheel; ``megatron`` is a namespace
package, so ``megatron.core`` still comes from the installed wheel). The worker prints one JSON line
``{"ready": {...}}`` after importing MindSpeed, then answers each case line with a verdict line.

A case is a list of steps, executed in order in this one process, as verl runs them in one worker
process per device:

- ``{"op": "repatch", "args": {...}, "role": "critic"}``: ``mindspeed.megatron_adaptor.repatch(args)``;
- ``{"op": "parallel", "sizes": {...}}``: ``megatron.core.parallel_state.initialize_model_parallel`` over a
  single-process fake process group (``torch.testing._internal.distributed.fake_pg``) whose world size is
  the smallest the sizes allow;
- ``{"op": "build", "cls": "TransformerConfig", "kwargs": {...}, "role": "actor"}``: the config class, as
  patched by MindSpeed, built from the model bridge's kwargs; then megatron's layer assignment
  (``get_num_layers_to_build`` for every pipeline rank and virtual chunk) and, with full recompute, the
  recompute forward (``TransformerBlock._checkpointed_forward`` over identity layers) for each stage;
  ``"probe": [names]`` returns those attributes of the built config.

Harness choices, none of which runs or skips an argument check: MindSpeed's patch scan sees only megatron,
MindSpeed and the stubbed modules (``FilteredModules``, proven verdict-neutral by a test); the process group is
torch's single-process ``fake`` backend, without gloo groups (they need real peers) and without the HCCL
options a stub hands ``new_group``; TorchScript is off; the recompute checkpoint saves the CPU RNG state.

Verdict: ``error`` when any step raises (stage, exception type, first line); ``warning`` when a switch the
user set names a MindSpeed feature that the last repatch did not apply (``is_need_apply`` false, or its
``register_patches`` registered no patch); ``ok`` otherwise. Every MindSpeed log warning is reported too.

Per case the process returns to its state right after ``import mindspeed.megatron_adaptor``: patches
removed, MindSpeed's argument namespace restored, parallel state and process group destroyed.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import inspect
import io
import json
import logging
import math
import os
import sys
import time
import traceback
import types
import warnings

#: Top-level module names whose ``from x import f`` copies MindSpeed's patch scan must rebind to decide
#: anything: megatron, MindSpeed and the NPU-only names. See ``FilteredModules``.
SCAN_ROOTS = ("megatron", "mindspeed", "torch_npu", "torchair", "transformer_engine", "apex", "acl", "tbe",
              "flash_attn", "triton", "einops")



#: Features switched on by a key other than their own name (``is_need_apply`` reads both): the fused-permute
#: feature is ``moe_permute_fusion`` and MindSpeed's own switch turns it on too (fusions/fused_moe_permute.py).
FEATURE_SWITCHES = {"moe_permute_fusion": {"use_fused_moe_token_permute_and_unpermute"}}

class FilteredModules:
    """``sys.modules`` as MindSpeed's patch manager sees it, restricted to :data:`SCAN_ROOTS` for ``copy()``.

    ``Patch.apply_patch``/``remove_patch`` walk ``sys.modules.copy()`` and rebind every module attribute
    that is the patched function (``from x import f`` copies). Rebinding inside torch, numpy or the
    standard library changes which function object those modules would call at run time; it never runs an
    argument check and never registers a patch. A deliberate harness choice, proven verdict-neutral by
    ``tests/conformance/test_harness.py``.
    """

    def __getitem__(self, key):
        return sys.modules[key]

    def __setitem__(self, key, value):
        sys.modules[key] = value

    def __contains__(self, key):
        return key in sys.modules

    def get(self, key, default=None):
        return sys.modules.get(key, default)

    _cache: dict = {}
    _seen: tuple = (None, -1)

    def copy(self):
        # Recomputed whenever a module was imported or replaced since (the key set's size and the identity of
        # the newest entry change); otherwise the same selection as before.
        modules = sys.modules
        marker = (next(reversed(modules)), len(modules))
        if marker != FilteredModules._seen:
            FilteredModules._cache = {k: v for k, v in list(modules.items())
                                      if k.partition(".")[0] in SCAN_ROOTS or k == "torch.classes"}
            FilteredModules._seen = marker
        return dict(FilteredModules._cache)


class FilteredSys(types.ModuleType):
    def __init__(self):
        super().__init__("sys")
        self.modules = FilteredModules()

    def __getattr__(self, name):
        return getattr(sys, name)


# --------------------------------------------------------------------------- values over JSON

def decode(value):
    """JSON -> Python, for the few non-JSON values a bridge puts in the kwargs."""
    if isinstance(value, dict):
        if set(value) == {"__dtype__"}:
            import torch

            return getattr(torch, value["__dtype__"])
        if set(value) == {"__func__"}:
            import torch.nn.functional as F

            return getattr(F, value["__func__"])
        if set(value) == {"__enum__"}:
            from megatron.core.transformer import enums

            cls, _, member = value["__enum__"].partition(".")
            return getattr(enums, cls)[member]
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:400] if text else ""


def where_raised(exc: BaseException) -> str:
    """The innermost frame of the traceback that is upstream code (not this worker), as ``file:line``."""
    frames = traceback.extract_tb(exc.__traceback__)
    for frame in reversed(frames):
        if "/mindspeed/" in frame.filename or "/megatron/" in frame.filename:
            parts = frame.filename.split("/")
            for root in ("mindspeed", "megatron"):
                if root in parts:
                    idx = len(parts) - 1 - parts[::-1].index(root)
                    return f"{'/'.join(parts[idx:])}:{frame.lineno}"
    return f"{frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" if frames else ""


def _plain(value):
    """A config value as JSON: containers and scalars as they are, anything else as its repr."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple, set)):
        return [_plain(v) for v in (sorted(value) if isinstance(value, set) else value)]
    return repr(value)


class _Recorder:
    """A patch manager that only records the names a feature registers."""

    def __init__(self):
        self.names: set[str] = set()

    def register_patch(self, orig_func_name, new_func=None, force_patch=False, create_dummy=False):
        self.names.add(orig_func_name)

    def remove_wrappers(self, *args, **kwargs):
        pass


def dry_run(feature, args) -> set[str]:
    recorder = _Recorder()
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        feature.pre_register_patches(recorder, args)
        feature.register_patches(recorder, args)
    return recorder.names


class StageError(Exception):
    def __init__(self, stage: str, exc: BaseException, role: str | None):
        super().__init__(stage)
        self.stage, self.exc, self.role = stage, exc, role


# --------------------------------------------------------------------------- the oracle

class Oracle:
    def __init__(self, release: str, full_scan: bool):
        self.release = release
        sys.argv = [sys.argv[0]]  # MindSpeed parses the process's argv at import
        self.log = io.StringIO()
        self._install_log_capture()
        self.adaptor = self._import_adaptor()
        self.has_repatch = hasattr(self.adaptor, "repatch")
        import mindspeed.patch_utils as patch_utils
        from mindspeed.features_manager.feature import MindSpeedFeature
        from mindspeed.features_manager.features_manager import MindSpeedFeaturesManager

        self.manager = MindSpeedFeaturesManager
        self.patch_utils = patch_utils
        if not full_scan:
            patch_utils.sys = FilteredSys()
        self.namespace = self._namespace()
        self.pristine = copy.deepcopy(vars(self.namespace)) if self.namespace is not None else {}
        self.registered: dict[str, set[str]] = {}
        self.applied: dict[str, bool] = {}
        self.built: list = []
        self._track_features(MindSpeedFeature)
        # A release without repatch (2.1.0) cannot remove patches either: the patches of the import are
        # the process's for good, so they are recorded once, by a dry run from the same namespace.
        self.can_remove = hasattr(self.manager, "remove_patches")
        # MindSpeed's patch registry outlives remove_patches (it restores the originals, keeps the entries): a
        # switch of one case (dist_train, auto_settings...) would leave patches that a later case's repatch
        # applies again. One launch is one process; so is one case: entries added after the import go away.
        registry = getattr(getattr(patch_utils, "MindSpeedPatchesManager", None), "patches_info", None)
        self.patch_registry = registry if isinstance(registry, dict) else None
        self.pristine_patches = set(registry) if self.patch_registry is not None else set()
        if not self.can_remove:
            for feature in self.manager.FEATURES_LIST:
                self.applied[feature.feature_name] = bool(feature.is_need_apply(self.namespace))
                if self.applied[feature.feature_name]:
                    with contextlib.suppress(Exception):
                        self.registered[feature.feature_name] = dry_run(feature, self.namespace)

    # -- setup
    def _install_log_capture(self):
        handler = logging.StreamHandler(self.log)
        handler.setLevel(logging.WARNING)
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        self.handler = handler
        logging.getLogger().addHandler(handler)

    @staticmethod
    def _import_adaptor():
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import mindspeed.megatron_adaptor as adaptor
        return adaptor

    def _namespace(self):
        """MindSpeed's process-wide argument namespace (what ``repatch`` writes into)."""
        if self.has_repatch:
            from mindspeed.args_utils import get_full_args

            return get_full_args()
        return getattr(self.adaptor, "_ARGS", None)

    def _track_features(self, base):
        """Record per feature whether the last patch pass applied it and how many patches it registered."""
        manager = self.patch_utils.MindSpeedPatchesManager
        original = manager.register_patch
        current = {"name": None}
        registered = self.registered

        def register_patch(orig_func_name, new_func=None, force_patch=False, create_dummy=False):
            if current["name"] is not None:
                registered.setdefault(current["name"], set()).add(orig_func_name)
            return original(orig_func_name, new_func, force_patch, create_dummy)

        manager.register_patch = staticmethod(register_patch)
        for feature in self.manager.FEATURES_LIST:
            for method in ("pre_register_patches", "register_patches"):
                bound = getattr(feature, method)

                def tracked(pm, args, _bound=bound, _name=feature.feature_name):
                    current["name"] = _name
                    try:
                        return _bound(pm, args)
                    finally:
                        current["name"] = None

                setattr(feature, method, tracked)
        self.patching_features = {
            f.feature_name for f in self.manager.FEATURES_LIST
            if type(f).register_patches is not base.register_patches
            or type(f).pre_register_patches is not base.pre_register_patches
        }

    def describe(self, stubbed):
        import megatron.core
        import megatron.training
        import mindspeed
        import torch

        return {
            "release": self.release,
            "has_repatch": self.has_repatch,
            "mindspeed": os.path.dirname(mindspeed.__file__),
            "megatron_training": list(megatron.training.__path__)[0] if hasattr(megatron.training, "__path__")
            else os.path.dirname(megatron.training.__file__),
            "megatron_core": os.path.dirname(megatron.core.__file__),
            "megatron_core_version": getattr(megatron.core, "__version__", "?"),
            "torch": torch.__version__,
            "stubbed": stubbed,
            "features": len(self.manager.FEATURES_LIST),
        }

    # -- per case
    def reset(self, remove: bool):
        if self.can_remove and (remove or self.patch_registry is not None):
            self.manager.remove_patches()  # the originals back (repatch would do it too, but keeps the entries)
            for name in set(self.patch_registry or ()) - self.pristine_patches:
                del self.patch_registry[name]
        if self.namespace is not None:
            vars(self.namespace).clear()
            vars(self.namespace).update(copy.deepcopy(self.pristine))
        self._destroy_parallel()
        self.log.seek(0)
        self.log.truncate()

    def _apply_defaults(self):
        """What importing ``mindspeed.megatron_adaptor`` did: one patch pass from the argparse defaults."""
        self._patch_pass(self.namespace)

    def _patch_pass(self, ns):
        self.registered.clear()
        self.applied = {f.feature_name: bool(f.is_need_apply(ns)) for f in self.manager.FEATURES_LIST}
        self.manager.apply_features_pre_patches(ns)
        self.manager.apply_features_patches(ns)

    def _repatch(self, args):
        """MindSpeed's own ``repatch(args)``; which features it applied is read from the namespace afterwards."""
        self.registered.clear()
        self.adaptor.repatch(args)
        self.applied = {f.feature_name: bool(f.is_need_apply(self.namespace)) for f in self.manager.FEATURES_LIST}

    def unregistered(self) -> dict[str, list[str]]:
        """Patches each feature would register for a config the run built, but the last patch pass did not.

        MindSpeed decides its patches at ``repatch`` time from the dict alone; the config built afterwards
        holds what the model bridge added (dispatcher, experts, fusion flags). A feature whose switch is on
        in the built config, yet whose patches are not all registered, is silently not (fully) applied.
        Asked of each feature with a recording patch manager, so nothing is applied.
        """
        missing: dict[str, set[str]] = {}
        for config in self.built:
            for feature in self.manager.FEATURES_LIST:
                name = feature.feature_name
                if name not in self.patching_features:
                    continue
                try:
                    if not feature.is_need_apply(config):
                        continue
                    names = dry_run(feature, config)
                except Exception:  # noqa: BLE001 - a feature that cannot even say: no evidence either way
                    continue
                gap = names - self.registered.get(name, set()) if self.applied.get(name) else names
                if gap:
                    missing.setdefault(name, set()).update(gap)
        return {k: sorted(v) for k, v in sorted(missing.items())}

    @staticmethod
    def _destroy_parallel():
        import torch.distributed as dist
        from megatron.core import parallel_state

        with contextlib.suppress(Exception):
            parallel_state.destroy_model_parallel()
        if dist.is_initialized():
            dist.destroy_process_group()

    @staticmethod
    def _drop_stub_group_options():
        """MindSpeed hands HCCL options (from the torch_npu stand-in, so a mock) to ``new_group``; the fake
        process group cannot take a mock. Group options tune communication and check nothing: drop them."""
        from unittest import mock

        import torch.distributed as dist

        if getattr(dist.new_group, "_oracle", False):
            return
        original = dist.new_group

        def new_group(*args, **kwargs):
            if isinstance(kwargs.get("pg_options"), mock.Base):
                kwargs["pg_options"] = None
            return original(*args, **kwargs)

        new_group._oracle = True
        dist.new_group = new_group

    def _parallel(self, sizes):
        import torch.distributed as dist
        from megatron.core import parallel_state
        from torch.testing._internal.distributed.fake_pg import FakeStore

        tp, pp, cp = sizes.get("tp") or 1, sizes.get("pp") or 1, sizes.get("cp") or 1
        ep, etp = sizes.get("ep") or 1, sizes.get("etp") or tp
        world = math.lcm(tp * pp * cp, etp * ep * pp)
        self._drop_stub_group_options()
        dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world)
        extra = {}
        if "create_gloo_process_groups" in inspect.signature(parallel_state.initialize_model_parallel).parameters:
            extra["create_gloo_process_groups"] = False  # gloo needs real peers; gloo groups check nothing
        parallel_state.initialize_model_parallel(
            **extra,
            tensor_model_parallel_size=tp,
            pipeline_model_parallel_size=pp,
            virtual_pipeline_model_parallel_size=sizes.get("vpp"),
            use_sharp=False,
            context_parallel_size=cp,
            expert_model_parallel_size=ep,
            expert_tensor_parallel_size=sizes.get("etp"),
            nccl_communicator_config_path=None,
        )

    def _build(self, cls_name, kwargs):
        from megatron.core.transformer import transformer_config

        cls = getattr(transformer_config, cls_name)
        kwargs = decode(kwargs)
        extra = sorted(k for k in kwargs if k not in inspect.signature(cls).parameters)
        if extra and not hasattr(cls.__init__, "__wrapped__"):
            # No MindSpeed __init__ wrapper takes the fields the config class lacks (releases before 2.2.0): build
            # what verl really builds, a subclass carrying them, as Megatron-Bridge's GPTModelProvider does
            # (seq_length, position_embedding_type...). verl's converter and mbridge never pass unknown keywords.
            import typing

            cls = dataclasses.make_dataclass(cls.__name__, [(k, typing.Any, dataclasses.field(default=None))
                                                            for k in extra], bases=(cls,))
        return cls(**kwargs)

    def _stages(self, config):
        """Layers per (pipeline rank, virtual chunk), from megatron's own ``get_num_layers_to_build``."""
        from megatron.core import parallel_state
        from megatron.core.transformer import transformer_block

        if not parallel_state.model_parallel_is_initialized():
            return []
        pp = parallel_state.get_pipeline_model_parallel_world_size()
        vpp = parallel_state.get_virtual_pipeline_model_parallel_world_size()
        out = []
        try:
            for rank in range(pp):
                parallel_state.set_pipeline_model_parallel_rank(rank)
                for chunk in range(vpp or 1):
                    if vpp is not None:
                        parallel_state.set_virtual_pipeline_model_parallel_rank(chunk)
                    out.append((rank, chunk, transformer_block.get_num_layers_to_build(config)))
        finally:
            parallel_state.set_pipeline_model_parallel_rank(0)
            if vpp is not None:
                parallel_state.set_virtual_pipeline_model_parallel_rank(0)
        return out

    def _recompute(self, config, layers: int):
        """megatron's (or MindSpeed's patched) ``_checkpointed_forward`` over ``layers`` identity layers."""
        import torch
        from megatron.core.transformer.transformer_block import TransformerBlock

        class Identity(torch.nn.Module):
            def forward(self, hidden_states=None, context=None, **kwargs):
                return hidden_states, context

        block = TransformerBlock.__new__(TransformerBlock)
        torch.nn.Module.__init__(block)
        block.config = config
        block.layers = torch.nn.ModuleList([Identity() for _ in range(layers)])
        block.num_layers_per_pipeline_rank = layers
        params = inspect.signature(block._checkpointed_forward).parameters
        kwargs = {name: None for name in params}
        kwargs["hidden_states"] = torch.zeros(2, 1, 4, requires_grad=True)
        for name in list(kwargs):
            if params[name].kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                kwargs.pop(name)
            elif params[name].default is not inspect.Parameter.empty and name != "hidden_states":
                kwargs.pop(name)
        # The checkpoint saves the device RNG state: on CPU that is the CPU generator's (an NPU's own on a
        # cluster). Which state is saved decides nothing about the configuration; the loop over layers does.
        from unittest import mock

        with mock.patch("torch.cuda.random.get_rng_state", lambda *a, **k: torch.get_rng_state()), \
                mock.patch("torch.cuda.get_rng_state", lambda *a, **k: torch.get_rng_state()):
            block._checkpointed_forward(**kwargs)

    def run(self, case):
        steps = case["steps"]
        repatches = self.has_repatch and any(s["op"] == "repatch" for s in steps)
        self.reset(remove=not repatches)
        self.built = []
        attrs: list = []
        stages = []
        try:
            if not repatches and self.can_remove:
                self._run_stage("import", None, self._apply_defaults)
            for step in steps:
                op, role = step["op"], step.get("role")
                if op == "repatch":
                    if not self.has_repatch:
                        continue  # verl's ImportError fallback: the dict never reaches MindSpeed
                    self._run_stage("repatch", role, self._repatch, step["args"])
                elif op == "parallel":
                    self._run_stage("parallel", role, self._parallel, step["sizes"])
                elif op == "build":
                    config = self._run_stage("build", role, self._build, step["cls"], step["kwargs"])
                    self.built.append(config)
                    if step.get("probe"):
                        attrs.append({"role": role, **{k: _plain(getattr(config, k, "<absent>"))
                                                       for k in step["probe"]}})
                    if step.get("layers", True):
                        found = self._run_stage("layers", role, self._stages, config)
                        stages.append({"role": role, "layers": [n for _, _, n in found]})
                        if (getattr(config, "recompute_granularity", None) == "full"
                                and getattr(config, "recompute_method", None) is not None):
                            for count in sorted({n for _, _, n in found} or {config.num_layers}):
                                self._run_stage("recompute", role, self._recompute, config, count)
        except StageError as err:
            return self._verdict("error", stage=err.stage, role=err.role, exc=err.exc, stages=stages, attrs=attrs)
        missing = self.unregistered()
        switches = set(case.get("switches", ()))
        unapplied = {k: v for k, v in missing.items() if k in switches or FEATURE_SWITCHES.get(k, set()) & switches}
        verdict = "warning" if unapplied else "ok"
        return self._verdict(verdict, unapplied=unapplied, bridge_unapplied={
            k: v for k, v in missing.items() if k not in unapplied}, stages=stages, attrs=attrs)

    def _run_stage(self, stage, role, fn, *args):
        try:
            with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return fn(*args)
        except Exception as exc:  # noqa: BLE001 - every upstream exception is a verdict
            raise StageError(stage, exc, role) from exc

    def _verdict(self, verdict, *, stage=None, role=None, exc=None, unapplied=None, bridge_unapplied=None,
                 stages=(), attrs=()):
        out = {"verdict": verdict, "stages": list(stages)}
        if attrs:
            out["attrs"] = list(attrs)
        if exc is not None:
            out.update(stage=stage, role=role, exc_type=type(exc).__name__, message=first_line(exc),
                       where=where_raised(exc))
        if unapplied:
            out["unapplied"] = unapplied
        if bridge_unapplied:
            out["bridge_unapplied"] = bridge_unapplied
        logged = [ln for ln in self.log.getvalue().splitlines() if ln.startswith("mindspeed")]
        if logged:
            out["mindspeed_warnings"] = sorted(set(logged))[:20]
        return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mindspeed", required=True)
    parser.add_argument("--megatron", required=True)
    parser.add_argument("--release", required=True)
    parser.add_argument("--full-scan", action="store_true", help="let MindSpeed's patch scan walk all modules")
    opts = parser.parse_args(argv)
    # TorchScript off: megatron-core 0.12.1 scripts modules at import that torch 2.13's compiler rejects
    # (MindSpeed >= 2.2.0 turns scripting off itself; 2.1.0 imports megatron.training before it does).
    # Compilation decides nothing about a configuration.
    os.environ.setdefault("PYTORCH_JIT", "0")
    out = sys.stdout
    sys.stdout = sys.stderr  # anything upstream prints must not corrupt the protocol
    # The stand-ins are this file's sibling, loaded by path: this process never imports verl_mindspeed.
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "_oracle_stubs", os.path.join(os.path.dirname(os.path.abspath(__file__)), "_oracle_stubs.py"))
    stubs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stubs)
    sys.path.insert(0, opts.megatron)
    sys.path.insert(0, opts.mindspeed)
    stubbed = stubs.install()
    start = time.monotonic()
    oracle = Oracle(opts.release, opts.full_scan)
    info = oracle.describe(stubbed)
    info["import_seconds"] = round(time.monotonic() - start, 2)
    out.write(json.dumps({"ready": info}) + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        case = json.loads(line)
        start = time.monotonic()
        try:
            result = oracle.run(case)
        except Exception as exc:  # noqa: BLE001 - a harness failure, reported as such
            result = {"verdict": "harness-error", "exc_type": type(exc).__name__, "message": first_line(exc),
                      "trace": traceback.format_exc()[-2000:]}
        result["id"] = case.get("id")
        result["seconds"] = round(time.monotonic() - start, 3)
        out.write(json.dumps(result) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
