"""A device out of memory, with the launch given: what ``check``'s memory model estimates for it, and the planner's
command for this launch.

Running out of memory is no launch key's fault (no cause is named), but the launch decides how much memory it needs:
``check``'s ``model-memory`` finding on the replayed launch (its estimated peak per device, against the device) is
said, and ``verl-mindspeed plan --args-file`` on the same launch lists the layouts that fit, as lines for it. Without
the model (``--model-config``, or a model path on this machine) the estimate cannot be made, and the text says so.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from ..i18n import tr
from ._blame import _MEMORY, Verdict
from ._log import Raised
from ._replay import Replay


def with_estimate(verdict: Verdict, raised: Raised, launch: Optional[Replay], path: Optional[str]) -> Verdict:
    """The memory verdict with ``check``'s estimate for the launch and the planner's command; any other unchanged."""
    if verdict.kind != "resource" or launch is None or not _MEMORY.search(raised.message[:2000]):
        return verdict
    plan = f"verl-mindspeed plan --args-file {path or 'LAUNCH'}"
    found = next((i for i in launch.issues if i.rule == "model-memory"), None)
    if found is None:
        return replace(verdict, what=tr(
            "{what}; check could not estimate this launch's memory (give the model's config.json: --model-config); "
            "{plan} lists the layouts that fit", what=verdict.what, plan=plan))
    return replace(verdict, what=tr(
        "{what}; check's estimate for this launch: {estimate}; {plan} lists the layouts that fit, as lines for it",
        what=verdict.what, estimate=found.message, plan=plan))


__all__ = ["with_estimate"]
