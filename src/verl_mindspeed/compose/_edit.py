"""``check --fix``: every error's fix written into the launch file itself, where each argument was written.

A fix line is pasted the way a person edits the file: a word of the fix that sets a key the launch already sets
replaces that argument where it is written (in the script's line, quotes and all, or its own line in an args file);
``~key`` deletes the argument that sets ``key``; a fix for an argument Hydra refuses as written (``Issue.replaces``)
goes in its place; the arguments a fix deletes (``Issue.deletes``) are taken out; any other word is added after the
launch's last argument. In a script the token is found in its line by the key it sets, whatever its value's
variables expand to; a word is written shell-quoted there, and as it is in an args file.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Iterable, Optional

from ..errors import Issue
from ..overrides import split_override
from ._script import LaunchFile


@dataclass
class Fixed:
    text: str
    """The file's new text."""
    applied: list[Issue] = field(default_factory=list)
    skipped: list[Issue] = field(default_factory=list)
    """Errors with no fix to write (or whose argument could not be found in the file)."""


def _key(word: str) -> str:
    return split_override(word)[1] if not word.startswith("--") else word.partition("=")[0]


@dataclass
class _Plan:
    """What the fixes do to the launch's arguments, before any file text is touched."""

    ops: dict[int, list[str]] = field(default_factory=dict)
    """Argument index -> the words written in its place (``[]``: deleted)."""
    added: list[str] = field(default_factory=list)
    """Words added after the launch's last argument."""
    quoted: set[int] = field(default_factory=set)
    """Arguments whose word the shell split at its spaces (an unquoted variable): quoted back where written."""


def fix_file(launch: LaunchFile, text: str, issues: Iterable[Issue]) -> Fixed:
    """``text`` (the file ``launch`` was read from) with the fix of every error of ``issues`` written in."""
    out = Fixed(text)
    plan = _plan(list(launch.argv), issues, out)
    if plan.ops or plan.added or plan.quoted:
        out.text = _write(launch, text, plan)
    return out


def _plan(argv: list[str], issues: Iterable[Issue], out: Fixed) -> _Plan:
    plan, split_off = _Plan(), set()
    for issue in issues:
        if issue.severity != "error":
            continue
        if not issue.override and not issue.deletes:
            out.skipped.append(issue)
            continue
        out.applied.append(issue)
        words = shlex.split(issue.override) if issue.override else []
        if issue.replaces in argv and words == [" ".join([issue.replaces, *issue.deletes])]:
            plan.quoted.add(argv.index(issue.replaces))  # a value the shell split: quoted back where it is written
            split_off.update(issue.deletes)
            continue
        for index in (i for i, a in enumerate(argv) if a in issue.deletes):  # each argument that writes it
            plan.ops[index] = []
        if issue.replaces in argv and words:
            plan.ops[argv.index(issue.replaces)] = words
            words = []
        for word in words:
            same = [i for i, a in enumerate(argv) if "=" in a and _key(a) == _key(word) and i not in plan.ops]
            if word.startswith("~"):
                plan.ops.update({i: [] for i in same})
            elif same:
                keep_plus = argv[same[-1]].startswith("+") and not word.startswith("+")
                plan.ops[same[-1]] = ["++" + word] if keep_plus else [word]
            else:
                plan.added.append(word)
    plan.ops = {i: w for i, w in plan.ops.items() if not (w == [] and argv[i] in split_off)}
    return plan


