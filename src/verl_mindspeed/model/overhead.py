"""Memory a device uses beyond the tensors the model's arithmetic predicts.

Four terms (see ``docs/model-checks.md``, "What is not tensors"):

- **runtime**: the device context and the libraries' workspaces, allocated outside the
  caching allocator (CANN/torch_npu on Ascend, the CUDA context and cuBLAS on a GPU);
- **communication buffers**: every communicator a rank uses holds its own buffers
  (HCCL: ``HCCL_BUFFSIZE``, 200 MB by default, for input and output);
- **allocator slack** (``fragmentation``): what the caching allocator holds beyond the live
  tensors, ``slack_static x long-lived bytes + slack_dynamic x short-lived bytes``; freed
  activation and logits blocks that the next request does not fit make most of it;
- **optimizer-step temporaries**: fused Adam keeps no per-parameter temporaries;
  gradient norm and parameter all-gather work one DDP bucket (40M parameters) at a time.

The constants are calibrated against published measured peaks (``benchmarks/data/measured_peaks.json``,
``benchmarks/calibrate_memory.py``); the NPU runtime figure is an assumption, not a measurement.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEVICES", "DeviceProfile", "communicators", "nontensor_bytes"]

MIB = 1024**2
GIB = 1024**3
DDP_BUCKET_PARAMS = 40_000_000
"""megatron-core ``DistributedDataParallelConfig.bucket_size`` default when none is given."""


SLACK_STATIC = 0.11
SLACK_DYNAMIC = 0.26
"""Fitted to three device-level points of ``benchmarks/data/measured_peaks.json`` (``FIT_POINTS`` of
``benchmarks/calibrate_memory.py``, rounded figures): rough constants, not a law. ``SLACK_DYNAMIC`` was 0.75
while those points' logits were counted at 6 bytes per entry; their runs use megatron's fused cross entropy,
which peaks at 10 (:func:`.activations.logits_bytes`), and the old value had absorbed the difference
(0.75 x 6 = 4.5). Refitted with the term corrected (``calibrate_memory.py --fit-slack``, ``SLACK_STATIC`` held)."""


@dataclass(frozen=True)
class DeviceProfile:
    name: str
    runtime_gib: float
    """Context and workspaces outside the allocator."""
    buffer_mib_per_communicator: float
    """Communication buffers of one communicator in use."""
    slack_static: float
    """Allocator slack per byte of long-lived tensors (weights, gradients, optimizer states)."""
    slack_dynamic: float
    """Allocator slack per byte of short-lived tensors (activations, logits, buffers)."""


DEVICES = {
    # Ascend: HCCL_BUFFSIZE=200 MB for input and output per communicator (CANN's default).
    # The NPU runtime figure is an assumption; the slack constants are fitted on GPU measurements
    # (benchmarks/calibrate_memory.py) and used for both: torch_npu ports torch's caching allocator.
    "npu": DeviceProfile("npu", runtime_gib=2.0, buffer_mib_per_communicator=400.0, slack_static=SLACK_STATIC,
                         slack_dynamic=SLACK_DYNAMIC),
    # GPU: the CUDA context and cuBLAS workspace; NCCL's per-channel buffers, a few channels per communicator.
    "gpu": DeviceProfile("gpu", runtime_gib=0.75, buffer_mib_per_communicator=64.0, slack_static=SLACK_STATIC,
                         slack_dynamic=SLACK_DYNAMIC),
}


def communicators(*, tp: int, pp: int, cp: int, dp: int, ep: int, etp: int, expert_dp: int, moe: bool) -> int:
    """Communicators one rank uses in a step: its parallel groups of size > 1, plus world and weight sync."""
    sizes = [tp, pp, cp, dp * cp]
    if moe:
        sizes += [ep, etp, expert_dp]
    return 2 + sum(1 for s in sizes if s > 1)


def nontensor_bytes(profile: DeviceProfile, *, groups: int, static: float, dynamic: float,
                    hccl_buffsize_mib: float | None = None) -> dict[str, float]:
    """(runtime, comm_buffers, fragmentation) bytes for a rank with ``groups`` communicators."""
    per_group = profile.buffer_mib_per_communicator if hccl_buffsize_mib is None else 2 * hccl_buffsize_mib
    return {
        "runtime": profile.runtime_gib * GIB,
        "comm_buffers": groups * per_group * MIB,
        "fragmentation": profile.slack_static * static + profile.slack_dynamic * dynamic,
    }


def optimizer_step_bytes(shard_params: float) -> float:
    """Temporaries of the optimizer step: two fp32 buffers of one DDP bucket at most."""
    return 2 * 4 * min(shard_params, DDP_BUCKET_PARAMS)
