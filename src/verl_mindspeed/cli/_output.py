"""Where results and failures go: text, one JSON object, SARIF 2.1.0 or GitHub workflow commands.

Whatever happens, ``--json`` (``--format json``) prints exactly one JSON object on stdout and
``--format sarif`` one SARIF log; a failure is also one line on stderr.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Optional, Sequence

from ..i18n import render, tr
from ..report import SCHEMA_VERSION, counts
from . import _annotate
from ._args import prescan

FORMATS = ("text", "json", "sarif", "github")


def format_of(args: Sequence[str]) -> str:
    """The output format a raw argv asks for (``--json`` wins), known before the argv is parsed."""
    if "--json" in args[: args.index("--") if "--" in args else len(args)]:
        return "json"
    fmt = prescan(args, "--format", "text")
    return fmt if fmt in FORMATS else "text"


def dump(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)


def fatal(message: Any, fmt: str, lang: str, command: str, usage: str = "") -> int:
    """Report a command that could not run: exit status 2."""
    text = render(message, lang)
    prog = command if command.startswith("verl-mindspeed") else f"verl-mindspeed {command}"
    if fmt == "json":
        print(dump({"schema_version": SCHEMA_VERSION, "ok": False, "exit_code": 2, "fatal": text,
                    "errors": [], "warnings": [], "notes": [], "roles": {}}))
    elif fmt == "sarif":
        print(dump(_annotate.sarif_fatal(text)))
    elif fmt == "github":
        print(_annotate.github_command("error", text, title=prog))
    if usage and fmt == "text":
        print(usage.rstrip(), file=sys.stderr)
    print(f"{prog}: {text}", file=sys.stderr)
    return 2


def emit(payload: dict[str, Any], text_report: Optional[str], fmt: str, issues: list, lang: str,
         args_file: Optional[str], argv: Sequence[str] = ()) -> None:
    """Print one check's result in ``fmt`` (``argv``: the launch, where SARIF places issues of the command line)."""
    if fmt == "json":
        print(dump(payload))
    elif fmt == "sarif":
        print(dump(_annotate.sarif([(args_file, issues)], lang, payload["exit_code"], argv)))
    elif fmt == "github":
        lines = _annotate.github(issues, lang, args_file)
        if lines:
            print("\n".join(lines))
        print(render(tr("verl-mindspeed check: {counts}", counts=counts(len(payload["errors"]),
                                                                     len(payload["warnings"]))), lang))
    else:
        print(text_report)


__all__ = ["FORMATS", "dump", "emit", "fatal", "format_of"]
