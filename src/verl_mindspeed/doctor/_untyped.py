"""A log with no ``Type: message`` line that still shows its failure: a known message on a line of its own (a cut
log, a test's summary), a quoted requirement with a value (a thread that quotes the message alone), or an error line
no Python exception carries (``CUDA error: ...``, Ray's ``Unable to register worker with raylet``, Python's
``cannot import name ...`` quoted without its type, which it is given)."""

from __future__ import annotations

import re

from ._log import CHATTER, Raised, clean
from ._match import by_line


def known_lines(text: str) -> list[Raised]:
    """Without any ``Type: message`` line (a cut log, a test summary, a message quoted alone), the lines that are a
    raise site's message, typed as that site raises."""
    out = []
    for stream, line, number in clean(text)[:5000]:
        found = by_line(line) if len(line.strip()) >= 24 else None
        if found is not None:
            out.append(Raised(found.site.exception, line.strip().lstrip("-*# ").strip(), [], stream, number))
    return out


def _prose(line: str) -> bool:
    """Not a comment, a traceback's frame or an excerpt's cut mark: a line an untyped failure may be."""
    return not line.lstrip().startswith(("#", "File ", "[..."))


#: A sentence that states a failed requirement, with a value in it: what an untyped quote of a message reads like.
_FAILED_RULE = re.compile(r"\b(?:must|should|not divisible|incompatible|is invalid|requires?)\b")
_VALUE = re.compile(r"\d")


def quoted(text: str) -> list[Raised]:
    """A short excerpt with no exception at all (a thread that quotes the message alone): its lines that state a
    failed requirement with a value (``... the world size must be divisible by ETP * EP * PP (1 * 64 * 4 = 256)``),
    untyped."""
    lines = [(stream, line, number) for stream, line, number in clean(text) if line.strip()]
    if len(lines) > 12:
        return []  # a log, not a quote: what it does not raise is not its failure
    return [Raised("Error", line.strip()[:2000], [], stream, number) for stream, line, number in lines
            if _FAILED_RULE.search(line[:2000]) and _VALUE.search(line[:2000]) and _prose(line)][:2]


#: A line that reports an error with no Python exception: a device's, a runtime's, a launcher's (not a warning that
#: something is not available, not a success code, not a metric named error).
_ERROR_LINE = re.compile(r"\b(?:CUDA error|NPU (?:function )?error|Invalid device|Unable to register worker|"
                         r"illegal memory access was encountered)\b|"
                         r"\berror code(?: is)?:? [1-9]\d*|"
                         r"\b(?:NPU|GPU|CUDA|devices?)\b[^.]{0,40}\bis not (?:available|visible)\b|"
                         r"^(?:ERROR|CRITICAL|FATAL):[\w.]+:|^\S+: error: |(?<!non-)\bfatal error:|^\s*\w+ fatal\s*:|"
                         r"(?:^|[\s\[\]>|])(?:[A-Z][A-Za-z]*Error|ERROR|Error)(?:\]|:\s(?![-+]?\d))")


#: An ``assert`` statement's code line with its message (a traceback cut after it): an AssertionError.
_ASSERTED = re.compile(r"^assert\s+[^\n]+?,\s*f?(?P<q>[\"'])(?P<message>[^\"'{}]{8,200})(?P=q)\s*$")

#: Python's own messages, quoted without their exception's type: that type.
_PYTHON = ((re.compile(r"^cannot import name '\w+' from '[\w.]+'"), "ImportError"),
           (re.compile(r"^No module named '[\w.]+'"), "ModuleNotFoundError"),
           (re.compile(r"^(?:[\w.]+\(\) )?(?:got an )?unexpected keyword argument '\w+'|"
                       r"^[\w.]+\(\) takes (?:from \d+ to )?\d+ positional arguments? but \d+ (?:were|was) given|"
                       r"^unsupported operand type\(s\) for"), "TypeError"),
           # a module's attribute missing, also where a log line reports it after its own words ("Failed to apply
           # NPU patches: module '...' has no attribute '...'", verl's NPU patches)
           (re.compile(r"(?:^|: )module '[\w.]+' has no attribute '\w+'"), "AttributeError"))


def error_lines(text: str) -> list[Raised]:
    """A log with no exception at all that still reports an error (``CUDA error: an illegal memory access``, Ray's
    ``Unable to register worker with raylet``, Python's ``cannot import name 'x' from 'y'`` quoted without its type,
    which it is given): its last two such lines (a run's fatal error comes last). The log holds a failure; where
    nothing places it, the doctor says so (exit 1) rather than calling the log unusable."""
    out = []
    for stream, line, number in clean(text)[-20000:]:
        plain = line.strip()[:2000]
        if CHATTER.search(plain) or not _prose(line):
            continue
        typed = next((kind for pattern, kind in _PYTHON if pattern.search(plain.strip("`\"“”"))), None)
        asserted = _ASSERTED.match(plain)
        if asserted:  # the assert's code line, cut before the exception's: its message
            out.append(Raised("AssertionError", asserted.group("message"), [], stream, number))
        elif typed:
            out.append(Raised(typed, plain.strip("`\"“”"), [], stream, number))
        elif _ERROR_LINE.search(line[:2000]):
            out.append(Raised("Error", plain.strip("`\"“”'").strip(), [], stream, number))
    return out[-2:]


__all__ = ["error_lines", "known_lines", "quoted"]
