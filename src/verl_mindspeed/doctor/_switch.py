"""A check that runs only under a feature's switch (``if args.use_fused_rmsnorm: if args.normalization != "RMSNorm":
raise``), where no other rule gave a line: the switch turned off skips it.

- Which switch: one the message names (``--use-fused-swiglu must enable with --swiglu``); or, where the condition
  reads launch keys, the one switch the check sits under (``if self.moe_extended_tp:``; under ``ckpt_format ==
  'torch_dist' and ... and use_distributed_optimizer`` it is one reason among many). Where the condition reads no
  launch key, only one the message names: a check of buffers or versions under a switch is upstream's.
- Never a switch turned on, an integer (its off value may be 0 or unset; nor so a size of the layout: ``if
  pipeline_model_parallel_size > 1: if pipeline_dtype is None``: verl sets the dtype, the pipeline is no fault), the
  architecture's own switch (``is_hybrid_model``), one verl's build sets from the model (``gated_linear_unit``)
  unless the launch writes it, nor against the message's own advice (an environment variable to set,
  ``cuda_graph_impl='full_iteration'``).
- An option with no default the check sits under (``if args.context_parallel_kv_cache_policy:``), which the message
  names and the launch writes, is deleted: unset, the check does not run (``check`` must find nothing new on its key
  without it).
- Every line is ``check``'s to accept: pasted into the launch, or into verl's Megatron defaults where none is given,
  it raises no error and no new warning on its key (``use_flash_attn=False``: MindSpeed's attention mask then needs
  a micro batch size verl never sets).
"""

from __future__ import annotations

import re
from typing import Optional

from ..i18n import Msg, tr
from ._blame import MODEL_FIELDS, Cause, Verdict
from ._fix import switched_off, unset_off
from ._replay import Replay, neutral, pasted, replay, without
from ._settings import keys_of, line, movable, unique, writable, written_keys
from ._sites import Match

#: The message's own advice: an environment variable to set, or a setting it tells the user to give a value (``Use
#: cuda_graph_impl='full_iteration'``; not a requirement it states: ``requires fp8_recipe='mxfp8'``).
_ADVICE = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]{2,}\b|\b(?:[Uu]se|[Ss]et)\s+-*[a-z]\w*_[\w-]+\s*=")


def switched(site: Match, what: Msg, launch: Optional[Replay], options: dict, others: Optional[list[Cause]] = None,
             fields: tuple[str, ...] = (), message: Optional[str] = None) -> Optional[Verdict]:
    """The verdict that turns the switch off, before ``others`` (the settings the condition reads, named without a
    line); None where no switch qualifies. ``message``: the log's, where the condition reads no launch key."""
    template = site.site.template()
    if (site.site.package == "verl" and launch is None) or _ADVICE.search(message or template):
        return None
    found = [leaf for leaf in switched_off(site)
             if writable(leaf) and leaf not in MODEL_FIELDS
             and movable(leaf, launch)
             and (_spelled(leaf) in _spelled(message or template)
                  or (message is None and _alone(site.site.enclosing, leaf)))]
    stack = dict(options)  # judged on the stack the check raised in: the megatron-core line that has it
    if site.site.package == "megatron-core" and not stack.get("megatron_core"):
        stack["megatron_core"] = site.releases[-1]
    causes = [Cause(k, fix) for leaf in found for k in keys_of(site, leaf, launch, options, site.site.enclosing_chains)
              for fix in [line(k, False)] if accepted(fix, k, launch, stack)]
    unset = [leaf for leaf in unset_off(site) if launch is not None and _spelled(leaf) in _spelled(message or template)]
    causes += [Cause(k, delete=True) for leaf in unset for k in written_keys(launch, leaf)
               if _dropped(k, launch, stack)]
    found += [leaf for leaf in unset if any(c.key.rsplit(".", 1)[-1] == leaf for c in causes)]
    if not causes:
        return None
    what = tr("{what} (a check that runs only under {switches})", what=what, switches=", ".join(found))
    return Verdict("override", what, unique(causes + list(others or ())), (*fields, *found), "possible")


def accepted(fix: str, key: str, launch: Optional[Replay], stack: Optional[dict] = None) -> bool:
    """``check`` finds nothing wrong with ``key`` once the line is pasted into the launch (or into verl's Megatron
    defaults), on ``stack`` (``check``'s options: the releases that ran): no error, and no warning the launch did
    not already have there (``bias_activation_fusion=False``
    beside ``use_fused_swiglu=True`` is a new mismatch, not a way out)."""
    return _nothing_new(pasted(launch.argv if launch is not None else neutral(), fix), key, launch, stack)


def _dropped(key: str, launch: Replay, stack: Optional[dict] = None) -> bool:
    """:func:`accepted` for deleting the launch's argument for ``key`` (an option the check runs under, unset)."""
    argv = without(launch.argv, key)
    return len(argv) < len(launch.argv) and _nothing_new(argv, key, launch, stack)


def _nothing_new(argv: list[str], key: str, launch: Optional[Replay], stack: Optional[dict]) -> bool:
    """``check`` on ``argv`` (the launch changed, on its entry) finds no error on ``key``, nor a warning there the
    launch did not already have."""
    after = replay(argv, entry=launch.entry if launch is not None else None, **(stack or {}))
    before = {str(i.message) for i in launch.issues if i.key == key} if launch is not None else set()
    return after is not None and not [i for i in after.issues if i.key == key and (
        i.severity == "error" or (i.severity == "warning" and str(i.message) not in before))]


def _alone(enclosing: Optional[str], leaf: str) -> bool:
    """The check sits under that one switch and nothing else (``self.moe_extended_tp``, ``x.y is True``)."""
    plain = (enclosing or "").removesuffix(" is True")
    return plain.rsplit(".", 1)[-1] == leaf and plain.replace(".", "").replace("_", "").isalnum()


def _spelled(text: str) -> str:
    """``--use-fused-rmsnorm``, ``use_fused_rmsnorm`` and ``Use Fused RMSNorm`` alike."""
    return "".join(ch for ch in text.lower() if ch.isalnum())


__all__ = ["accepted", "switched"]
