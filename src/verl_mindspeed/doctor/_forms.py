"""Forms a log's lines take that say who printed them or what they carry: a launcher's tag before each line, the
exception Hydra's ``instantiate`` prints as a repr, a native allocator's out-of-memory line with no Python type."""

from __future__ import annotations

import ast
import re
from typing import Iterable, Optional

#: A native allocator's failure printed without a Python type: ``[torch_memory_saver.cpp] CUresult error: 2 (out of
#: memory) ...``, ``NPU error ... out of memory``, or the CUDA driver's code for it alone (``CUresult error
#: result=2 ... func=cu_mem_create``: 2 is ``CUDA_ERROR_OUT_OF_MEMORY``).
_OOM_LINE = re.compile(r"^\s*(?:\[[\w./-]+\]\s*)?[^\n]*\berror\b[^\n]*(?:\bout of memory\b|"
                       r"(?<=CUresult error)\s*(?::|result\s*=)\s*2\b[^\n]*\bcu_mem_)", re.I)


def oom_line(line: str) -> bool:
    """An allocator's untyped out-of-memory line: its words looked for first, so a long line without them is one
    pass, and the pattern runs on its first 4,000 characters."""
    low = line[:4000].lower()
    return "error" in low and ("out of memory" in low or "curesult" in low) and bool(_OOM_LINE.match(line[:4000]))


#: A launcher's tag before each line of a process: NeMo-Run's ``<task>/<rank> `` (a paste may cut its first letters:
#: ``ain_fp8_mx/0``), srun's ``--label`` ``<rank>: ``. Taken off only where one tag opens three lines or more.
TAG = re.compile(r"^(?P<tag>[A-Za-z_][\w.-]{0,60}/\d{1,5}|\d{1,5}:) ")


def tags(lines: Iterable[str]) -> frozenset[str]:
    """The tags that open three of ``lines`` or more (after any other prefix is taken off)."""
    seen: dict[str, int] = {}
    for line in lines:
        hit = TAG.match(line)
        if hit:
            seen[hit.group("tag")] = seen.get(hit.group("tag"), 0) + 1
    return frozenset(tag for tag, n in seen.items() if n >= 3)


#: The exception Hydra's ``instantiate`` caught, as its message prints it: ``ValueError('When using ...')``.
_REPR = re.compile(r"^(?P<type>[A-Z]\w*(?:Error|Exception))\((?P<q>['\"])(?P<msg>.*)(?P=q)\)$")


def instantiated(message: str) -> Optional[tuple[str, str]]:
    """(type, message) of the exception an ``InstantiationException`` (``Error in call to target 'X':``) carries,
    its repr read back as Python reads a string literal."""
    for line in message.splitlines()[1:4]:
        hit = _REPR.match(line.strip())
        if hit:
            try:
                text = ast.literal_eval(hit.group("q") + hit.group("msg") + hit.group("q"))
            except (SyntaxError, ValueError):
                text = hit.group("msg")
            return hit.group("type"), str(text)
    return None


__all__ = ["TAG", "instantiated", "oom_line", "tags"]
