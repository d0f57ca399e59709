"""Launch files for ``--args-file``: one argument per line, or a real shell script.

A *script* (``.sh``/``.bash``, a ``#!`` line, or any file holding a ``python -m`` launch) is read the way bash
would run it up to its launch line: ``\\`` continuations, quotes, comments, ``X=1`` / ``export X=1`` /
``X=${X:-default}`` assignments (the environment first, as in bash), ``source FILE`` (read when found), arrays
``A=(...)`` spliced with ``"${A[@]}"``, ``$((arithmetic))``. The launch is the ``python3 -m MODULE ...`` command
(also ``python``, ``torchrun ... -m``, ``coverage run ... -m``, ``ray job submit ... -- python3 -m``); its module
becomes the entry. Words are split by :mod:`shlex`; expansions are done by :mod:`._shell`. Every argument keeps
its file and line.

Anything else is the *args* format: one argument per line, exactly as the shell passes it, ``#`` comments (a
``# argv of: python3 -m MODULE`` header documents the launch; the entry is ``--entry``'s, main_ppo by default, so
that an args file adapted to main_ppo from a recipe's launch stays checkable).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional

from ..errors import EvaluationError, Issue, Location, NoLaunchLine
from ..i18n import tr
from ..overrides import split_override
from ._launchline import find_launch, launch_rank
from ._lex import lex
from ._shell import Expander, Word

_OPERATORS = {";", "&&", "||", "|", "&", ";;", "|&"}
_REDIRECTS = {">", ">>", "<", ">&", "&>", "<&", ">|", "<>", "&>>"}
_RESERVED = {"then", "do", "else", "elif", "if", "while", "until", "!", "{", "}", "time", "exec", "nohup", "fi",
             "done"}
_DECLARE = {"export", "declare", "local", "readonly", "typeset"}
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?)=(.*)$", re.S)


@dataclass
class LaunchFile:
    """The argv a launch file holds, where each argument was written, and what reading it found."""

    path: str
    argv: list[str]
    locations: list[Location]
    entry: Optional[str] = None
    """The module of the script's ``python -m`` line (None for the args format)."""
    issues: list[Issue] = field(default_factory=list)
    kind: str = "args"


def read_launch_file(path: str, environ: Optional[Mapping[str, str]] = None) -> LaunchFile:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EvaluationError(tr("cannot read {path}: {error}", path=path, error=exc)) from exc
    lines = text.splitlines()
    scripted = path.endswith((".sh", ".bash")) or (lines and lines[0].startswith("#!"))
    script = _Script(path, lines, dict(os.environ if environ is None else environ))
    launch = script.run()
    if launch is not None:
        return launch
    if scripted:
        raise NoLaunchLine(tr("{path}: no 'python3 -m <module> ...' launch line found", path=path))
    argv, locations = [], []
    for number, line in enumerate(lines, 1):
        if line.strip() and not line.lstrip().startswith("#"):
            argv.append(line.strip())
            locations.append(Location(path, number))
    return LaunchFile(path, argv, locations)


