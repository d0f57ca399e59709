"""What the stack's own code does with launch settings, where a raise's message alone does not name the key.

A few facts about verl's code, each keyed by the code that raised (a raise site, a frame's file or function), never
by a log's text:

- ``DataProto.chunk`` splits a batch over the worker group's ranks: "only support equal chunk. Got size of DataProto
  N and chunk M" is a batch the launch sized (``data.train_batch_size``; ``data.batch_size`` for
  ``main_generation``; ``data.val_batch_size`` in validation) that the world size does not divide.
- Some code runs only because a switch selects it: verl's legacy HF->Megatron weight loader (``use_mbridge`` off),
  the fused-kernel forward (``use_fused_kernels`` on). A failure raised inside such a path, and not below it in
  megatron or MindSpeed, is avoided by the switch's other state.
- ``_build_rollout`` picks the rollout engine by ``actor_rollout_ref.rollout.name``: an unassigned engine there is a
  name the worker has no engine for.
- An argument parser's "unrecognized arguments" / ms-swift's "remaining_argv: [...]" lists the flags at fault.
- A config key verl's own code writes into a struct-mode config (``policy_loss["x"] = ...``) is verl's fault, not
  the launch's; one it reads and the config lacks is a key the launch can add. OmegaConf's ``full_key:`` line, or
  the only verl path with that last name, says where the key is.
- What a message itself says (advice, a dataset file, settings it prints) is :mod:`._said`'s.
- Memory run out in the rollout engine's allocator (``torch_memory_saver``, vLLM, SGLang) while it shares the device
  with training: the rollout's static memory fraction is the setting that leaves the rest too little.
"""

from __future__ import annotations

import re
from typing import Optional

from ..catalog import verl_keys
from ..i18n import tr
from ._blame import Cause, Verdict, the_machine
from ._log import Raised
from ._paths import verl_leaves
from ._replay import Replay, launch_value
from ._said import advised, data_file, passed_twice
from ._sites import Match, relative
from ._solve import int_of
from ._values import lowered
from ._verl import default, release, rollout_engines, sections_of

#: Code paths a launch switch selects: (frame path parts, keys, the value that avoids the path, what the path is).
_SWITCHED = (
    (("verl/models/mcore/loader.py", "/megatron/checkpoint_utils/"),
     ("actor_rollout_ref.actor.megatron.use_mbridge", "actor_rollout_ref.ref.megatron.use_mbridge"), "True",
     "legacy"),
    (("model_forward_fused.py", "verl/utils/experimental/torch_functional.py"),
     ("actor_rollout_ref.model.use_fused_kernels",), "False", "fused"),
)
#: Functions that build one implementation by a name key: no branch taken leaves their result unassigned.
_DISPATCH = {"_build_rollout": "actor_rollout_ref.rollout.name"}
_CODE_TYPES = ("AttributeError", "KeyError", "AssertionError", "RuntimeError", "TypeError", "ValueError",
               "IndexError")
_ARGV = re.compile(r"remaining_argv:\s*\[(?P<list>[^\]]*)\]|unrecognized arguments:\s*(?P<args>.+)")
_FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w.-]*)")
_OOM = re.compile(r"out of memory|OutOfMemory|\bOOM\b", re.I)
_ROLLOUT_ALLOC = ("torch_memory_saver", "/vllm/", "/sglang/", "vllm_ascend/", "cumem_allocator")
MEMORY_KEY = "actor_rollout_ref.rollout.gpu_memory_utilization"


def explain(raised: Raised, site: Optional[Match], launch: Optional[Replay]) -> Optional[Verdict]:
    """The verdict a fact about the stack's code gives on ``raised`` (None: no fact applies)."""
    for fact in (_chunk, _switched, _dispatch, _arguments, advised, data_file, passed_twice, _memory):
        verdict = fact(raised, site, launch)
        if verdict is not None:
            return verdict
    return None


def batch_key(raised: Raised, launch: Optional[Replay]) -> str:
    """The key that sizes the batch a dispatch chunks: the generation entry's, validation's, or training's."""
    files = " ".join(f"{path} {fn}" for path, _line, fn in raised.frames)
    entry = (launch.entry if launch is not None else None) or ""
    if "main_generation" in entry or "main_generation" in files:
        return "data.batch_size"
    if any(fn == "_validate" for _path, _line, fn in raised.frames):
        return "data.val_batch_size"
    return "data.train_batch_size"


