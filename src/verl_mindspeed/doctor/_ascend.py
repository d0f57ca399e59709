"""Ascend NPUs under Ray: which NPUs a worker sees is the environment's, never a launch key's.

- A tensor on ``npu:0`` where the worker computes on another NPU (``Expects tensor to be on the compute device
  npu:15, was on npu:0``; ``Expected all tensors to be on the same device, but found at least two devices, npu:0
  and npu:3``): Ray narrows ``ASCEND_RT_VISIBLE_DEVICES`` to each worker's NPU unless
  ``RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES`` is set; then every worker sees every NPU, and code that does
  not pick its device by local rank (verl's workers do, a recipe's code may not) puts tensors on ``npu:0``.
- CANN's ``Set visible device failed, invalid device=1, input visible devices:1`` (vllm-ascend#167): the process
  opens an NPU by its rank, past the ones it sees, because Ray narrowed them to the worker's own; vllm-ascend's
  maintainers set ``RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES=1`` before Ray starts.
- ``torch_npu detected, but NPU device is not available or visible`` (verl's Ascend FAQ): the process sees no NPU.
  ``ASCEND_RT_VISIBLE_DEVICES`` lists the cards (one per device of ``trainer.n_gpus_per_node`` when the launch sets
  it); ``npu-smi info`` shows whether the driver sees them.
- vllm-ascend's MLA attention in graph mode (``numHeads / numKvHeads = 8, MLA only support {32, 64, 128}``, CANN's
  ``CheckMlaAttrs``): after the rollout's tensor parallel split each rank holds that many query heads per KV head,
  and the fused kernel takes 32, 64 or 128 (vllm-ascend's FAQ, for DeepSeek-V3 and R1). The rollout's
  ``tensor_model_parallel_size`` is the key: with the launch, the model's heads are the rank's times that size, and
  the line gives the size that leaves 32, 64 or 128 per rank nearest the launch's. Where no size does (16 heads in
  all, DeepSeek-V2-Lite), graph mode is off with ``enforce_eager=True``.
"""

from __future__ import annotations

import re
from typing import Optional

from ..i18n import Msg, tr
from ._blame import Cause, Verdict
from ._log import Raised
from ._replay import Replay, launch_value
from ._solve import int_of
from ._verl import default

NOSET = "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES"
VISIBLE = "ASCEND_RT_VISIBLE_DEVICES"
_NPU = re.compile(r"\bnpu:(\d{1,4})\b")
#: The most NPUs a node holds that a line lists (a count past it is not a node's).
_MOST_CARDS = 64
_MLA_HEADS = re.compile(r"numHeads\s*/\s*numKvHeads\s*=\s*(\d{1,6}),\s*MLA only support")
#: The query heads per KV head on a rank that vllm-ascend's MLA kernel takes in graph mode.
_MLA_PER_RANK = (32, 64, 128)
ROLLOUT_TP = "actor_rollout_ref.rollout.tensor_model_parallel_size"
EAGER = "actor_rollout_ref.rollout.enforce_eager"
#: CANN refusing a device the process does not see (vllm-ascend#167): ``Set visible device failed, invalid
#: device=1, input visible devices:1``.
_NARROWED = re.compile(r"invalid device=(?P<device>\d{1,4}), input visible devices:\s*"
                       r"(?P<visible>\d{1,4}(?:,\d{1,4})*)")
_INVISIBLE = re.compile(r"NPU device is not available or visible|npu\.is_available\(\)\s*(?:returns?|is|==)\s*False")


def npu_devices(raised: Raised, what: Msg, launch: Optional[Replay]) -> Optional[Verdict]:
    return _devices(raised, what, launch) or _mla_heads(raised, what, launch)


