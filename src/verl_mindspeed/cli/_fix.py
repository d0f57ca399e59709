"""``check --fix`` / ``--fix-to FILE`` (and ``check-files --fix``): write the fixes into the launch file, show the
diff, and check the fixed file, whose verdict is the command's."""

from __future__ import annotations

import argparse
import difflib
from pathlib import Path
from typing import Any, Callable, Optional

from ..compose._edit import fix_file
from ..i18n import render, tr, trn
from ..launch import LaunchFile, read_launch_file
from . import _output
from ._args import UsageError


def write_fixes(path: str, source: LaunchFile, issues: list, target: Optional[str]) -> tuple[str, Any]:
    """The unified diff of the fixes written from ``path`` into ``target`` (``path`` itself when None), and the
    :class:`~verl_mindspeed.compose._edit.Fixed` result."""
    original = Path(path).read_text(encoding="utf-8")
    fixed = fix_file(source, original, issues)
    out = target or path
    diff = "".join(difflib.unified_diff(original.splitlines(keepends=True), fixed.text.splitlines(keepends=True),
                                        fromfile=path, tofile=out))
    if fixed.text != original or target:
        Path(out).write_text(fixed.text, encoding="utf-8")
    return diff, fixed


#: Rounds of fixes ``--fix`` writes at most: a fix can uncover the next error (a role's sizes, then its split).
ROUNDS = 4


def fix_rounds(path: str, source: LaunchFile, issues: list, target: str, recheck: Callable[[LaunchFile], tuple]
               ) -> tuple[int, int, str, LaunchFile, tuple]:
    """Write the fixes of ``issues`` from ``path`` into ``target``, check it again (``recheck`` on the written file,
    returning ``(code, payload, text, issues)``) and write the fixes that check finds next, until no error has a fix
    left to write (at most :data:`ROUNDS`). Returns (fixes applied, rounds, the whole diff, the written file, the
    last check)."""
    original = Path(path).read_text(encoding="utf-8")
    read, applied, rounds = path, 0, 0
    while True:
        _diff, fixed = write_fixes(read, source, issues, target)
        applied, rounds = applied + len(fixed.applied), rounds + 1
        source = read_launch_file(target)
        result = recheck(source)
        issues = result[-1]
        if not fixed.applied or result[0] != 1 or rounds == ROUNDS:
            break
        read = target
    diff = "".join(difflib.unified_diff(original.splitlines(keepends=True),
                                        Path(target).read_text(encoding="utf-8").splitlines(keepends=True),
                                        fromfile=path, tofile=target))
    return applied, rounds, diff, source, result


def fix_and_check(ns: argparse.Namespace, source: Optional[LaunchFile], issues: list, check_one: Callable,
                  fmt: str) -> int:
    """Write the fixes of ``issues`` into the launch file, check it again and write the fixes that check finds next,
    until no error has a fix left to write (at most :data:`ROUNDS`); print the whole diff and report ``check_one``
    on the fixed file in ``fmt``: its verdict is the exit status."""
    if source is None or not ns.args_file:
        raise UsageError(tr("--fix writes the fixes into the launch file: give it with --args-file"))
    if ns.argv:
        raise UsageError(tr("--fix writes into the launch file only: give the whole launch in --args-file"))
    target = ns.fix_to or ns.args_file
    applied, rounds, diff, again, (code, payload, text, issues) = fix_rounds(
        ns.args_file, source, issues, target, lambda fixed: check_one(list(fixed.argv), ns, fixed))
    left = sum(i.severity == "error" for i in issues)
    summary = render(trn("fixed {n} error in {file}; {left} without a fix", "fixed {n} errors in {file}; {left} "
                         "without a fix", applied, n=applied, file=target, left=left), ns.lang) if applied else \
        render(tr("nothing to fix in {file}", file=ns.args_file), ns.lang)
    if fmt == "json":
        payload = {**payload, "fixed": {"file": target, "applied": applied, "rounds": rounds,
                                        "without_fix": left,
                                        "diff": diff}}
    elif fmt == "text":
        print(diff + summary + "\n" if diff else summary + "\n")
    _output.emit(payload, text, fmt, issues, ns.lang, target, list(again.argv))
    return code
