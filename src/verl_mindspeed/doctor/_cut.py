"""A log cut inside a traceback, right after the frame that raised: that frame's ``assert`` or ``raise`` line is the
failure, its message lost with the rest (``arguments.py", line 561, in validate_args`` then ``assert num_layers %
args.transformer_pipeline_model_parallel_size == 0, \\``, then the poster's ``[...]``)."""

from __future__ import annotations

import re

from ._log import Raised, clean

#: A frame's line, whose opening a paste may have cut (``Megatron-LM/megatron/training/arguments.py", line 561, in
#: validate_args``, the ``File "...`` lost before it).
_FRAME = re.compile(r'(?:^|\bFile ")(?P<file>[^"\s]+\.py)", line (?P<line>\d+), in (?P<fn>[\w<>.]+)\s*$')
#: The statement that raised: an ``assert``, or a ``raise`` of a class called with its message (not a re-raise, nor
#: a call that makes one: ``raise value.as_instanceof_cause()``).
_RAISE = re.compile(r"^(?:assert\s|raise\s+(?:[A-Za-z_]\w*\.)*(?P<type>[A-Z]\w*)\s*\()")
#: What may follow the statement where the log is cut there: the poster's cut mark, Python's carets, the rest of the
#: statement's own message (a string continued on the next lines).
_AFTER = re.compile(r"^(?:\[\.\.\.\]|\.\.\.|…|[\^~\s]+|[rfbu]?['\"].*|\),?)$", re.I)


def cut_raise(text: str) -> list[Raised]:
    """A traceback whose last frame prints an ``assert`` or a ``raise X(...)``, after which the log holds nothing
    but a cut mark or the statement's own message: that raise, with no message (``cut``). The frame and its code
    line are read across process prefixes (a paste may cut a frame's prefix and keep the next line's)."""
    last = None  # [frame, its code line, the process that printed it, the frame's line in the log]
    frames: list[tuple[str, int, str]] = []  # the frames of the traceback ``last`` ends, outermost first
    for stream, line, number in clean(text)[-20000:]:
        stripped = line.strip()[:2000]
        hit = _FRAME.search(stripped) if '", line ' in stripped else None
        if hit:
            last = [(hit.group("file"), int(hit.group("line")), hit.group("fn")), None, stream, number]
            frames.append(last[0])
        elif stripped.startswith("Traceback"):
            last, frames = None, []
        elif last is not None and stripped:
            if last[1] is None:
                last[1], last[2] = stripped, stream  # the frame's code line
            elif not _AFTER.match(stripped):
                last, frames = None, []  # the log goes on past the statement: not cut there
    hit = _RAISE.match(last[1] or "") if last is not None else None
    if hit is None:
        return []
    _frame, code, stream, number = last
    return [Raised(hit.group("type") or "AssertionError", "", frames, stream, number, code=code, cut=True)]


__all__ = ["cut_raise"]
