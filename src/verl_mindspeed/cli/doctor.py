"""``verl-mindspeed doctor LOG``: a failed run's log -> the raise site, the launch key at fault and its fix.

``LOG`` is the log as saved (a file, or ``-`` for standard input), whole or cut. The launch that failed may follow
(``--args-file FILE``, or its arguments after the log): ``check`` then replays it and a cause is *confirmed* when
``check`` reproduces it on that key and its fix clears it. Exit 0: a cause was found (an override at fault, or what
failed instead: a package's version, the environment, the machine); 1: the log holds a failure no cause was found
for; 2: the log holds no failure, or cannot be read.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from ..doctor import Diagnosis, diagnose
from ..errors import NoLaunchLine
from ..i18n import render, tr, trn, trp
from ..launch import read_launch_file
from ..report import SCHEMA_VERSION
from . import _args, _output, _upstream
from ._args import UsageError, add_common, add_judging_options, add_stack_options


def add_parser(sub: argparse._SubParsersAction, lang: str = "en") -> argparse.ArgumentParser:
    say = lambda text: render(text, lang)  # noqa: E731
    p = sub.add_parser(
        "doctor", allow_abbrev=False,
        help=say(tr("read a failed run's log: the raise site, the launch key at fault and the line that fixes it")),
        description=say(tr(
            "Give the log as saved (a file, or - for standard input) and, where you have it, the launch that failed "
            "(--args-file FILE, or its arguments after the log). Exit 0: a cause was found; 1: the log holds a "
            "failure no cause was found for; 2: the log holds no failure or cannot be read.")))
    p.add_argument("log", metavar="LOG", help=say(tr("the log file, or - for standard input")))
    p.add_argument("--args-file", metavar="FILE", help=say(tr(
        "the launch that failed: an args file or the launch script (check replays it to confirm the cause)")))
    p.add_argument("argv", nargs="*", metavar="ARGV", help=say(tr("the launch's arguments (after an optional --)")))
    p.add_argument("--json", action="store_true", help=say(tr("print one JSON object")))
    p.add_argument("--verl-version", metavar="VERSION", help=say(tr(
        "replay the launch against this verl release's config tree (default: the installed verl's)")))
    add_judging_options(p, lang)
    add_stack_options(p, lang)
    _upstream.add_options(p, lang)
    add_common(p, lang)
    p.set_defaults(run=run)
    return p


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", errors="replace")
    except OSError as exc:
        raise UsageError(tr("cannot read the log {path}: {error}", path=path, error=exc.strerror or exc)) from exc


def run(ns: argparse.Namespace) -> int:
    start = time.perf_counter()
    text = _read(ns.log)
    argv, source, unread = list(ns.argv or []), None, None
    if ns.args_file:
        try:
            source = read_launch_file(ns.args_file)
            argv = [*source.argv, *argv]
        except NoLaunchLine as exc:  # a script that runs another one (bash recipe/...sh): the log is still read
            unread = _args.reason(exc)
    src = _upstream.sources_of(ns)  # --upstream: the replay runs MindSpeed's own code on the launch too
    options: dict[str, Any] = {k: v for k, v in (("verl_version", ns.verl_version), ("model_config", ns.model_config),
                                                 ("release", ns.mindspeed_release), ("megatron_core", ns.megatron_core),
                                                 ("bridge", ns.bridge)) if v}
    after = (lambda res: _upstream.judge(res, ns, src)) if src is not None else None
    found = diagnose(text, argv if (argv or source) else None, source, after, **options)
    elapsed = time.perf_counter() - start
    if ns.json:
        print(_output.dump({**payload(found, ns.lang), "launch_unread": render(unread, ns.lang) if unread else None}))
    else:
        print(report(found, ns.log, ns.lang, elapsed, unread))
    return found.exit_code


def payload(found: Diagnosis, lang: str) -> dict[str, Any]:
    say = lambda text: render(text, lang)  # noqa: E731
    failures = []
    for f in found.failures:
        site = f.site
        failures.append({
            "exception": f.raised.type, "message": f.raised.message, "process": f.raised.stream,
            "log_line": f.raised.position, "kind": f.verdict.kind, "what": say(f.verdict.what),
            "certainty": f.verdict.certainty, "fields": list(f.verdict.fields),
            "site": None if site is None else {
                "package": site.site.package, "file": site.site.file, "function": site.site.function,
                "lines": dict(site.site.releases), "releases": list(site.releases), "matched_by":
                    "frame" if site.by_frame else "message", "condition": site.site.condition,
                "values": site.bound},
            "causes": [vars(c) for c in f.verdict.causes]})
    kinds = [f.verdict.kind for f in found.failures]
    return {"schema_version": SCHEMA_VERSION, "exit_code": found.exit_code,
            "causes": [vars(c) for c in found.causes],
            "failure": kinds[0] if kinds else None,
            "not_the_launch": [say(f.verdict.what) for f in found.failures if not f.verdict.causes],
            "failures": failures, "log": {"lines": found.lines, "exceptions": found.raised},
            "launch_replayed": found.launch_given, "launch_from_log": found.launch_from_log}


def report(found: Diagnosis, path: str, lang: str, elapsed: float, unread: Any = None) -> str:
    say = lambda text: render(text, lang)  # noqa: E731
    lines = [f"verl-mindspeed doctor  |  {path}  |  " + say(trn(
        "{n} line, {k} exceptions", "{n} lines, {k} exceptions", found.lines, n=found.lines, k=found.raised)), ""]
    if unread:
        lines[-1:] = [say(tr("launch not read ({why}): the log alone is diagnosed; give the script or args file that "
                             "holds the python3 -m line", why=say(unread))), ""]
    if found.launch_from_log:
        lines[-1:] = [say(tr("launch: the overrides Hydra printed in the log (Error executing job with overrides), "
                             "replayed by check")), ""]
    if not found.failures:
        lines.append(say(tr("no exception and no error line found in the log: give the log of the run that failed "
                            "(the whole of it, or the part with its traceback)")))
        return "\n".join(lines)
    for n, f in enumerate(found.failures, 1):
        lines.append(f"{n}. " + say(tr("{type} in {process} (log line {line})", type=f.raised.type,
                                        process=f.raised.stream, line=f.raised.position)))
        lines.append("   " + say(f.verdict.what))
        if f.site is not None:
            where = ", ".join(f"{r}:{line}" for r, line in f.site.site.releases if r in f.site.releases)
            lines.append("   " + say(tr("raise site: {file} ({where})", file=f.site.site.file, where=where)))
        if f.verdict.causes:
            for cause in f.verdict.causes:
                mark = say(tr("confirmed: check on the launch reproduces it and the fix clears it")) \
                    if cause.confirmed else say(tr("certainty: {level}", level=say(_level(f.verdict.certainty))))
                lines.append("   " + say(tr("at fault: {key}  [{mark}]", key=cause.key, mark=mark)))
                lines.append("   " + (say(tr("fix:  {line}", line=cause.fix)) if cause.fix else
                                      say(tr("fix:  delete the argument {key}", key=cause.key))
                                      if cause.delete else say(tr("no fix line known: look at {key}", key=cause.key))))
        elif f.verdict.kind == "unknown":  # not placed: no blame, and no acquittal either
            lines.append("   " + say(tr("not placed: look at {fields}", fields=", ".join(f.verdict.fields))
                                     if f.verdict.fields else tr("not placed: the log does not say which key, if any")))
            if not found.launch_given:
                lines.append("   " + say(tr("give the launch (--args-file, or the log with Hydra's override list) "
                                            "to replay it with check")))
        else:
            lines.append("   " + say(tr("no launch key is at fault ({kind})", kind=say(_kind(f.verdict.kind)))))
        lines.append("")
    causes = found.causes
    head = say(trn("FOUND: {n} cause", "FOUND: {n} causes", len(causes), n=len(causes))) if causes else \
        say(tr("FOUND: not the launch")) if found.exit_code == 0 else say(tr("NOT PLACED: no cause found"))
    lines.append(f"{head}; {elapsed:.2f} s")
    return "\n".join(lines)


def _level(level: str):
    return {"likely": trp("certainty", "likely"), "possible": trp("certainty", "possible"),
            "confirmed": trp("certainty", "confirmed")}.get(level, level)


def _kind(kind: str):
    return {"version-skew": trp("failure", "package versions"), "resource": trp("failure", "memory or network"),
            "upstream": trp("failure", "upstream code"), "env": trp("failure", "the environment"),
            "unknown": trp("failure", "not placed")}.get(kind, kind)
