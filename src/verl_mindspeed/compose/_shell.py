"""Shell parameter expansion for launch scripts, ahead of :mod:`shlex`.

:class:`Expander` rewrites one balanced chunk of a script the way bash expands it (``$VAR``, ``${VAR}``,
``${VAR:-default}``, ``${VAR:=default}``, ``${VAR:+alt}``, ``${VAR,,}``, ``${VAR##*/}``, ``${ARR[@]}``,
``$((arithmetic))``; comments dropped), leaving quotes for :mod:`shlex` to remove and split on. What
cannot be known without running the script travels inside the words as markers (private-use characters
that shlex keeps inside a word): an unset variable, a command substitution (``$(date)``, not run), an
array to splice in, or ``"$@"`` (no words). :meth:`Expander.take` strips them from a finished word and
says which were in it, so each argument reports its own unset variables at their own lines.
"""

from __future__ import annotations

import ast
import fnmatch
import operator
import re
import shlex
from dataclasses import dataclass, field
from typing import Optional

OPEN, CLOSE = "\ue000", "\ue001"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MARK = re.compile(f"{OPEN}(\\d+){CLOSE}")
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")


@dataclass(frozen=True)
class Mark:
    kind: str
    """``unset`` (a variable with no value and no default), ``command`` (a command substitution that is not
    run), ``array`` (splice the array ``name`` here), ``drop`` (``$@``: no words) or ``unsupported``."""
    name: str
    line: int
    text: str = ""


@dataclass
class Word:
    text: str
    line: int
    marks: tuple[Mark, ...] = ()


@dataclass
class Expander:
    variables: dict[str, str]
    arrays: dict[str, list[Word]] = field(default_factory=dict)
    taint: dict[str, tuple[Mark, ...]] = field(default_factory=dict)
    """Marks a variable's value carries (an unset variable used in its assignment)."""
    marks: list[Mark] = field(default_factory=list)

    def mark(self, kind: str, name: str, line: int, text: str = "") -> str:
        self.marks.append(Mark(kind, name, line, text))
        return f"{OPEN}{len(self.marks) - 1}{CLOSE}"

    def take(self, text: str) -> tuple[str, tuple[Mark, ...]]:
        """A shlex word without its markers, and the marks it held."""
        found = tuple(self.marks[int(m)] for m in _MARK.findall(text))
        return _MARK.sub("", text), found

    def expand(self, text: str, line: int) -> str:
        """``text`` with every expansion done and comments removed; quotes kept for shlex."""
        out: list[str] = []
        quote = ""
        word_start = 0
        i = 0
        while i < len(text):
            c = text[i]
            if quote == "'":
                out.append(c)
                quote = "" if c == "'" else quote
                i += 1
                continue
            if c == "\\" and i + 1 < len(text):
                nxt = text[i + 1]
                out.append(nxt if quote == '"' and nxt in "$`" else c + nxt)
                i += 2
                continue
            if c in "'\"" and (not quote or c == quote):
                quote = "" if quote else c
                out.append(c)
                i += 1
                continue
            if not quote and c == "#" and (not out or out[-1][-1:] in " \t\n;|&()"):
                while i < len(text) and text[i] != "\n":
                    i += 1
                continue
            if not quote and c in " \t\n":
                word_start = len(out) + 1
            if c == "$" or c == "`":
                split = not quote and not _ASSIGN.match("".join(out[word_start:]))
                value, i = self._dollar(text, i, line, quote, split)
                out.append(value)
                continue
            out.append(c)
            i += 1
        return "".join(out)

    # --- one expansion ------------------------------------------------------------------------
    def _dollar(self, text: str, i: int, line: int, quote: str, split: bool) -> tuple[str, int]:
        if text[i] == "`":
            end = text.find("`", i + 1)
            end = len(text) if end < 0 else end
            return self.mark("command", "", line, text[i:end + 1]), end + 1
        rest = text[i + 1:]
        if rest.startswith("(("):
            end = _matching(text, i + 1, "(", ")")
            return self._emit(self._arith(text[i + 3:end - 1], line), quote, split), end + 1
        if rest.startswith("("):
            end = _matching(text, i + 1, "(", ")")
            return self.mark("command", "", line, text[i:end + 1]), end + 1
        if rest.startswith("{"):
            end = _matching(text, i + 1, "{", "}")
            return self._braced(text[i + 2:end], line, quote, split), end + 1
        if rest[:1] in ("@", "*"):
            return self.mark("drop", "@", line), i + 2
        if rest[:1].isdigit() or rest[:1] in ("#", "?", "$", "!", "-"):
            name = rest[:1]
            return self._emit(self._value(name, line, None), quote, split), i + 2
        match = _NAME.match(rest)
        if not match:
            return "$", i + 1
        name = match.group(0)
        return self._emit(self._value(name, line, None), quote, split), i + 1 + len(name)

    def _braced(self, body: str, line: int, quote: str, split: bool) -> str:
        array = re.fullmatch(r"(#?)([A-Za-z_][A-Za-z0-9_]*)\[([@*]|\d+)\]", body)
        if array:
            count, name, index = array.groups()
            items = self.arrays.get(name)
            if items is None:
                return self._emit(self._value(name, line, None), quote, split)
            if count:
                return str(len(items))
            if index in "@*":
                return self.mark("array", name, line)
            k = int(index)
            return self._emit(items[k].text if k < len(items) else "", quote, split)
        if body in ("@", "*"):
            return self.mark("drop", "@", line)
        match = re.match(r"#?([A-Za-z_][A-Za-z0-9_]*|\d)", body)
        if not match:
            return self.mark("unsupported", body, line, "${" + body + "}")
        name, op = match.group(1), body[match.end():]
        if body.startswith("#"):
            return str(len(self._value(name, line, "")))
        current = self.variables.get(name)
        if op == "":
            return self._emit(self._value(name, line, None), quote, split)
        for sign in (":-", ":=", ":+", "-", "=", "+"):
            if op.startswith(sign):
                word = self._word(op[len(sign):], line)
                is_set = current is not None and (current != "" or ":" not in sign)
                if sign.endswith("+"):
                    return self._emit(word if is_set else "", quote, split)
                if is_set:
                    return self._emit(self._value(name, line, None), quote, split)
                if sign.endswith("="):
                    self.variables[name] = word
                return self._emit(word, quote, split)
        value = self._value(name, line, None)
        plain, marks = self.take(value)
        changed = _transform(plain, op)
        if changed is None:
            return self.mark("unsupported", body, line, "${" + body + "}")
        return self._emit(changed + self._markers(marks), quote, split)

    def _word(self, raw: str, line: int) -> str:
        """The word of ``${X:-word}``: expanded, quotes removed."""
        expanded = self.expand(raw, line)
        try:
            return " ".join(shlex.split(expanded, comments=False, posix=True))
        except ValueError:
            return expanded

    def _value(self, name: str, line: int, default: Optional[str]) -> str:
        value = self.variables.get(name)
        if value is None:
            if name in self.arrays:
                items = self.arrays[name]
                return items[0].text if items else ""
            return default if default is not None else self.mark("unset", name, line)
        return value + self._markers(self.taint.get(name, ()))

    def _emit(self, value: str, quote: str, split: bool) -> str:
        """A value inserted where the expansion was: escaped for double quotes, one word in an assignment,
        else split on blanks as bash splits an unquoted expansion. Markers move to the end of the value."""
        plain, marks = self.take(value)
        tail = self._markers(marks)
        if quote == '"':
            return plain.replace("\\", "\\\\").replace('"', '\\"') + tail
        if not split:
            return (shlex.quote(plain) if plain else "") + tail
        return " ".join(shlex.quote(p) for p in plain.split()) + tail

    def _markers(self, marks: tuple[Mark, ...]) -> str:
        return "".join(f"{OPEN}{self.marks.index(m)}{CLOSE}" for m in marks)

    def _arith(self, expr: str, line: int) -> str:
        expanded, _ = self.take(self.expand(expr, line))
        text = _NAME.sub(lambda m: self._number(m.group(0)), expanded)
        try:
            return str(_evaluate(ast.parse(text.strip(), mode="eval").body))
        except (SyntaxError, ValueError, ZeroDivisionError, TypeError, KeyError):
            return self.mark("unsupported", expr, line, f"$(({expr}))")

    def _number(self, name: str) -> str:
        value = self.take(self.variables.get(name, "0"))[0].strip() or "0"
        return value if re.fullmatch(r"-?\d+", value) else "0"


