"""Annotations for CI: SARIF 2.1.0 (code scanning) and GitHub workflow commands (``::error file=,line=::``).

An issue is placed at ``file:line`` when it knows its location (``Issue.location``), else, when
the argv came from ``--args-file``, at the line of that file that holds the issue's key.
"""

from __future__ import annotations

import shlex
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from .._version import __version__
from ..errors import Issue
from ..i18n import render
from ..report import LABELS, in_place_of

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {"error": "error", "warning": "warning", "note": "note"}
COMMANDS = {"error": "error", "warning": "warning", "note": "notice"}


def findings(issues: Iterable[Issue]) -> list[Issue]:
    """What CI annotates: errors and warnings (notes say what was injected; they are not findings)."""
    return [i for i in issues if i.severity in ("error", "warning")]


@lru_cache(maxsize=32)
def _lines(path: str) -> tuple[str, ...]:
    try:
        return tuple(Path(path).read_text(encoding="utf-8", errors="replace").splitlines())
    except OSError:
        return ()


def _names(line: str) -> list[str]:
    """The keys the arguments of one line set (``+a.b=1 \\`` -> ``a.b``)."""
    text = line.strip().rstrip("\\").strip()
    try:
        tokens = shlex.split(text, comments=True)
    except ValueError:
        tokens = text.split()
    return [t.lstrip("+~").split("=", 1)[0] for t in tokens]


def line_of(key: str, path: str) -> Optional[int]:
    """The 1-based line of ``path`` whose argument sets ``key`` (or its parent or child), if any."""
    return _position(key, _lines(path))


def _position(key: str, texts: Sequence[str]) -> Optional[int]:
    """The 1-based position of the text whose arguments set ``key``, else its parent or child, if any."""
    for n, text in enumerate(texts, 1):
        if key in _names(text):
            return n
    for n, text in enumerate(texts, 1):
        if any(name and (key.startswith(name + ".") or name.startswith(key + ".")) for name in _names(text)):
            return n
    return None


def locate(issue: Issue, args_file: Optional[str]) -> tuple[Optional[str], Optional[int]]:
    """``(file, line)`` of an issue; either may be ``None``."""
    loc = getattr(issue, "location", None)
    if loc:
        if isinstance(loc, str):
            file, _, line = loc.rpartition(":")
            if line.isdigit():
                return file, int(line)
            return loc, None
        if isinstance(loc, (tuple, list)) and len(loc) >= 2:
            return str(loc[0]), int(loc[1]) if str(loc[1]).isdigit() else None
        file = getattr(loc, "file", None) or getattr(loc, "path", None)
        line = getattr(loc, "line", None)
        if file:
            return str(file), line if isinstance(line, int) else None
    if args_file:
        return args_file, line_of(issue.key, args_file)
    return None, None


def message(issue: Issue, lang: str) -> str:
    words = LABELS
    text = f"{issue.key}: {render(issue.message, lang)}"
    if issue.hint:
        text += f"\n{render(words['hint'], lang)}: {render(issue.hint, lang)}"
    if issue.override:
        text += f"\n{render(words['fix'], lang)}: {issue.override}"
        if issue.replaces:
            text += "\n" + render(in_place_of(issue.replaces), lang)
    return text


def _driver(rules: dict[str, Any]) -> dict[str, Any]:
    return {"name": "verl-mindspeed", "version": __version__, "informationUri": RULES_DOC,
            "rules": list(rules.values())}


RULES_DOC = "docs/rules.md"
"""The page with one section per rule, relative to the project's repository."""


#: Findings of ``check --upstream``: not hand rules, the release's own code (each result names its file:line).
UPSTREAM_RULES = {
    "upstream": "MindSpeed's and megatron-core's own code, run on the launch as verl drives it (check --upstream)",
    "upstream-harness": "the upstream run could not judge the launch (a failure of the harness, not a verdict)",
    "upstream-unavailable": "the MindSpeed sources given cannot run here (MegatronAdaptor, a megatron-core line "
                            "with no environment): nothing ran, the verdict is the hand rules'",
}
UPSTREAM_DOC = "docs/upstream.md"


@lru_cache(maxsize=None)
def _registry() -> dict[str, Any]:
    from ..rules import RULES

    return {r.id: r for r in RULES}


