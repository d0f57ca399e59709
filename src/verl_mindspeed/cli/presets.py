"""``verl-mindspeed presets [NAME]``: the ``+mindspeed=<name>`` presets and exactly what each one sets."""

from __future__ import annotations

import argparse
import json

from ..integrations import presets


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("presets", help="list the +mindspeed=<name> presets, or show what one of them sets")
    p.add_argument("name", nargs="?", help="a preset name (default: list them all)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=run)


def run(ns: argparse.Namespace) -> int:
    if ns.name is None:
        data = {n: presets.description(n).splitlines()[0] for n in presets.names()}
        if ns.json:
            print(json.dumps(data, indent=2))
        else:
            width = max(map(len, data))
            print("\n".join(f"{n.ljust(width)}  {line.split(': ', 1)[-1]}" for n, line in data.items()))
            print("\nuse: python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer +mindspeed=<name> ...")
        return 0
    try:
        settings = presets.settings(ns.name)
    except KeyError as exc:
        print(f"verl-mindspeed presets: {exc.args[0]}")
        return 2
    if ns.json:
        print(json.dumps({"name": ns.name, "description": presets.description(ns.name), "sets": settings}, indent=2))
        return 0
    print(presets.description(ns.name), "\n")
    print(f"+mindspeed={ns.name} sets:" if settings else f"+mindspeed={ns.name} sets no flag.")
    for key, value in settings.items():
        print(f"  {key}={value}")
    print("and installs the verl-mindspeed Hydra callback (validation and injection before Ray starts).")
    return 0
