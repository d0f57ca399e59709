"""Ascend NPUs under Ray: which NPUs a worker sees is the environment's, never a launch key's.

- A tensor on ``npu:0`` where the worker computes on another NPU (``Expects tensor to be on the compute device
  npu:15, was on npu:0``; ``Expected all tensors to be on the same device, but found at least two devices, npu:0
  and npu:3``): Ray narrows ``ASCEND_RT_VISIBLE_DEVICES`` to each worker's NPU unless
  ``RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES`` is set; then every worker sees every NPU, and code that does
  not pick its device by local rank (verl's workers do, a recipe's code may not) puts tensors on ``npu:0``.
- ``torch_npu detected, but NPU device is not available or visible`` (verl's Ascend FAQ): the process sees no NPU.
  ``ASCEND_RT_VISIBLE_DEVICES`` lists the cards (one per device of ``trainer.n_gpus_per_node`` when the launch sets
  it); ``npu-smi info`` shows whether the driver sees them.
"""

from __future__ import annotations

import re
from typing import Optional

from ..i18n import Msg, tr
from ._blame import Cause, Verdict
from ._log import Raised
from ._replay import Replay, launch_value
from ._solve import int_of

NOSET = "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES"
VISIBLE = "ASCEND_RT_VISIBLE_DEVICES"
_NPU = re.compile(r"\bnpu:(\d{1,4})\b")
#: The most NPUs a node holds that a line lists (a count past it is not a node's).
_MOST_CARDS = 64
_INVISIBLE = re.compile(r"NPU device is not available or visible|npu\.is_available\(\)\s*(?:returns?|is|==)\s*False")


def npu_devices(raised: Raised, what: Msg, launch: Optional[Replay]) -> Optional[Verdict]:
    ids = set(_NPU.findall(raised.message))
    if "0" in ids and len(ids) > 1 and "device" in raised.message.lower():
        other = min(ids - {"0"}, key=int)
        return Verdict("env", tr(
            "{what}: a tensor on npu:0 met one on the worker's own npu:{other}. Where {noset} is set, Ray leaves every "
            "NPU visible to every worker, and code that does not choose its device by local rank puts tensors on "
            "npu:0: unset it before Ray starts. Where it is not set, a tensor was made or loaded on npu:0 (a "
            "checkpoint loaded without map_location)", what=what, other=other, noset=NOSET),
            [Cause(NOSET, f"unset {NOSET}")], certainty="possible")
    if _INVISIBLE.search(raised.message):
        count = int_of(launch_value(launch, "trainer.n_gpus_per_node"))
        fix = f"export {VISIBLE}={','.join(map(str, range(count)))}" if count and 0 < count <= _MOST_CARDS else None
        return Verdict("env", tr(
            "{what}: this process sees no NPU. {visible} lists the cards it may use (npu-smi info shows the ones the "
            "driver sees), exported before Ray starts", what=what, visible=VISIBLE),
            [Cause(VISIBLE, fix)], certainty="possible")
    return None