def descriptor(rule_id: str) -> dict[str, Any]:
    """A SARIF reportingDescriptor: what the rule checks, what it mirrors upstream, and a link to its section."""
    rule = _registry().get(rule_id)
    if rule_id in UPSTREAM_RULES:
        return {"id": rule_id, "name": rule_id, "shortDescription": {"text": UPSTREAM_RULES[rule_id]},
                "fullDescription": {"text": UPSTREAM_RULES[rule_id]}, "helpUri": UPSTREAM_DOC}
    if rule is None:  # single-key checks (unknown-key, value, hydra...): said by each result's message
        return {"id": rule_id, "name": rule_id, "shortDescription": {"text": rule_id},
                "helpUri": f"{RULES_DOC}#cross-field-rules"}
    doc = " ".join(rule.doc.split()) or rule_id
    help_text = f"{doc}\nMirrors: {rule.cites}\nHolds for: {rule.holds_for}"
    return {"id": rule_id, "name": rule_id, "shortDescription": {"text": doc.split(". ")[0].rstrip(".")},
            "fullDescription": {"text": doc}, "help": {"text": help_text},
            "helpUri": f"{RULES_DOC}#{rule_id}", "properties": {"cites": rule.cites, "holdsFor": rule.holds_for}}


def _uri(path: str) -> str:
    """A file as SARIF wants it: relative to the working folder when it lies inside it."""
    p = Path(path)
    try:
        return p.resolve().relative_to(Path.cwd().resolve()).as_posix() if p.is_absolute() else p.as_posix()
    except ValueError:
        return p.as_posix()


def argv_index(key: str, argv: Sequence[str]) -> Optional[int]:
    """The 1-based position of the argument that sets ``key`` (or its parent or child) on the command line."""
    return _position(key, [shlex.quote(a) for a in argv])


def sarif(groups: Sequence[tuple[Optional[str], Sequence[Issue]]], lang: str, exit_code: int,
          argv: Sequence[str] = ()) -> dict[str, Any]:
    """One SARIF 2.1.0 log with one run: ``groups`` are (args file or None, issues) pairs. Every result has a
    physical location: its launch file and line, else the pseudo-file ``argv`` and the argument's position."""
    rules: dict[str, Any] = {}
    results = []
    for args_file, issues in groups:
        for issue in findings(issues):
            rule_id = issue.rule or "verl-mindspeed"
            rules.setdefault(rule_id, descriptor(rule_id))
            file, line = locate(issue, args_file)
            if not file:
                file, line = "argv", argv_index(issue.key, argv)
            location: dict[str, Any] = {"logicalLocations": [{"fullyQualifiedName": issue.key, "kind": "member"}]}
            physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(file) if file != "argv" else "argv"}}
            physical["region"] = {"startLine": line or 1}
            location["physicalLocation"] = physical
            properties = {k: v for k, v in (("key", issue.key), ("suggestion", issue.suggestion),
                                            ("override", issue.override), ("replaces", issue.replaces),
                                            ("upstreamSource", issue.source)) if v}
            results.append({"ruleId": rule_id, "level": LEVELS[issue.severity],
                            "message": {"text": message(issue, lang)}, "locations": [location],
                            "properties": properties})
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{
        "tool": {"driver": _driver(rules)}, "results": results,
        "invocations": [{"executionSuccessful": exit_code in (0, 1), "exitCode": exit_code}],
    }]}


def sarif_fatal(text: str) -> dict[str, Any]:
    """A SARIF log for a command that could not be evaluated."""
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{
        "tool": {"driver": _driver({})}, "results": [],
        "invocations": [{"executionSuccessful": False, "exitCode": 2,
                         "toolExecutionNotifications": [{"level": "error", "message": {"text": text}}]}],
    }]}


def _escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def github_command(level: str, text: str, *, file: Optional[str] = None, line: Optional[int] = None,
                   title: Optional[str] = None) -> str:
    props = [f"{k}={_escape(str(v), True)}" for k, v in (("file", file), ("line", line), ("title", title)) if v]
    return f"::{level}{' ' + ','.join(props) if props else ''}::{_escape(text)}"


def github(issues: Sequence[Issue], lang: str, args_file: Optional[str]) -> list[str]:
    """One workflow command per error or warning."""
    out = []
    for issue in findings(issues):
        file, line = locate(issue, args_file)
        out.append(github_command(COMMANDS[issue.severity], message(issue, lang), file=file, line=line,
                                  title=issue.rule or None))
    return out


def fatal_result(path: str, text: str) -> dict[str, Any]:
    """A SARIF result for a file that could not be evaluated."""
    return {"ruleId": "cannot-evaluate", "level": "error", "message": {"text": text},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(path)}}}]}


__all__ = ["fatal_result", "findings", "github", "github_command", "line_of", "locate", "sarif", "sarif_fatal"]
