"""A failed run's log -> the exceptions it holds, each with its frames, its worker and its place in the log.

A verl log interleaves the driver's output with Ray's ``(TaskRunner pid=…)`` / ``(WorkerDict pid=…, ip=…)``
prefixes, ANSI colours and ``[repeated 7x across cluster]`` tails, in English and Chinese. Lines are first split by
the process that wrote them, so that each worker's traceback reads whole; then every traceback and every bare
``Type: message`` line is an exception. Chained tracebacks ("The above exception was the direct cause…", "During
handling…") keep their order: the first is the root. Ray's re-raises (``RayTaskError(AssertionError)``,
``ActorDiedError``, ``ray::Worker.method()``) are marked as wrappers: the raise they carry is what matters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Optional

from ._forms import TAG, instantiated, oom_line, tags

#: A line that reports no failure though it speaks of one: a warning ("WARNING ... will raise a TypeError: ...",
#: torch's ``[W ...] Warning: ...``), an info or debug line ("INFO: CUDA is not available, running on NPU").
CHATTER = re.compile(r"\b(?:WARN(?:ING)?|[A-Z]\w*Warning|Warning|INFO|DEBUG)\b|^\s*\[W[\s\d]")

#: The last two: colour codes whose ESC a copy lost, around Ray's prefix (``[36m(TaskRunner pid=1)[0m ...``).
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|^\[[0-9;]{1,8}m(?=\()|(?<=\))\[[0-9;]{1,8}m")
_PREFIX = re.compile(r"^\s*\((?P<who>[A-Za-z_][\w.:-]*)(?:\s+pid=(?P<pid>\d+|\.\.\.|…|x+|X+))?"
                     r"(?:,\s*ip=\[?[\w.:]+\]?)?\)\s?")
#: A traceback whose line breaks a paste lost: ``... in _swap_out raise RuntimeError( RuntimeError: Aborted ...``,
#: ``... in g raise ValueError("bad") ValueError: bad``: a raise of a type, then that same type's exception line.
_COLLAPSED = re.compile(r"raise\s+(?:[\w]+\.){0,4}(?P<name>[A-Z]\w{0,60}(?:Error|Exception))\b(?P<call>.{0,400}?)"
                        r"\s(?P<exc>(?:[A-Za-z_]\w*\.){0,4}(?P=name)(?::\s?.*)?)$")


def collapsed(line: str) -> Optional[re.Match]:
    """The last raise of a traceback pasted on one line, with the exception line after it (None for any other
    line). Tried at each ``raise`` from the last, three at most, so a long line costs one pass."""
    if len(line) > 20000 or "raise " not in line:
        return None
    at = len(line)
    for _ in range(3):
        at = line.rfind("raise ", 0, at)
        if at < 0 or (at and (line[at - 1].isalnum() or line[at - 1] == "_")):
            return None
        hit = _COLLAPSED.match(line, at)
        if hit:
            return hit
    return None


#: A time stamp a logger or ``ts`` put before Ray's prefix (a Markdown backtick may open it): taken off with it.
_STAMP = re.compile(r"^\s*`?\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\]?\s*(?=\([A-Za-z_])")
_RANK = re.compile(r"^\s*\[(?:rank|RANK)\s*\d+\]:?\s?")
_REPEATED = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<fn>\S+))?')
#: ``pkg.mod.SomeError: message`` (or without a message); also after a short tag (``traceback: ``, ``E   ``).
_EXC = re.compile(r"^(?:\s*(?:E\s+|#\s*|>\s*|traceback:\s*|error:\s*|\[rank\d+\]:\s*|\S*ERROR\S*\s+)?)"
                  r"(?P<type>(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure)"
                  r"|KeyError|StopIteration|MissingMandatoryValue))(?:\((?P<inner>[A-Za-z_][\w.]*)\))?(?::\s?(?P<msg>.*))?\s*$")
_CHAIN = ("The above exception was the direct cause of the following exception",
          "During handling of the above exception, another exception occurred")
_WRAPPERS = ("RayTaskError", "RayActorError", "ActorDiedError", "RaySystemError", "WorkerCrashedError",
             "ActorUnavailableError", "TaskUnschedulableError")
#: argparse's exit line (``prog: error: unrecognized arguments: --x``): the process exits with no traceback.
_ARGPARSE_LINE = re.compile(r"^\s*\S+: error: unrecognized arguments: \S")
#: A line a poster puts for the frames they cut: the traceback goes on.
_ELIDED = ("...", "[...]", "…")
_HYDRA_LINES = re.compile(r"^(?:Could not override|Could not append|Could not delete|Key '[^']+' is not in struct|"
                          r"Error merging override|Could not load|In '[^']+': Could not find|"
                          r"Cannot find primary config|Either remove \+ prefix:)|"
                          r"Or add a second \+ to add or override '")


@dataclass
class Raised:
    """One exception the log shows."""

    type: str
    """The class as printed, without its module (``AssertionError``, ``ConfigCompositionException``)."""
    message: str
    """The message: the exception line's text and the lines that continue it."""
    frames: list[tuple[str, int, str]] = field(default_factory=list)
    """The traceback's frames (file, line, function), outermost first; empty for a bare line."""
    stream: str = "driver"
    """The process that printed it (``WorkerDict pid=1234``, or ``driver``)."""
    position: int = 0
    """Its line in the log (1-based)."""
    wrapper: bool = False
    """A re-raise (Ray's task and actor errors): the raise it carries is the cause."""
    chained: bool = False
    """Raised while handling an earlier exception of the same traceback print (not the root)."""
    inner: Optional[str] = None
    """The type a Ray wrapper names: ``RayTaskError(AssertionError)``."""
    code: Optional[str] = None
    """The code line the innermost frame prints (``assert self.lr_decay_steps > 0``), where the log shows it."""
    handled: bool = False
    """Another exception followed it in the same print ("During handling of the above exception..."): some frame
    of its traceback caught it."""
    cut: bool = False
    """The log ends at the frame that raised: its ``code`` line is all there is (no exception line)."""

    @property
    def first_line(self) -> str:
        """The message's first line; for a raise printed without one (a bare ``AssertionError``), the code line its
        frame prints, else empty."""
        return self.message.splitlines()[0] if self.message.strip() else (self.code or "")

    @property
    def last_frame(self) -> Optional[tuple[str, int, str]]:
        return self.frames[-1] if self.frames else None

    def key(self) -> tuple[str, str]:
        return self.type, " ".join(self.message.split())[:300]


