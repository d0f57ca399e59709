"""Failures verl's own FAQ answers, where the message names no setting.

- Ray's ``Unable to register worker with raylet``: ``ray.init()`` starts a worker process per CPU core it counts,
  and a scheduler that limits the cores a job may use (Slurm's) keeps some of them from the raylet. verl's FAQ: set
  ``ray_kwargs.ray_init.num_cpus`` (``ray_init.num_cpus`` up to verl 0.5) to what the system allows. No line: the
  number is the node's (``nproc`` prints the cores this process may use).
- Triton's just-in-time build failing (``CalledProcessError`` from ``triton/runtime/build.py``, its
  ``compile_module_from_src``): the C compiler, or the headers it builds against, are the environment's. verl's FAQ
  turns the compiled entropy off with ``use_torch_compile=False``, a key only verl's FSDP engines read (0.9.1's
  ``FSDPEngineConfig``); its Megatron engine compiles the entropy regardless (``_VocabParallelEntropy`` under
  ``torch.compile``), so on a Megatron launch no key is at fault and none is named.
- A gated model on the Hugging Face Hub (``You are trying to access a gated repo``, ``Access to model ... is
  restricted``): the workers download it without a token that has access. ``HF_TOKEN`` is named, with no line (the
  token is the user's); a local copy at ``actor_rollout_ref.model.path`` needs none.
- vllm-ascend's sleep mode without its allocator (``camem allocator is not available``): vllm-ascend was built
  without its custom operators; its developers' answer is to build it again with ``COMPILE_CUSTOM_KERNELS=1``. No
  line: the variable is read when vllm-ascend is installed, not when verl runs.
"""

from __future__ import annotations

import re
from typing import Optional

from ..i18n import Msg, tr
from ._blame import Cause, Verdict
from ._log import Raised
from ._verl import releases_with

_RAYLET = re.compile(r"Unable to register worker with raylet")
#: Where verl keeps the CPUs Ray may use, the current path first (``ray_init`` moved under ``ray_kwargs`` in 0.6).
_NUM_CPUS = ("ray_kwargs.ray_init.num_cpus", "ray_init.num_cpus")


_GATED = re.compile(r"trying to access a gated repo|Cannot access gated repo|Access to model \S+ is restricted")
_CAMEM = re.compile(r"camem allocator is not available")


def faq_answer(raised: Raised, what: Msg, verl_version: Optional[str] = None) -> Optional[Verdict]:
    if _GATED.search(raised.message):
        return Verdict("env", tr(
            "{what}: the model is gated on the Hugging Face Hub and the process downloading it has no token with "
            "access: request access on the model's page, then export HF_TOKEN where the workers start (or point "
            "actor_rollout_ref.model.path at a local copy)", what=what), [Cause("HF_TOKEN")], ("HF_TOKEN",), "likely")
    if _CAMEM.search(raised.message):
        return Verdict("env", tr(
            "{what}: vllm-ascend was built without its custom operators, so the rollout's sleep mode has no "
            "allocator; build vllm-ascend again with COMPILE_CUSTOM_KERNELS=1 set at install time",
            what=what), [Cause("COMPILE_CUSTOM_KERNELS")], ("COMPILE_CUSTOM_KERNELS",), "likely")
    if _RAYLET.search(raised.message):
        key = next((k for k in _NUM_CPUS if verl_version in releases_with(k)), _NUM_CPUS[0])
        return Verdict("override", tr(
            "{what}: Ray starts a worker per CPU core it counts, and the scheduler lets this job use fewer; verl's FAQ "
            "sets {key} to the cores the system allows (nproc prints them on the node)", what=what, key=key),
            [Cause(key)], ("num_cpus",), "possible")
    if "CalledProcessError" not in f"{raised.type} {raised.first_line} {raised.code}":
        return None
    frames = " ".join(f"{path}:{function}" for path, _line, function in raised.frames)
    # triton's build: the environment's, no launch key (see the module's docstring)
    if "/triton/" in frames and ("compile_module_from_src" in frames or "runtime/build.py" in frames):
        return Verdict("env", tr(
            "{what}: triton's just-in-time build of a kernel failed: the C compiler, or the CUDA or CANN headers it "
            "builds against, are the environment's. verl's FAQ turns the compiled entropy off with "
            "use_torch_compile=False on its FSDP engines; verl's Megatron engine compiles it whatever that key says",
            what=what),
            [], ("use_torch_compile",), "possible")
    return None
