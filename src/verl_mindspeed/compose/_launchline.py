"""Which command of a launch file (or of arguments pasted from one) is verl's launch: ``python3 -m MODULE``,
``torchrun ... -m MODULE``, ``coverage run ... -m MODULE`` or a ``.../verl/...py`` script, and its module."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Optional

from ._shell import Word

_PYTHON = re.compile(r"python(\d+(\.\d+)?)?$")


def find_launch(words: list[Word]) -> Optional[tuple[str, list[Word], int]]:
    """(module, its argv, line) of a ``python -m MODULE ...`` / ``torchrun ... -m MODULE ...`` command."""
    for k, word in enumerate(words):
        name = PurePosixPath(word.text).name
        if not (_PYTHON.match(name) or name in ("torchrun", "coverage")):
            continue
        j = k + 1
        while j < len(words) and (words[j].text.startswith("-") or words[j].text == "run") and words[j].text != "-m":
            j += 1
        if j < len(words) and words[j].text == "-m" and j + 1 < len(words):
            return words[j + 1].text, words[j + 2:], word.line
        if j < len(words) and words[j].text.endswith(".py"):
            module = _module_of(words[j].text)
            if module:
                return module, words[j + 1:], word.line
    return None


_ENV_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def split_pasted(args: list[str]) -> tuple[Optional[str], list[str]]:
    """(module, the args without it) for a whole command pasted as arguments: ``[VAR=x ...] python3 [-u] -m MODULE
    ...`` (or ``torchrun ... -m``, or a ``.../verl/...py`` script); ``(None, args)`` when there is none."""
    for k, arg in enumerate(args):
        name = PurePosixPath(arg).name
        if not (_PYTHON.match(name) or name == "torchrun"):
            continue
        found = find_launch([Word(a, 0) for a in args[k:]])
        if found is None:
            return None, args
        module, rest, _ = found
        start = k
        while start > 0 and _ENV_ASSIGNMENT.match(args[start - 1]) and "." not in args[start - 1].split("=", 1)[0]:
            start -= 1
        return module, [*args[:start], *args[len(args) - len(rest):]]
    return None, args


def _module_of(script: str) -> Optional[str]:
    parts = PurePosixPath(script).with_suffix("").parts
    for start, part in enumerate(parts):
        if part in ("verl", "recipe"):
            return ".".join(parts[start:])
    return None


def launch_rank(launch: tuple[str, list[Word], int]) -> tuple[int, int]:
    module, words, _ = launch
    return (module.startswith(("verl.", "recipe.")), sum("=" in w.text or bool(w.marks) for w in words))


__all__ = ["find_launch", "launch_rank", "split_pasted"]