def divisible_batch(size: int, chunks: int, written: Optional[int]) -> Optional[int]:
    """The batch value nearest the written one (else the printed size) whose chunked batch ``chunks`` divides: the
    written value scaled as the log's batch is to it (``rollout.n`` samples, padding). None when the launch wrote a
    value the log's batch is no whole multiple of: the two are in different units and no line can be trusted."""
    factor = size // written if written and size % written == 0 else None
    if written and factor is None:
        return None
    start = written if factor else size
    for distance in range(0, 4 * max(start, chunks) + 1):
        for candidate in (start - distance, start + distance):
            if candidate >= 1 and (candidate * (factor or 1)) % chunks == 0:
                return candidate
    return chunks


def _chunk(raised: Raised, site: Optional[Match], launch: Optional[Replay]) -> Optional[Verdict]:
    if site is None or site.site.file != "verl/protocol.py" or not site.site.function.endswith(".chunk"):
        return None
    printed = [int_of(v) for v in site.bound.values()]
    if len(printed) != 2 or None in printed or not printed[1]:
        return None
    size, chunks = printed
    key = batch_key(raised, launch)
    value = divisible_batch(size, chunks, int_of(launch_value(launch, key)))
    what = tr("{type}: verl splits a batch of {size} over the worker group's {chunks} ranks and needs equal parts: "
              "the batch ({key}) must make a multiple of the world size", type=raised.type, size=size, chunks=chunks,
              key=key)
    return Verdict("override", what, [Cause(key, f"{key}={value}" if value else None)], (key.rsplit(".", 1)[-1],),
                   "likely")


def _switched(raised: Raised, site: Optional[Match], launch: Optional[Replay]) -> Optional[Verdict]:
    if raised.type not in _CODE_TYPES or not raised.frames or the_machine(raised.message):
        return None  # a collective failing inside the loader, or memory running out there, is not the loader's
    for parts, keys, value, path in _SWITCHED:
        at = [k for k, (file, _line, _fn) in enumerate(raised.frames) if any(p in file.replace("\\", "/")
                                                                               for p in parts)]
        if not at or any((relative(f) or "").startswith(("megatron/", "mindspeed/"))
                         for f, _l, _fn in raised.frames[at[-1] + 1:]):
            continue
        what = tr("{type} inside verl's legacy HF->Megatron weight loader, which runs because use_mbridge is off: it "
                  "does not know this model's layers; mbridge converts them", type=raised.type) if path == "legacy" \
            else tr("{type} inside verl's fused-kernel forward, which runs because use_fused_kernels is on: turning it "
                    "off takes the plain forward", type=raised.type)
        written = [k for k in keys if launch_value(launch, k) is not None]
        return Verdict("override", what, [Cause(k, f"{k}={value}") for k in (written or keys)], (), "possible")
    return None


def _dispatch(raised: Raised, site: Optional[Match], launch: Optional[Replay]) -> Optional[Verdict]:
    if raised.type not in ("UnboundLocalError", "NotImplementedError") or not raised.frames:
        return None
    function = raised.frames[-1][2]
    key = _DISPATCH.get(function)
    if key is None:
        return None
    name = launch_value(launch, key)
    engines = [e for e in rollout_engines() if e != name]
    what = tr("{type} in verl's {function}, which builds the engine {key} names: this worker has no engine of that "
              "name{shown}; name one it builds", type=raised.type, function=function, key=key,
              shown=f" ({name})" if name else "")
    if engines:
        what = tr("{what} (verl {release}'s rollout registry: {engines})", what=what, release=release(),
                  engines=", ".join(engines))
    return Verdict("override", what, [Cause(key, f"{key}={engines[0]}" if engines else None)],
                   (key.rsplit(".", 1)[-1],), "likely")


def _arguments(raised: Raised, site: Optional[Match], launch: Optional[Replay]) -> Optional[Verdict]:
    hit = _ARGV.search(raised.message)
    if hit is None:
        return None
    flags = list(dict.fromkeys(_FLAG.findall(hit.group("list") if hit.group("list") is not None
                                             else hit.group("args"))))
    if not flags:
        return None
    what = tr("{type}: the command line's parser does not know {flags}: delete them (this entry point takes no such "
              "argument)", type=raised.type, flags=", ".join(flags))
    return Verdict("override", what, [Cause(f, delete=True) for f in flags], tuple(flags), "likely")