#: A log pasted as a Markdown quote: "> " opens each line, "> > " a quote within one (never Python's ">>> ").
_QUOTE = re.compile(r"^(?:> ?(?=[^>]|$)|(?:> )+)")


@lru_cache(maxsize=2)
def clean(text: str) -> tuple[tuple[str, str, int], ...]:
    """(stream, line, 1-based position) for each line, colours, a Markdown quote's '> ', Ray's prefixes and tails
    removed. Kept for the last logs: a diagnosis reads one log up to three times (its exceptions, Hydra's override
    list, an untyped quote)."""
    lines = [(number, _STAMP.sub("", _REPEATED.sub("", _ANSI.sub("", _QUOTE.sub("", raw.replace("\r", "")))), count=1))
             for number, raw in enumerate(text.splitlines(), 1)]  # the quote opens the line
    outer = tags(line for _number, line in lines)  # before Ray's or torchrun's prefix (``srun --label torchrun``)
    out = []
    for number, line in lines:
        stream, line = _untagged("driver", line, outer)
        match = _PREFIX.match(line)
        if match and (match.group("pid") or match.group("who") in ("TaskRunner", "WorkerDict", "raylet")):
            stream = f"{match.group('who')} pid={match.group('pid')}" if match.group("pid") else match.group("who")
            line = line[match.end():]
        rank = _RANK.match(line)
        if rank:  # torchrun's per-rank prefix: the rank is the process
            stream, line = rank.group(0).strip().rstrip(":").strip("[]"), line[rank.end():]
        out.append((stream, line, number))
    inner = tags(line for _stream, line, _number in out)  # after them
    read = []
    for stream, line, number in out:
        stream, line = _untagged(stream, line, inner)
        read.append((stream, _unwrapped(line), number))
    return tuple(read)