class _Script:
    def __init__(self, path: str, lines: list[str], environ: dict[str, str], depth: int = 0):
        self.path, self.lines, self.depth = path, lines, depth
        self.shell = Expander(environ)
        self.launches: list[tuple[str, list[Word], int]] = []
        self.unread: list[tuple[str, int]] = []
        """Files the script sources that were not found here (their variables are unknown), with the line."""

    def run(self) -> Optional[LaunchFile]:
        i = 0
        while i < len(self.lines):
            unit, i = self._unit(i)
            words = self._words(unit)
            delimiter = self._commands(words)
            if delimiter:  # a here-document: its body is not shell code
                while i < len(self.lines) and self.lines[i].strip() != delimiter:
                    i += 1
                i += 1
        if not self.launches:
            return None
        module, words, line = max(self.launches, key=launch_rank)
        return self._launch_file(module, words)

    # --- logical lines --------------------------------------------------------------------------
    def _unit(self, i: int) -> tuple[list[tuple[int, str]], int]:
        """Physical lines forming one logical line: continuations, open quotes, open ``(`` of an array."""
        unit: list[tuple[int, str]] = []
        while i < len(self.lines):
            unit.append((i + 1, self.lines[i]))
            i += 1
            stripped = self.lines[i - 1].rstrip()
            if _continues(stripped):
                continue
            if not _balanced("\n".join(_joinable(t) for _, t in unit)):
                continue
            break
        return unit, i

    def _words(self, unit: list[tuple[int, str]]) -> list[Word]:
        """Expanded words with their lines; operators are words too (their text is the operator)."""
        words: list[Word] = []
        for line, text in _chunks(unit):
            expanded = self.shell.expand(text, line)
            try:
                tokens = lex(expanded, commenters="")
            except ValueError:
                tokens = expanded.split()
            for token in tokens:
                plain, marks = self.shell.take(token)
                words.append(Word(plain, line, marks))
        return words

    # --- commands -------------------------------------------------------------------------------
    def _commands(self, words: list[Word]) -> Optional[str]:
        command: list[Word] = []
        delimiter = None
        k = 0
        while k < len(words):
            word = words[k]
            if word.text == "<<" or word.text == "<<-":
                delimiter = words[k + 1].text if k + 1 < len(words) else None
                k += 2
                continue
            if word.text in _OPERATORS and not word.marks:
                self._command(command)
                command = []
            elif word.text in _REDIRECTS and not word.marks:
                if command and command[-1].text.isdigit():
                    command.pop()
                k += 1  # the redirection's target
            elif word.text.endswith("=") and k + 1 < len(words) and words[k + 1].text in ("(", "()"):
                end = k + 1 if words[k + 1].text == "()" else \
                    next((j for j in range(k + 2, len(words)) if words[j].text == ")"), len(words))
                self._array(word.text[:-1], words[k + 2:end])
                k = end
            else:
                command.append(word)
            k += 1
        self._command(command)
        return delimiter

    def _array(self, name: str, items: list[Word]) -> None:
        append = name.endswith("+")
        name = name.rstrip("+")
        spliced = [w for item in items for w in self._splice(item)]
        self.shell.arrays[name] = (self.shell.arrays.get(name, []) if append else []) + spliced
        self.shell.variables.pop(name, None)

    def _command(self, words: list[Word]) -> None:
        while words and words[0].text in _RESERVED:
            words = words[1:]
        if not words:
            return
        declared = words[0].text in _DECLARE
        body = [w for w in words[1:] if not w.text.startswith("-")] if declared else words
        assignments = [w for w in body if _ASSIGNMENT.match(w.text)]
        if declared or len(assignments) == len(body):
            for word in assignments:
                name, plus, value = _ASSIGNMENT.match(word.text).groups()
                before = self.shell.variables.get(name, "") if plus else ""
                self.shell.variables[name] = before + value
                self.shell.taint[name] = word.marks
            return
        if words[0].text in ("source", ".") and len(words) > 1:
            self._source(words[1])
            return
        if words[0].text == "unset":
            for word in words[1:]:
                self.shell.variables.pop(word.text, None)
                self.shell.arrays.pop(word.text, None)
            return
        found = find_launch(words)
        if found is not None:
            self.launches.append(found)

    def _source(self, word: Word) -> None:
        """``source FILE`` / ``. FILE``: its assignments are read as bash would run them (FILE relative to the
        working folder, else to the script's folder); a file not found here is remembered for the messages."""
        given = Path(word.text).expanduser()
        candidates = [given] if given.is_absolute() else [given, Path(self.path).parent / given]
        found = next((c for c in candidates if c.is_file()), None)
        if found is None or self.depth >= 8:
            self.unread.append((word.text, word.line))
            return
        try:
            lines = found.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            self.unread.append((word.text, word.line))
            return
        sourced = _Script(str(found), lines, {}, self.depth + 1)
        sourced.shell = self.shell  # one shell: what the sourced file assigns, the script sees
        sourced.run()
        self.unread += sourced.unread

    # --- the launch -----------------------------------------------------------------------------
    def _splice(self, word: Word) -> list[Word]:
        """``"${A[@]}"`` -> the array's words (each at its own line); ``"$@"`` -> nothing."""
        for mark in word.marks:
            if mark.kind == "array":
                items = self.shell.arrays.get(mark.name, [])
                return [w for item in items for w in self._splice(item)]
            if mark.kind == "drop" and not word.text:
                return []
        return [word]

    def _launch_file(self, module: str, words: list[Word]) -> LaunchFile:
        argv, locations, issues = [], [], []
        for word in (w for raw in words for w in self._splice(raw)):
            argv.append(word.text)
            locations.append(Location(self.path, word.line))
            for mark in word.marks:
                issue = _mark_issue(word.text, mark, self.path, self.unread)
                if issue is not None:
                    issues.append(issue)
        return LaunchFile(self.path, argv, locations, module, issues, "script")


