"""Median wall time of `verl-mindspeed check` against Hydra composing the same launch alone: the floor.

    python benchmarks/check_vs_compose.py [--runs 9] [--args-file PATH ...] [--same-reader]
    python benchmarks/check_vs_compose.py --long-value 1000000      # one override with a value that long
    python benchmarks/check_vs_compose.py --check-files 8           # check-files: what each further file costs

`check` runs as it runs again (the base config of the launch's config kept on disk, `verl_mindspeed.compose._memo`)
and cold (`VERL_MINDSPEED_NO_COMPOSE_CACHE=1`: as a first check on a machine). The floor is a Python process that
imports Hydra and composes the config the launch composes (its entry's folder, its config name, its search path)
with the launch's overrides, as verl's `@hydra.main` would, and nothing else.
`check` reads the launch file (a real shell script or an args file), composes the same launch and then judges it;
the ratio says what the reading and judging cost on top. By default the launches are real ones written by others:
the real-script corpus beside the repository (`../shared/corpus/real-scripts`) and the script fixtures, at least
three. `--same-reader` gives the floor libyaml too (`verl_mindspeed.compose._fast`), so the ratio is what judging
alone costs. Runs are interleaved (check, compose, check...) so machine load hits both alike. Prints every run,
the medians and the ratios (target: at most 1.15x; with `--long-value`, at most 2x; with `--check-files N`, each
further file at most 0.2x a single check). Needs verl's config tree (pip install verl).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from check_vs_verl_cfg import interleaved, timed

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "real-scripts"
SCRIPTS = ROOT / "tests" / "fixtures" / "scripts"
#: Real launches by others (each header cites its source): 102, 54 and 90 arguments, an args file and two scripts.
DEFAULT_LAUNCHES = [CORPUS / "run_dapo_moonlight-16b_megatron_npu.args", SCRIPTS / "moonlight_16b_r3_npu.sh",
                    SCRIPTS / "fully_async_qwen3_235b_npu.sh", CORPUS / "run_qwen3_30b_a3b_megatron.args"]

COMPOSE = """
import json, sys
from hydra import compose, initialize_config_dir
config_dir, name, overrides = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))
with initialize_config_dir(config_dir=config_dir, version_base=None):
    compose(config_name=name, overrides=overrides)