def _untagged(stream: str, line: str, tagged: frozenset[str]) -> tuple[str, str]:
    """A launcher's task and rank (``pretrain/0``, srun's ``0:``) before the line, where it is one of ``tagged``:
    the process that printed it, taken off; else the line as it is."""
    tag = TAG.match(line) if tagged else None
    return (tag.group("tag"), line[tag.end():]) if tag and tag.group("tag") in tagged else (stream, line)


#: An exception line a poster set in bold or in quotes (``**TypeError: ...**``, ``"KeyError: ..."``), as an item of
#: a Markdown list too (``- `TypeError: ...```).
_WRAPPED = re.compile(r"^(?P<indent>\s*)(?:[-*+]\s+)?(?P<open>\*\*|__|[\"“`])(?P<inner>.+?)(?:\*\*|__|[\"”`])"
                      r"[.,;]?\s*$")


_ITEM = re.compile(r"^[-*+]\s+")


def _unwrapped(line: str) -> str:
    """The line without the bold or the quotes around an exception line (nor the list's mark before them); any
    other line as it is."""
    opening = _ITEM.sub("", line.lstrip()[:8], count=1)
    if len(line) > 20000 or not opening or opening[0] not in "*_\"“`":
        return line
    hit = _WRAPPED.match(line)
    typed = _EXC.match(hit.group("inner")) if hit else None
    return hit.group("indent") + hit.group("inner") if typed and typed.group("msg") else line


def exceptions(text: str) -> list[Raised]:
    """Every exception the log holds, in the order printed (per stream, then by position)."""
    streams: dict[str, list[tuple[str, int]]] = {}
    for stream, line, number in clean(text):
        streams.setdefault(stream, []).append((line, number))
    found: list[Raised] = []
    for stream, lines in streams.items():
        found += _read(stream, lines)
    return sorted(found, key=lambda r: r.position)


def _read(stream: str, lines: list[tuple[str, int]]) -> list[Raised]:
    found: list[Raised] = []
    frames: list[tuple[str, int, str]] = []
    in_trace = chained = pending_chain = False
    code: Optional[str] = None
    i = 0
    while i < len(lines):
        line, number = lines[i]
        stripped = line.strip()
        if stripped.startswith("Traceback (most recent call last)"):
            in_trace, frames, chained, pending_chain = True, [], pending_chain, False
            i += 1
            continue
        if any(stripped.startswith(c) for c in _CHAIN):
            pending_chain = True
            if found:  # the raise just read was caught: what followed was raised while handling it
                found[-1] = replace(found[-1], handled=True)
            i += 1
            continue
        frame = _FRAME.match(line)
        if frame:  # a cut log may start inside a traceback: its frames count without the header
            in_trace = True
            frames.append((frame.group("file"), int(frame.group("line")), frame.group("fn") or ""))
        if frame and not collapsed(line):  # (a frame whose line goes on to the raise: read below)
            i += 1
            code = None
            if i < len(lines) and _source_line(lines[i][0]):  # its code line, whose indent a paste may have lost
                code = lines[i][0].strip()
                i += 1
            continue
        match = _EXC.match(line)
        pasted = None if match else collapsed(line)
        if pasted:  # a traceback pasted with its line breaks lost: its last raise and the exception after it
            match, line = _EXC.match(pasted.group("exc")), pasted.group("exc")
            code = f"raise {pasted.group('name')}{pasted.group('call')}".strip()
        if match and not line.startswith((" " * 4, "\t")):
            message, i = _message(match.group("msg") or "", lines, i + 1)
            kind = match.group("type").rsplit(".", 1)[-1]
            inner = instantiated(message) if kind == "InstantiationException" else None
            found.append(Raised(kind, message, frames if in_trace else [], stream, number,
                                wrapper=kind in _WRAPPERS or message.lstrip().startswith("ray::") or bool(inner),
                                chained=chained and in_trace, inner=match.group("inner") or (inner and inner[0]),
                                code=code if in_trace else None))
            if inner:  # the target's own exception, which Hydra prints as its repr under its line (and the section
                # it was instantiating, its full_key line)
                section = next((ln.strip() for ln in message.splitlines() if ln.strip().startswith("full_key:")), "")
                found.append(Raised(inner[0], f"{inner[1]}\n{section}".strip(), [], stream, number + 1))
            in_trace, frames, chained, code = False, [], False, None
            continue
        if _HYDRA_LINES.search(stripped):
            # Hydra prints its error without a type unless HYDRA_FULL_ERROR=1 (its advice may open a cut excerpt)
            message, i = _message(stripped, lines, i + 1)
            found.append(Raised("ConfigCompositionException", message, [], stream, number))
            continue
        if _ARGPARSE_LINE.match(line):
            found.append(Raised("SystemExit", stripped, [], stream, number))
            i += 1
            continue
        if oom_line(line) and not line.startswith((" " * 4, "\t")):  # the allocator's own line, untyped
            found.append(Raised("OutOfMemoryError", stripped, frames if in_trace else [], stream, number))
            in_trace, frames = False, []
            i += 1
            continue
        if in_trace and stripped and not line.startswith((" ", "\t")) and not stripped.startswith("^") and \
                stripped not in _ELIDED:
            in_trace, frames = False, []  # a traceback that ended without an exception line (cut)
        i += 1
    return found