def _mla_heads(raised: Raised, what: Msg, launch: Optional[Replay]) -> Optional[Verdict]:
    hit = _MLA_HEADS.search(raised.message[:4000])
    if hit is None:
        return None
    per_rank = int(hit.group(1))
    return Verdict("override", tr(
        "{what}: after the rollout's tensor parallel split each rank holds {n} query heads per KV head, and "
        "vllm-ascend's MLA kernel in graph mode takes 32, 64 or 128: the rollout's tensor_model_parallel_size "
        "decides it (a model with too few heads for any size runs the rollout eager: enforce_eager=True)",
        what=what, n=per_rank), [_mla_cause(per_rank, launch)], ("tensor_model_parallel_size", "enforce_eager"),
        "likely")


def _mla_cause(per_rank: int, launch: Optional[Replay]) -> Cause:
    """The rollout's size, with the one nearest the launch's that leaves 32, 64 or 128 heads per rank and divides the
    devices; eager mode where no size leaves them; no line without the launch, or where a value cannot be read."""
    size, world = _launch_int(launch, ROLLOUT_TP), _launch_int(launch, "trainer.nnodes")
    world = world * (_launch_int(launch, "trainer.n_gpus_per_node") or 0) if world else None
    if per_rank <= 0 or not size or not world or not 0 < size <= _MOST_CARDS * 1024:
        return Cause(ROLLOUT_TP)
    heads = per_rank * size
    sizes = [heads // q for q in _MLA_PER_RANK if heads % q == 0]
    if not sizes:
        return Cause(EAGER, f"{EAGER}=True")
    fitting = [s for s in sizes if world % s == 0]
    return Cause(ROLLOUT_TP, f"{ROLLOUT_TP}={min(fitting, key=lambda s: (abs(s - size), -s))}" if fitting else None)


def _launch_int(launch: Optional[Replay], key: str) -> Optional[int]:
    """The launch's integer for ``key``, verl's default where the launch does not write it; None without a launch or
    where what it writes is no integer (an interpolation, ``2.0``)."""
    if launch is None:
        return None
    written = launch_value(launch, key)
    value = int_of(written if written is not None else default(key))
    return value if value is not None and value > 0 else None


def _devices(raised: Raised, what: Msg, launch: Optional[Replay]) -> Optional[Verdict]:
    ids = set(_NPU.findall(raised.message))
    if "0" in ids and len(ids) > 1 and "device" in raised.message.lower():
        other = min(ids - {"0"}, key=int)
        return Verdict("env", tr(
            "{what}: a tensor on npu:0 met one on the worker's own npu:{other}. Where {noset} is set, Ray leaves every "
            "NPU visible to every worker, and code that does not choose its device by local rank puts tensors on "
            "npu:0: unset it before Ray starts. Where it is not set, a tensor was made or loaded on npu:0 (a "
            "checkpoint loaded without map_location)", what=what, other=other, noset=NOSET),
            [Cause(NOSET, f"unset {NOSET}")], certainty="possible")
    narrowed = _NARROWED.search(raised.message[:4000])
    if narrowed and int(narrowed.group("device")) >= len(narrowed.group("visible").split(",")):
        return Verdict("env", tr(
            "{what}: the process opens NPU {device} where {variable} lists {visible} only: Ray narrowed the visible "
            "NPUs to the worker's own, and the code picks its NPU by rank. vllm-ascend's answer: set {noset}=1 before "
            "Ray starts on every node, so each worker sees every NPU", what=what, device=narrowed.group("device"),
            visible=narrowed.group("visible"), variable=VISIBLE, noset=NOSET),
            [Cause(NOSET, f"export {NOSET}=1")], certainty="possible")
    if _INVISIBLE.search(raised.message):
        count = int_of(launch_value(launch, "trainer.n_gpus_per_node"))
        fix = f"export {VISIBLE}={','.join(map(str, range(count)))}" if count and 0 < count <= _MOST_CARDS else None
        return Verdict("env", tr(
            "{what}: this process sees no NPU. {visible} lists the cards it may use (npu-smi info shows the ones the "
            "driver sees), exported before Ray starts", what=what, visible=VISIBLE),
            [Cause(VISIBLE, fix)], certainty="possible")
    return None