def _mark_issue(arg: str, mark, path: str, unread: list[tuple[str, int]] = ()) -> Optional[Issue]:
    key = split_override(arg)[1] or arg
    where = Location(path, mark.line)
    if mark.kind == "unset":
        hint = tr("set {name} in the environment or give it a default in the script: ${{{name}:-value}}",
                  name=mark.name)
        if unread:
            files = ", ".join(f"{name} (line {line})" for name, line in unread)
            hint = tr("the script sources {files}, not found here, so what it sets is unknown to the check: run the "
                      "check where that file is, or set {name} in the environment", files=files, name=mark.name)
        return Issue("error", key, tr("${name} is not set (no value in the script or the environment, no default): "
                                      "the argument becomes '{arg}'", name=mark.name, arg=arg),
                     hint, rule="unset-variable", location=where)
    if mark.kind in ("command", "unsupported"):
        return Issue("note", key, tr("{text} is not run by the check; the argument is checked as '{arg}'",
                                     text=mark.text, arg=arg), rule="shell-not-run", location=where)
    return None


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1 or line.endswith(("|", "&&", "||"))


def _joinable(text: str) -> str:
    stripped = text.rstrip()
    return stripped[:-1] if _continues(stripped) and stripped.endswith("\\") else text


#: One token of a shell line for the balance check: a whole quoted string, an escaped character, a comment, a
#: parenthesis, a quote left open (alone), or a run of anything else.
_SCAN = re.compile(r"""'[^']*'|"(?:[^"\\]|\\.)*"|\\.|(?:(?<=\s)|^)#[^\n]*|[()]|'|"|[^'"\\()#]+|#""", re.S | re.M)


def _balanced(text: str, parens: bool = True) -> bool:
    """No open quote (and, with ``parens``, no ``(`` left open, as in an array spanning lines). One regular scan:
    splitting the text into shell words (shlex, a character at a time) for this cost a tenth of a check."""
    depth = 0
    for match in _SCAN.finditer(text):
        token = match.group(0)
        if token in ("'", '"'):
            return False  # a quote that does not close
        depth += (token == "(") - (token == ")")
    return depth <= 0 if parens else True


def _chunks(unit: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The unit's physical lines without continuation backslashes, merged where a quote (or a word) spans lines."""
    chunks: list[tuple[int, str]] = []
    for index, (line, text) in enumerate(unit):
        body = _joinable(text)
        glued = bool(chunks) and _glued(unit[index - 1][1]) and not text[:1].isspace()
        if chunks and (glued or not _balanced(chunks[-1][1], parens=False)):
            sep = "" if glued else "\n"
            chunks[-1] = (chunks[-1][0], chunks[-1][1] + sep + body)
        else:
            chunks.append((line, body))
    return chunks


def _glued(previous: str) -> bool:
    """``abc\\`` + newline + ``def`` is one word ``abcdef`` in bash."""
    stripped = previous.rstrip()
    return _continues(stripped) and stripped.endswith("\\") and len(stripped) > 1 and not stripped[-2].isspace() \
        and previous == stripped


__all__ = ["LaunchFile", "read_launch_file"]
