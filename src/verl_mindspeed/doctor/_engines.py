"""What verl's rollout refuses, from the message alone: a prompt longer than the engine's model length, a rollout
verl has no class for.

- vLLM's ``Prompt length of 4178 is longer than the maximum model length of 4096`` (``The decoder prompt (length
  4178) is longer than ...`` in later vLLM; SGLang's ``The input (4178 tokens) is longer than the model's context
  length (4096 tokens)``): a prompt reached the engine longer than the model length verl gave it
  (``actor_rollout_ref.rollout.max_model_len``, else the prompt plus the response length). verl drops such prompts
  when it loads the dataset with ``data.filter_overlong_prompts=True``; or the model length goes up to the prompt
  plus the response.
- verl's ``Rollout hf with mode sync not found`` (``get_rollout_class``, verl 0.6.0+): the registry holds vLLM and
  SGLang (and TensorRT-LLM from 0.7) in server mode, ``async``, read from the installed release's source; 0.6 also
  kept a ``sync`` mode for vLLM and SGLang. ``mode=async`` and the registry's first name are registered on every
  release that raises it.
- vLLM's V0 scheduler ``Aborted due to the lack of CPU swap space`` (verl#960, verl up to 0.5 with vLLM up to
  0.10): preempted sequences filled the CPU swap space, 4 GiB per device by default. The line doubles the launch's
  ``engine_kwargs.vllm.swap_space`` (``engine_kwargs.swap_space`` before verl 0.4), or asks for four times the
  default where the launch gives none; where neither the launch nor the release says which, both.
"""

from __future__ import annotations

import re
from typing import Optional

from ..i18n import Msg, tr
from ._blame import Cause, Verdict
from ._log import Raised
from ._replay import Replay, launch_value
from ._solve import int_of
from ._verl import releases_with, rollout_engines

ROLLOUT = "actor_rollout_ref.rollout"
_TOO_LONG = re.compile(r"(?:Prompt length of|prompt \(length|input \()\s*(?P<got>\d{1,12})(?: tokens)?\)? is longer "
                       r"than the (?:maximum model length of|model's context length \()\s*(?P<max>\d{1,12})\b")
_UNREGISTERED = re.compile(r"Rollout (?P<name>\S+) with mode (?P<mode>\S+) not found")
_SWAP = re.compile(r"Aborted due to the lack of CPU swap space")
#: Where verl releases up to 0.5 pass vLLM its swap space (verl#960 added the first, 0.4 moved it under ``vllm``).
_SWAP_KEYS = (f"{ROLLOUT}.engine_kwargs.vllm.swap_space", f"{ROLLOUT}.engine_kwargs.swap_space")
_VLLM_SWAP_GIB = 4
#: The rollout names verl's registry holds in some release from 0.6.1 to 0.9.1: where that release's source is not
#: at hand to read them (:func:`rollout_engines`).
_NAMES = ("vllm", "sglang", "trtllm")


def rollout_refusal(raised: Raised, what: Msg, launch: Optional[Replay],
                    verl_version: Optional[str] = None) -> Optional[Verdict]:
    return _too_long(raised, what, launch) or _unregistered(raised, what, verl_version) or \
        _swap(raised, what, launch, verl_version)


def _swap(raised: Raised, what: Msg, launch: Optional[Replay], verl_version: Optional[str]) -> Optional[Verdict]:
    """vLLM's V0 scheduler preempting sequences to a CPU swap space too small (verl#960): the swap space goes up."""
    if _SWAP.search(raised.message) is None:
        return None
    # the key the launch writes, else the one of the release that ran; neither known: both, the newer first
    keys = [k for k in _SWAP_KEYS if launch_value(launch, k) is not None] or \
        [k for k in _SWAP_KEYS if verl_version in releases_with(k)] or list(_SWAP_KEYS)
    causes = []
    for key in keys[:1] if launch is not None or len(keys) == 1 else keys:
        given = launch_value(launch, key)
        causes.append(Cause(key, f"{key}={2 * int_of(given) if int_of(given) else 4 * _VLLM_SWAP_GIB}"))
    return Verdict("override", tr(
        "{what}: vLLM preempted sequences to its CPU swap space (GiB per rollout device, {default} by default) and "
        "ran out of it; {key} sets it (host memory must hold it for every rollout device). vLLM 0.11 and later "
        "(verl 0.6 and later) no longer swap", what=what, default=_VLLM_SWAP_GIB,
        key=" (verl 0.4, 0.5), ".join(c.key for c in causes) + (" (before 0.4)" if len(causes) > 1 else "")),
        causes, ("swap_space",), "likely")


def _too_long(raised: Raised, what: Msg, launch: Optional[Replay]) -> Optional[Verdict]:
    hit = _TOO_LONG.search(raised.message)
    if hit is None:
        return None
    got, room = int(hit.group("got")), int(hit.group("max"))
    response = int_of(launch_value(launch, "data.max_response_length"))
    causes = [Cause(f"{ROLLOUT}.max_model_len",
                    f"{ROLLOUT}.max_model_len={got + response}" if response is not None else None)]
    if (launch_value(launch, "data.filter_overlong_prompts") or "").lower() not in ("true", "1", "yes", "on"):
        causes.insert(0, Cause("data.filter_overlong_prompts", "data.filter_overlong_prompts=True"))
    return Verdict("override", tr(
        "{what}: a prompt of {got} tokens reached the rollout, whose model length is {room}. "
        "data.filter_overlong_prompts=True drops the prompts longer than data.max_prompt_length when verl loads the "
        "dataset; or the rollout's max_model_len goes up to the prompt plus data.max_response_length",
        what=what, got=got, room=room), causes, ("max_model_len", "filter_overlong_prompts"), "likely")


def _unregistered(raised: Raised, what: Msg, verl_version: Optional[str]) -> Optional[Verdict]:
    hit = _UNREGISTERED.search(raised.message)
    if hit is None:
        return None
    name, mode = hit.group("name"), hit.group("mode")
    names = rollout_engines(verl_version) or _NAMES  # the release the user ran, when its source is at hand
    causes = []
    if name not in names:
        causes.append(Cause(f"{ROLLOUT}.name", f"{ROLLOUT}.name={names[0]}"))
    if mode != "async":
        causes.append(Cause(f"{ROLLOUT}.mode", f"{ROLLOUT}.mode=async"))
    if not causes:
        return None  # a name and mode some release registers: which release ran decides it
    return Verdict("override", tr(
        "{what}: verl's rollout registry has no class for {name} in {mode} mode; it holds {names} in async (server) "
        "mode", what=what, name=name, mode=mode, names=", ".join(names)), causes, ("name", "mode"), "likely")
