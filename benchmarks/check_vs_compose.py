"""Median wall time of `verl-mindspeed check` against Hydra composing the same launch alone: the floor.

    python benchmarks/check_vs_compose.py [--runs 9] [--args-file PATH] [--same-reader]

The floor is a Python process that imports Hydra and composes verl's installed config tree with the launch's
overrides, as verl's `@hydra.main` would, and nothing else. `check` composes through libyaml and parses each
override once (verl_mindspeed.compose._fast); `--same-reader` gives the floor that too, so the ratio is what
judging alone costs. `check` composes the same launch and then judges
it; the ratio says what the judging costs on top. Runs are interleaved (check, compose, check...) so machine
load hits both alike. Prints every run, the medians and the ratio. Needs verl's config tree (pip install verl).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from check_vs_verl_cfg import interleaved  # one way to time two commands side by side for every benchmark here

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ARGS = ROOT / "examples" / "qwen3_30b_a3b_moe_grpo.args"

COMPOSE = """
import sys
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
import importlib.util, os
# verl's tree without importing verl (which imports torch), as check finds it
config_dir = os.path.join(importlib.util.find_spec("verl").submodule_search_locations[0], "trainer", "config")
name, overrides = sys.argv[1], sys.argv[2:]
with initialize_config_dir(config_dir=config_dir, version_base=None):
    compose(config_name=name, overrides=overrides)
"""

# the module alone, loaded from its file: importing it through the package would import all of verl-mindspeed
SAME_READER = COMPOSE.replace("name, overrides =", f"""
spec = importlib.util.spec_from_file_location("_fast", {str(ROOT / "src/verl_mindspeed/compose/_fast.py")!r})
fast = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fast)
fast.accelerated().__enter__()
name, overrides =""")


def launch(path: Path) -> tuple[str, list[str]]:
    """(config name, overrides) of an args file: its --config-name and every other argument but Hydra's flags."""
    sys.path.insert(0, str(ROOT / "src"))
    from verl_mindspeed.launch import read_args_file
    from verl_mindspeed.overrides import split_argv

    args = split_argv(read_args_file(str(path)))
    return (args.config_name or "ppo_trainer").removesuffix(".yaml"), list(args.overrides)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--args-file", type=Path, default=DEFAULT_ARGS)
    parser.add_argument("--same-reader", action="store_true",
                        help="the floor composes through libyaml too: the ratio is the cost of judging alone")
    ns = parser.parse_args()
    name, overrides = launch(ns.args_file)
    ours = [sys.executable, "-m", "verl_mindspeed", "check", "--args-file", str(ns.args_file)]
    floor = [sys.executable, "-c", SAME_READER if ns.same_reader else COMPOSE, name, *overrides]
    ma, mb = interleaved(ours, floor, ns.runs, ("check", "compose"))
    print(f"\nargv: {ns.args_file.name} ({len(overrides)} overrides), {ns.runs} runs each, interleaved")
    print(f"median  verl-mindspeed check   {ma:.3f} s")
    print(f"median  Hydra compose alone    {mb:.3f} s" + ("  (through libyaml, as check)" if ns.same_reader else ""))
    print(f"ratio   check / compose        {ma / mb:.2f}x")


if __name__ == "__main__":
    main()