"""

# the module alone, loaded from its file: importing it through the package would import all of verl-mindspeed
SAME_READER = COMPOSE.replace("config_dir, name, overrides =", f"""
import importlib.util
spec = importlib.util.spec_from_file_location("_fast", {str(ROOT / "src/verl_mindspeed/compose/_fast.py")!r})
fast = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fast)
fast.accelerated().__enter__()
config_dir, name, overrides =""")


def floor_args(path: Path) -> tuple[str, str, list[str]]:
    """(config folder, config name, overrides) Hydra composes for the launch: what `check` composes, its search
    path included, without the overrides Hydra refuses (the floor must compose)."""
    sys.path.insert(0, str(ROOT / "src"))
    from verl_mindspeed.compose import compose_argv
    from verl_mindspeed.compose._hydra_run import searchpath_overrides
    from verl_mindspeed.launch import read_launch_file

    source = read_launch_file(str(path))
    comp = compose_argv(source.argv, entry=source.entry)
    primary = comp.tree.config_dir / f"{comp.config_name}.yaml"
    extra = searchpath_overrides(comp.tree.root, primary)
    return str(comp.tree.config_dir), comp.config_name, [*comp.overrides, *extra]


def one(path: Path, runs: int, same_reader: bool, cold: bool = False) -> float:
    """check against the floor; ``cold``: check without its kept base configs (a first check on a machine)."""
    folder, name, overrides = floor_args(path)
    env = ["env", "VERL_MINDSPEED_NO_COMPOSE_CACHE=1"] if cold else []
    ours = [*env, sys.executable, "-m", "verl_mindspeed", "check", "--args-file", str(path)]
    listed = Path(tempfile.mkdtemp()) / "overrides.json"  # a file: one argument may be longer than argv allows
    listed.write_text(json.dumps(overrides))
    floor = [sys.executable, "-c", SAME_READER if same_reader else COMPOSE, folder, name, str(listed)]
    label = "check (cold)" if cold else "check"
    ma, mb = interleaved(ours, floor, runs, (label, "compose"))
    print(f"{path.name} ({len(overrides)} overrides), {runs} runs each, interleaved: {label} {ma:.3f} s, "
          f"compose {mb:.3f} s, ratio {ma / mb:.2f}x\n", flush=True)
    return ma / mb


def long_value(length: int, runs: int, same_reader: bool, folder: Path, cold: bool = False) -> float:
    """A real launch plus one ``+...override_transformer_config.long_x=<value>`` of ``length`` characters."""
    base = CORPUS / "run_qwen3_30b_a3b_megatron.args"
    lines = base.read_text().splitlines() if base.is_file() else []
    path = folder / f"long_value_{length}.args"
    value = "x" * length
    path.write_text("\n".join([*lines, "+actor_rollout_ref.actor.megatron.override_transformer_config."
                               f"long_x={value}"]) + "\n")
    return one(path, runs, same_reader, cold)


def check_files(count: int, runs: int) -> float:
    """``check-files`` on one launch against ``count`` launches: (t(count) - t(1)) / (count - 1) over t(1)."""
    pool = [p for p in [*sorted(CORPUS.glob("*.args")), *sorted(SCRIPTS.glob("*.sh"))] if p.is_file()]
    files = [str(pool[i % len(pool)]) for i in range(count)]
    single = [sys.executable, "-m", "verl_mindspeed", "check-files", files[0]]
    many = [sys.executable, "-m", "verl_mindspeed", "check-files", *files]
    timed(single), timed(many)
    a, b = [], []
    for i in range(runs):
        a.append(timed(single))
        b.append(timed(many))
        print(f"run {i + 1}: 1 file {a[-1]:.3f} s   {count} files {b[-1]:.3f} s", flush=True)
    one_file, all_files = statistics.median(a), statistics.median(b)
    further = (all_files - one_file) / (count - 1)
    print(f"check-files: 1 file {one_file:.3f} s, {count} files {all_files:.3f} s: each further file {further:.3f} s "
          f"= {further / one_file:.2f}x a single check (target: at most 0.2x)")
    return further / one_file


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--args-file", type=Path, action="append", help="a launch file (repeat for several)")
    parser.add_argument("--same-reader", action="store_true",
                        help="the floor composes through libyaml too: the ratio is the cost of judging alone")
    parser.add_argument("--long-value", type=int, metavar="N", help="one override with a value of N characters")
    parser.add_argument("--check-files", type=int, metavar="N", help="check-files on N launch files against one")
    parser.add_argument("--cache", choices=("both", "warm", "cold"), default="both", help=(
        "warm: check as it runs again (its base configs kept on disk); cold: as a first check on a machine"))
    ns = parser.parse_args()
    if ns.check_files:
        check_files(ns.check_files, ns.runs)
        return
    if ns.long_value:
        with tempfile.TemporaryDirectory() as tmp:
            long_value(ns.long_value, ns.runs, ns.same_reader, Path(tmp), ns.cache == "cold")
        return
    launches = [p for p in (ns.args_file or DEFAULT_LAUNCHES) if p.is_file()]
    if not launches:
        sys.exit("no launch file found (the real-script corpus is at ../shared/corpus/real-scripts)")
    modes = {"both": (False, True), "warm": (False,), "cold": (True,)}[ns.cache]
    ratios = {(p.name, cold): one(p, ns.runs, ns.same_reader, cold) for p in launches for cold in modes}
    for (name, cold), ratio in ratios.items():
        print(f"ratio   check{' (cold)' if cold else ''} / compose   {ratio:.2f}x   {name}")


if __name__ == "__main__":
    main()
