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
  the launch's device count (``sizes["world"]``), or else the smallest the sizes allow;
- ``{"op": "build", "cls": "TransformerConfig", "kwargs": {...}, "role": "actor"}``: the config class, as
  patched by MindSpeed, built from the model bridge's kwargs; then megatron's layer assignment
  (``get_num_layers_to_build`` for every pipeline rank and virtual chunk) and, with full recompute, the
  recompute forward (``TransformerBlock._checkpointed_forward`` over identity layers) for each stage;
  ``"probe": [names]`` returns those attributes of the built config; ``"forward": false`` leaves the role out of
  the first-forward step below.

After every step, each built role's first forward as far as MindSpeed's generate-mask wrapper of the attention
goes (``_oracle_harness.first_forward``): verl passes no attention mask, so MindSpeed makes one from the config.

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
import dataclasses
import inspect
import io
import json
import math
import os
import sys
import time
import traceback
import warnings

try:  # imported as part of the verl_mindspeed package (the project's own process only imports it)
    from . import _oracle_harness as harness
    from ._oracle_patches import MindSpeedState
except ImportError:  # run as a script in the oracle's Python, or loaded by path: the siblings by name
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _oracle_harness as harness
    from _oracle_patches import MindSpeedState

FEATURE_SWITCHES, FilteredSys, StageError = harness.FEATURE_SWITCHES, harness.FilteredSys, harness.StageError
decode, drop_stub_group_options, first_line = harness.decode, harness.drop_stub_group_options, harness.first_line
plain, upstream_warnings, where_raised = harness.plain, harness.upstream_warnings, harness.where_raised
traceback_text = harness.traceback_text

__all__ = ["FilteredSys", "Oracle", "main"]


class Oracle(MindSpeedState):
    """One MindSpeed release on real megatron-core: a case's steps run in order, one verdict per case."""

    def _parallel(self, sizes):
        import torch.distributed as dist
        from megatron.core import parallel_state
        from torch.testing._internal.distributed.fake_pg import FakeStore

        tp, pp, cp = sizes.get("tp") or 1, sizes.get("pp") or 1, sizes.get("cp") or 1
        ep, etp = sizes.get("ep") or 1, sizes.get("etp") or tp
        world = sizes.get("world") or math.lcm(tp * pp * cp, etp * ep * pp)
        drop_stub_group_options()
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
        forwards = []  # (role, config) of every role built: each runs a forward once training starts
        self.warned: set[str] = set()
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
                    if step.get("forward", True):
                        forwards.append((role, config))
                    if step.get("probe"):
                        attrs.append({"role": role, **{k: plain(getattr(config, k, "<absent>"))
                                                       for k in step["probe"]}})
                    if step.get("layers", True):
                        found = self._run_stage("layers", role, self._stages, config)
                        stages.append({"role": role, "layers": [n for _, _, n in found]})
                        if (getattr(config, "recompute_granularity", None) == "full"
                                and getattr(config, "recompute_method", None) is not None):
                            for count in sorted({n for _, _, n in found} or {config.num_layers}):
                                self._run_stage("recompute", role, self._recompute, config, count)
            for role, config in forwards:  # after every build: the forward runs with the last repatch's patches
                self._run_stage("forward", role, harness.first_forward, config)
        except StageError as err:
            return self._verdict("error", stage=err.stage, role=err.role, exc=err.exc, stages=stages, attrs=attrs)
        missing = self.unregistered()
        switches = set(case.get("switches", ()))
        unapplied = {k: v for k, v in missing.items() if k in switches or FEATURE_SWITCHES.get(k, set()) & switches}
        verdict = "warning" if unapplied else "ok"
        return self._verdict(verdict, unapplied=unapplied, bridge_unapplied={
            k: v for k, v in missing.items() if k not in unapplied}, stages=stages, attrs=attrs)

    def _run_stage(self, stage, role, fn, *args):
        """``fn`` with upstream's output swallowed; the warnings megatron's and MindSpeed's own code issue (what a
        user's log shows) are kept as ``file:line: text``."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    return fn(*args)
            except Exception as exc:  # noqa: BLE001 - every upstream exception is a verdict
                raise StageError(stage, exc, role) from exc
            finally:
                self.warned.update(upstream_warnings(caught))

    def _verdict(self, verdict, *, stage=None, role=None, exc=None, unapplied=None, bridge_unapplied=None,
                 stages=(), attrs=()):
        out = {"verdict": verdict, "stages": list(stages)}
        if attrs:
            out["attrs"] = list(attrs)
        if exc is not None:
            out.update(stage=stage, role=role, exc_type=type(exc).__name__, message=first_line(exc),
                       where=where_raised(exc), traceback=traceback_text(exc))
        if self.warned:
            out["upstream_warnings"] = sorted(self.warned)[:20]
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
