"""Shell words in linear time: :mod:`shlex` grows each token one character at a time (``token += char``), so a
single long word costs quadratic time (a million-character value took 40 s). Long runs of characters that mean
nothing to the shell are set aside before shlex runs and put back in the words after: same words, linear work."""

from __future__ import annotations

import re
import shlex

#: Characters with no meaning to shlex (posix, whitespace-split, punctuation chars on): a run of them is part of
#: whatever word it sits in.
_PLAIN_RUN = re.compile(r"[A-Za-z0-9_\-.=/:+,@%^{}\[\]]{64,}")
_MARK = "\x01"


def lex(text: str, *, commenters: str = "#") -> list[str]:
    """``text`` split into words as ``shlex.shlex(text, posix=True, punctuation_chars=True)`` with
    ``whitespace_split`` splits it; ValueError on an open quote, as shlex raises."""
    runs: list[str] = []

    def aside(match: re.Match) -> str:
        runs.append(match.group(0))
        return f"{_MARK}{len(runs) - 1}{_MARK}"

    short = _PLAIN_RUN.sub(aside, text) if _MARK not in text else text
    lexer = shlex.shlex(short, posix=True, punctuation_chars=True)
    lexer.whitespace_split, lexer.commenters = True, commenters
    words = list(lexer)
    if not runs:
        return words
    back = re.compile(f"{_MARK}(\\d+){_MARK}")
    return [back.sub(lambda m: runs[int(m.group(1))], w) for w in words]