def _matching(text: str, start: int, opening: str, closing: str) -> int:
    """Index of the bracket closing the one at ``start`` (quotes inside are skipped)."""
    depth, quote, i = 0, "", start
    while i < len(text):
        c = text[i]
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == opening:
            depth += 1
        elif c == closing:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(text) - 1


def _transform(value: str, op: str) -> Optional[str]:
    """``,,`` ``^^`` ``#pat`` ``##pat`` ``%pat`` ``%%pat`` ``/pat/rep`` ``//pat/rep`` on a value; None if other."""
    if op in (",,", ","):
        return value.lower() if op == ",," else value[:1].lower() + value[1:]
    if op in ("^^", "^"):
        return value.upper() if op == "^^" else value[:1].upper() + value[1:]
    for sign, longest, prefix in (("##", True, True), ("#", False, True), ("%%", True, False), ("%", False, False)):
        if op.startswith(sign):
            pattern = op[len(sign):]
            cuts = range(len(value) + 1)
            cuts = sorted(cuts, reverse=longest) if prefix else sorted(cuts, reverse=not longest)
            for cut in cuts:
                part = value[:cut] if prefix else value[cut:]
                if fnmatch.fnmatchcase(part, pattern):
                    return value[cut:] if prefix else value[:cut]
            return value
    if op.startswith("/"):
        every = op.startswith("//")
        pattern, _, repl = op[2 if every else 1:].partition("/")
        return value.replace(pattern, repl) if every else value.replace(pattern, repl, 1)
    return None


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Mod: operator.mod,
        ast.Pow: operator.pow, ast.FloorDiv: operator.floordiv}


def _evaluate(node: ast.expr) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _evaluate(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp):
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Div):  # bash: integer division, truncated toward zero
            return int(left / right) if right else operator.floordiv(left, right)
        if type(node.op) in _OPS:
            return _OPS[type(node.op)](left, right)
    raise ValueError("not integer arithmetic")


__all__ = ["Expander", "Mark", "Word"]
