"""``verl-mindspeed check-files FILE...``: check every launch file given (pre-commit, CI).

A ``*.args`` file holds one launch argv (as ``check --args-file`` reads it); any other file (a
launch ``*.sh`` script) is checked when it runs a verl entry (``-m ...main_ppo``, a recipe's
``main_*``, ``verl-mindspeed run``) and skipped otherwise. Exit status: the worst of the files.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from ..errors import EvaluationError
from ..i18n import render, tr
from ..launch import read_launch_file
from ..report import SCHEMA_VERSION
from . import _annotate, _output
from ._args import UsageError, reason
from .check import add_check_options, check_one, output_format, validate_launch_argv

LAUNCH = re.compile(r"-m\s+[\w.]*main_\w+|verl-mindspeed\s+run\b|verl_mindspeed\.main_ppo")


def add_parser(sub: argparse._SubParsersAction, lang: str = "en") -> argparse.ArgumentParser:
    p = sub.add_parser(
        "check-files", allow_abbrev=False,
        help=render(tr("check launch files (*.args, launch *.sh scripts): for pre-commit and CI"), lang),
        description=render(tr("Check each file as 'check --args-file FILE' would; files that launch no verl entry "
                              "are skipped. Exit status: the worst of the files."), lang),
    )
    add_check_options(p, lang)
    p.add_argument("files", nargs="+", metavar="FILE", help=render(tr("launch files to check"), lang))
    p.set_defaults(run=run)
    return p


def is_launch_file(path: str) -> bool:
    if path.endswith(".args"):
        return True
    try:
        return bool(LAUNCH.search(Path(path).read_text(encoding="utf-8", errors="replace")))
    except OSError:
        return True  # let the check say why it cannot be read


def _one(path: str, ns: argparse.Namespace) -> tuple[int, dict[str, Any], str, list]:
    try:
        source = read_launch_file(path)
        validate_launch_argv(source.argv, [])
        code, payload, text, issues = check_one(source.argv, ns, source)
        return code, payload, text or "", issues
    except (UsageError, EvaluationError) as exc:
        message = render(exc.message if isinstance(exc, UsageError) else
                         tr("cannot evaluate this command: {reason}", reason=reason(exc)), ns.lang)
        return 2, {"schema_version": SCHEMA_VERSION, "ok": False, "exit_code": 2, "fatal": message}, message, []


def run(ns: argparse.Namespace) -> int:
    fmt = output_format(ns)
    checked = [p for p in ns.files if is_launch_file(p)]
    skipped = [p for p in ns.files if p not in checked]
    results = [(path, *_one(path, ns)) for path in checked]
    code = max((r[1] for r in results), default=0)
    if fmt == "json":
        print(_output.dump({"schema_version": SCHEMA_VERSION, "ok": code == 0, "exit_code": code,
                            "files": [{"path": path, **payload} for path, _, payload, _, _ in results],
                            "skipped": skipped}))
    elif fmt == "sarif":
        log = _annotate.sarif([(path, issues) for path, _, _, _, issues in results], ns.lang, code)
        for path, c, _, text, _ in results:
            if c == 2:
                log["runs"][0]["results"].append(_annotate.fatal_result(path, text))
        print(_output.dump(log))
    elif fmt == "github":
        for path, c, _, text, issues in results:
            lines = _annotate.github(issues, ns.lang, path) if c != 2 else [
                _annotate.github_command("error", text, file=path, title="cannot-evaluate")]
            if lines:
                print("\n".join(lines))
    else:
        for path, c, _, text, _ in results:
            print(f"== {path}")
            print(text if c != 2 else f"verl-mindspeed check-files: {text}")
            print()
    summary = tr("{n} file(s) checked: {n_fail} with errors, {n_bad} not evaluated; {n_skip} skipped (no verl launch)",
                 n=len(results), n_fail=sum(r[1] == 1 for r in results), n_bad=sum(r[1] == 2 for r in results),
                 n_skip=len(skipped))
    if fmt in ("text", "github"):
        print(render(summary, ns.lang))
    return code