def _memory(raised: Raised, site: Optional[Match], launch: Optional[Replay]) -> Optional[Verdict]:
    if not _OOM.search(raised.message) and "OutOfMemory" not in raised.type:
        return None
    where = raised.message + " " + " ".join(path for path, _line, _fn in raised.frames)
    if not any(part in where for part in _ROLLOUT_ALLOC):
        return None
    written = launch_value(launch, MEMORY_KEY)
    share = written if written is not None else default(MEMORY_KEY)
    lower = lowered(share)
    fix = f"{MEMORY_KEY}={lower}" if lower is not None else None
    what = tr("the device ran out of memory in the rollout engine's allocator ({message}): the rollout keeps a static "
              "share of the device ({key}); lowering it leaves training more", message=raised.first_line[:160],
              key=MEMORY_KEY)
    if fix is not None and written is None:  # no launch value: the line lowers verl's default
        what = tr("{what} (the line lowers verl's default {value}; where the launch sets a lower share, lower that)",
                  what=what, value=share)
    return Verdict("resource", what, [Cause(MEMORY_KEY, fix)], (MEMORY_KEY.rsplit(".", 1)[-1],), "possible")


_FULL_KEY = re.compile(r"full_key:\s*(?P<key>[\w.]+)")
_WRITES = ("__setitem__", "__setattr__", "_set_value", "_set_item_impl")


_IN_CLASS = re.compile(r"not in '(?P<cls>[A-Z]\w+)'")


#: A config dataclass's constructor given a field it lacks, as Hydra's ``instantiate`` calls it.
_UNEXPECTED = re.compile(r"\b(?P<cls>[A-Z]\w+)\.__init__\(\) got an unexpected keyword argument '(?P<key>\w+)'")


def dataclass_refusal(raised: Raised) -> bool:
    """A config dataclass refused a key the section holds (``Key 'x' not in 'HFModelConfig'``, or its constructor
    given a field it lacks): the launch's key."""
    return bool(_IN_CLASS.search(raised.message)) or unexpected_field(raised) is not None


def unexpected_field(raised: Raised) -> Optional[str]:
    """The key a verl config dataclass's constructor was given and lacks (``McoreEngineConfig.__init__() got an
    unexpected keyword argument 'x'``): a key the section holds, so one the launch wrote. Another class's (a package's
    function called with an argument it lacks) is none."""
    hit = _UNEXPECTED.search(raised.message)
    if raised.type != "TypeError" or hit is None or not sections_of(hit.group("cls")):
        return None
    return hit.group("key")


def full_key(raised: Raised, key: str) -> str:
    """The whole path of a key a config refused: OmegaConf's ``full_key:`` line, else, for a key a config dataclass
    refused (``not in 'HFModelConfig'``), the section verl converts into that class, else the one verl path ending
    in it (any release), else the key as printed."""
    hit = _FULL_KEY.search(raised.message)
    if hit and "." in hit.group("key") and hit.group("key").rsplit(".", 1)[-1] == key.rsplit(".", 1)[-1]:
        return hit.group("key")
    if hit and "." not in key and unexpected_field(raised) == key:  # instantiate's full_key: the section it built
        return f"{hit.group('key')}.{key}"
    owner = _IN_CLASS.search(raised.message) or _UNEXPECTED.search(raised.message)
    sections = sections_of(owner.group("cls")) if owner and "." not in key else ()
    if sections:
        return f"{sections[0]}.{key}"
    if hit and hit.group("key").rsplit(".", 1)[-1] == key.rsplit(".", 1)[-1]:
        return hit.group("key")
    if "." not in key and key not in verl_keys._data()["keys"]:
        paths = verl_leaves().get(key, ())
        if len(paths) == 1:
            return paths[0]
    return key


def code_access(raised: Raised) -> Optional[tuple[str, bool]]:
    """(function, whether it writes) when verl's own code, not Hydra's composition, touched the refused key."""
    frames = [(path.replace("\\", "/"), fn) for path, _line, fn in raised.frames]
    if not frames or any("/hydra/" in path for path, _fn in frames):
        return None
    inner = next((i for i, (path, _fn) in enumerate(frames) if "/omegaconf/" in path), None)
    if not inner or "verl/" not in frames[inner - 1][0]:
        return None
    return frames[inner - 1][1], frames[inner][1] in _WRITES


__all__ = ["MEMORY_KEY", "batch_key", "code_access", "dataclass_refusal", "divisible_batch", "explain", "full_key",
           "unexpected_field"]