def _source_line(line: str) -> bool:
    """The code line a frame prints under it: not a frame, an exception, a chain or a poster's cut."""
    stripped = line.strip()
    return bool(stripped) and not _FRAME.match(line) and not _EXC.match(line) and stripped not in _ELIDED and \
        not any(stripped.startswith(c) for c in _CHAIN) and not stripped.startswith("Traceback") and \
        not (oom_line(line) and not line.startswith((" ", "\t")))  # an allocator's untyped line


def _message(first: str, lines: list[tuple[str, int]], i: int) -> tuple[str, int]:
    """An exception's message and the index after it: the continuation lines until a blank line, a frame, a new
    traceback or another exception line (at most 12 lines)."""
    parts = [first]
    while i < len(lines) and len(parts) < 12:
        line = lines[i][0]
        stripped = line.strip()
        if not stripped or _FRAME.match(line) or stripped.startswith("Traceback") or _EXC.match(line) or \
                any(stripped.startswith(c) for c in _CHAIN) or stripped.startswith(("Error executing job",
                                                                                    "Set the environment variable")):
            break
        parts.append(stripped)
        i += 1
    return "\n".join(p for p in parts if p is not None).strip(), i


def _cut_copy(whole: Raised, cut: Raised) -> bool:
    """``cut`` is ``whole`` printed again and cut short (a poster's excerpt that ends mid-message)."""
    lines = [line for line in cut.message.splitlines() if line.strip() not in _ELIDED]
    head = lines[0].rstrip() if lines else ""
    first = whole.message.splitlines()[0] if whole.message else ""
    return cut.type == whole.type and len(lines) == 1 and 6 <= len(head) < len(first) and first.startswith(head)


def roots(found: list[Raised]) -> list[Raised]:
    """The first raises: per distinct (type, message), the earliest that is neither a wrapper nor raised while
    handling another; a wrapper's message stands only when the log holds nothing else."""
    out: dict[tuple[str, str], Raised] = {}
    for raised in found:
        if raised.wrapper or raised.chained:
            continue
        whole = next((k for k, e in out.items() if _cut_copy(e, raised)), None)
        if whole is not None:  # the same raise printed again, cut: its frames belong to the whole one
            if raised.frames and not out[whole].frames:
                out[whole] = replace(out[whole], frames=raised.frames)
            continue
        cut = next((k for k, e in out.items() if _cut_copy(raised, e)), None)
        if cut is not None:  # a cut copy came first: the whole raise takes its place (and its frames, if it has none)
            earlier = out.pop(cut)
            raised = raised if raised.frames or not earlier.frames else replace(raised, frames=earlier.frames)
        out.setdefault(raised.key(), raised)
    if not out:
        for raised in found:
            out.setdefault(raised.key(), raised)
    return list(out.values())


__all__ = ["CHATTER", "Raised", "clean", "exceptions", "roots"]