def _write(launch: LaunchFile, text: str, plan: _Plan) -> str:
    """The file's text with ``plan`` written in, each change in the line its argument was written on."""
    lines, argv = text.split("\n"), launch.argv
    at = {i: loc.line for i, loc in enumerate(launch.locations) if loc is not None and loc.file == launch.path}
    scripted = launch.kind == "script"
    edits: dict[int, list[tuple[int, int, str]]] = {}  # line -> (start, end, replacement)
    for index, words in plan.ops.items():
        line = at.get(index)
        if line is None:
            continue
        if not scripted:  # one argument a line: the line is the argument
            edits.setdefault(line, []).append((0, len(lines[line - 1]), "\n".join(words)))
            continue
        span = _token(lines[line - 1], argv[index])
        if span is not None:
            edits.setdefault(line, []).append((*span, _written(lines[line - 1][span[0]:span[1]], argv[index], words)))
    for index in plan.quoted:
        line = at.get(index)
        span = _token(lines[line - 1], argv[index]) if line else None
        if span is not None and lines[line - 1][span[0]] not in "'\"":
            edits.setdefault(line, []).append((*span, f'"{lines[line - 1][span[0]:span[1]]}"'))
    if plan.added:
        last = max((i for i in at if i not in plan.ops or plan.ops[i]), default=None)
        if not scripted or last is None:
            end = len(lines) - 1 if lines and lines[-1] == "" else len(lines)  # before the final newline
            lines[end:end] = plan.added
        else:
            line = at[last]
            span = _token(lines[line - 1], argv[last])
            end = span[1] if span else len(lines[line - 1].rstrip().rstrip("\\").rstrip())
            edits.setdefault(line, []).append((end, end, " " + " ".join(_shell(w) for w in plan.added)))
    before = list(lines)
    for line, changes in edits.items():
        text_line = lines[line - 1]
        for start, end, new in sorted(changes, reverse=True):
            text_line = text_line[:start] + new + text_line[end:]
        lines[line - 1] = text_line
    return "\n".join(_tidy(lines, before, scripted))


def _written(token: str, arg: str, words: list[str]) -> str:
    """The words in the script: a fix that keeps the argument's value (``+key`` -> ``++key``, a key renamed) keeps
    its text as written (``${VAR}`` stays a variable); any other is written out."""
    if len(words) == 1 and "=" in words[0] and "=" in token and split_override(words[0])[2] == split_override(arg)[2]:
        quote = token[0] if token[0] in "'\"" else ""
        body = token[len(quote):]
        return quote + words[0].partition("=")[0] + body[body.index("="):]
    return " ".join(_shell(w) for w in words)


def _shell(word: str) -> str:
    """A word as a script writes it: bare when the shell leaves it as it is, else in double quotes when that is
    enough (a Hydra value in single quotes: "k='a,b'"), else in shlex's single quotes."""
    if shlex.quote(word) == word:
        return word
    return f'"{word}"' if not set(word) & set('"$`\\!') else shlex.quote(word)


def _token(line: str, arg: str) -> Optional[tuple[int, int]]:
    """Where the shell word that sets ``arg``'s key is in ``line``: (start, end), quotes included."""
    key = _key(arg)
    for match in re.finditer(r"(?:(?<=\s)|^)[\"']?[+~]*" + re.escape(key) + r"(?==|[\"'\s]|$)", line):
        start, end, quote = match.start(), match.start(), None
        while end < len(line):
            char = line[end]
            if quote:
                quote = None if char == quote else quote
            elif char in "'\"":
                quote = char
            elif char == "\\" and end + 1 < len(line):
                end += 1
            elif char.isspace() or (char == "\\" and end + 1 == len(line)):
                break
            end += 1
        return start, end
    return None


def _tidy(lines: list[str], before: list[str], scripted: bool) -> list[str]:
    """Drop the lines an edit emptied: a script line left with nothing but its continuation (and, when it ended the
    command, the continuation of the line before it, which would join the next command); an args file's line."""
    out: list[str] = []
    for line, old in zip(lines, before):
        emptied = line.strip() in ("", "\\") and old.strip() not in ("", "\\")
        if not emptied:
            out.append(line)
            continue
        if scripted and not line.rstrip().endswith("\\") and out and out[-1].rstrip().endswith("\\"):
            out[-1] = out[-1].rstrip()[:-1].rstrip()
    return out + lines[len(before):]


__all__ = ["Fixed", "fix_file"]
