"""``verl-mindspeed check-files FILE...``: check every launch file given (pre-commit, CI).

A ``*.args`` file holds one launch argv (as ``check --args-file`` reads it); any other file (a
launch ``*.sh`` script) is checked when it runs a verl entry (``-m ...main_ppo``, a recipe's
``main_*``, ``verl-mindspeed run``) and skipped otherwise. Exit status: the worst of the files.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any, Optional

from ..compose._memo import composed_once
from ..errors import EvaluationError
from ..i18n import render, tr, trn
from ..launch import LaunchFile, read_launch_file
from ..report import SCHEMA_VERSION
from . import _annotate, _output
from ._args import UsageError, reason
from .check import add_check_options, check_one, output_format, validate_launch_argv

RUN = re.compile(r"verl-mindspeed\s+run\b")
#: Module prefixes of a verl launch: verl's own entries (main_ppo, the experimental one-step-off and fully-async
#: mains, sft...), recipes, and verl-mindspeed's launcher.
ENTRY_PREFIXES = ("verl.", "recipe.", "verl_mindspeed.")
#: Top-level sections of verl's trainer config: a launch that overrides them runs a verl trainer, whatever its module.
VERL_SECTIONS = ("actor_rollout_ref.", "critic.", "algorithm.", "trainer.", "data.")


def add_parser(sub: argparse._SubParsersAction, lang: str = "en") -> argparse.ArgumentParser:
    p = sub.add_parser(
        "check-files", allow_abbrev=False,
        help=render(tr("check launch files (*.args, launch *.sh scripts): for pre-commit and CI"), lang),
        description=render(tr("Check each file as 'check --args-file FILE' would; files that launch no verl entry "
                              "are skipped. Exit status: the worst of the files."), lang),
    )
    add_check_options(p, lang)
    p.add_argument("--full", action="store_true", help=render(tr(
        "the whole text report of each file (default: only its problems and verdict, as --quiet)"), lang))
    p.add_argument("files", nargs="+", metavar="FILE", help=render(tr("launch files to check"), lang))
    p.add_argument("--fix", action="store_true", help=render(tr(
        "write every error's fix into each launch file, print the diffs, then check the fixed files"), lang))
    p.set_defaults(run=run)
    return p


def skip_reason(path: str, launch: Optional[LaunchFile] = None) -> Optional[Any]:
    """Why a file is not a verl launch (None: check it). ``*.args`` files are always launches; a script is one
    when its ``python -m`` line runs a verl entry, or when it runs ``verl-mindspeed run``. ``launch``: the file as
    already read."""
    if path.endswith(".args"):
        return None
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None  # the check says why it cannot be read
    if launch is None:
        try:
            launch = read_launch_file(path)
        except EvaluationError:
            launch = None
    if launch is not None and launch.entry is None:
        return None  # one argument per line: the args format
    if launch is not None and (launch.entry.startswith(ENTRY_PREFIXES) or _verl_overrides(launch.argv)):
        return None
    if RUN.search(text):
        return None
    if launch is None:
        return tr("no 'python3 -m <module> ...' launch line")
    return tr("launches {module}, not a verl entry", module=launch.entry)


def _verl_overrides(argv: list[str]) -> bool:
    """Whether a launch of another module (``python3 -m main_gkd`` run inside a recipe folder) writes verl's
    config: a recipe entry run by its short name is still a verl launch."""
    return any(a.lstrip("+~").startswith(VERL_SECTIONS) for a in argv)


def _read(path: str) -> Optional[LaunchFile]:
    try:
        return read_launch_file(path)
    except EvaluationError:
        return None  # _one reads it again and says why


def _one(path: str, ns: argparse.Namespace, source: Optional[LaunchFile] = None) -> tuple[int, dict[str, Any], str,
                                                                                           list]:
    try:
        source = source or read_launch_file(path)
        validate_launch_argv(source.argv, [])
        code, payload, text, issues = check_one(source.argv, ns, source)
        return code, payload, text or "", issues
    except (UsageError, EvaluationError) as exc:
        message = render(exc.message if isinstance(exc, UsageError) else
                         tr("cannot evaluate this command: {reason}", reason=reason(exc)), ns.lang)
        return 2, {"schema_version": SCHEMA_VERSION, "ok": False, "exit_code": 2, "fatal": message}, message, []


def _fixed(result: tuple, ns: argparse.Namespace, source: Optional[LaunchFile], fmt: str) -> tuple:
    """A file's result after its fixes are written into it, round after round as ``check --fix`` does (a file with
    errors that could be read)."""
    from ._fix import fix_rounds

    path, code, _payload, _text, issues = result
    if code != 1 or source is None:
        return result
    _applied, _rounds, diff, _fixed_file, last = fix_rounds(path, source, issues, path, lambda _f: _one(path, ns))
    if diff and fmt == "text":
        print(diff)
    return (path, *last)


def run(ns: argparse.Namespace) -> int:
    fmt = output_format(ns)
    ns.quiet = not ns.full
    read = {p: _read(p) for p in ns.files}  # each file read once, for both the skip and the check
    reasons = {p: skip_reason(p, read[p]) for p in ns.files}
    checked = [p for p in ns.files if reasons[p] is None]
    skipped = [p for p in ns.files if p not in checked]
    with composed_once():  # verl's tree composed once for the files that share a config: each further file is cheap
        results = [(path, *_one(path, ns, read[path])) for path in checked]
        if getattr(ns, "fix", False):
            results = [_fixed(r, ns, read[r[0]], fmt) for r in results]
    code = max((r[1] for r in results), default=0)
    if fmt == "json":
        print(_output.dump({"schema_version": SCHEMA_VERSION, "ok": code == 0, "exit_code": code,
                            "files": [{"path": path, **payload} for path, _, payload, _, _ in results],
                            "skipped": skipped,
                            "skipped_why": {p: render(reasons[p], ns.lang) for p in skipped}}))
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
    summary = trn("{n} file checked: {n_fail} with errors, {n_bad} not evaluated; {n_skip} skipped (no verl launch)",
                  "{n} files checked: {n_fail} with errors, {n_bad} not evaluated; {n_skip} skipped (no verl launch)",
                  len(results), n=len(results), n_fail=sum(r[1] == 1 for r in results),
                  n_bad=sum(r[1] == 2 for r in results), n_skip=len(skipped))
    if fmt == "text":
        for path in skipped:
            print(render(tr("skipped {path}: {why}", path=path, why=reasons[path]), ns.lang))
    elif fmt == "github":
        for path in skipped:
            print(_annotate.github_command("notice", render(tr("skipped: {why}", why=reasons[path]), ns.lang),
                                           file=path, title="skipped"))
    if fmt in ("text", "github"):
        print(render(summary, ns.lang))
    return code
