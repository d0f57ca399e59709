"""The ``verl-mindspeed`` command line: check, features, plan, presets, run."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Optional

from . import check, features, plan, presets, run


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="verl-mindspeed",
        description="Pre-flight checks and normalization of MindSpeed options for verl on Ascend NPUs.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    check.add_parser(sub)
    features.add_parser(sub)
    presets.add_parser(sub)
    run.add_parser(sub)
    plan.add_parser(sub)
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    parser = build_parser()
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("check", "run"):
        ours, launch = check.split_own_options(args[1:])
        ns = parser.parse_args([args[0], *ours])
        ns.argv = launch
    else:
        ns = parser.parse_args(args)
    try:
        return int(ns.run(ns) or 0)
    except BrokenPipeError:  # output piped into `head` and friends: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
