"""What the runtime guard's ``verl.plugins`` entry point adds to ``import verl``, disabled and enabled.

Builds the wheel and installs it into a fresh venv that sees this Python's packages (verl, torch...) through a
``.pth`` line. Then, interleaved and alternating, N times each:

- ``python -c "import verl"`` with ``VERL_USE_EXTERNAL_PLUGINS`` naming no plugin (verl still discovers the
  entry points, loads none): the baseline, "no entry point";
- the same with the entry point loaded (verl's default ``auto``) and the guard disabled;
- the same with ``VERL_MINDSPEED_GUARD=1`` (the guard installs its import hook).

``import verl`` takes seconds and varies by tens of milliseconds, so the script also times the part that
differs, inside a fresh process each time: verl's own ``entry_point.load()`` of the guard (module import and,
when enabled, installation). Prints the medians side by side. Not a test: a measurement.

    python benchmarks/guard_overhead.py [--runs 11]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from plugin_overhead import ROOT, build_wheel, make_venv  # noqa: E402

GUARD = "VERL_MINDSPEED_GUARD"
VARIANTS = {
    "no entry point": {"VERL_USE_EXTERNAL_PLUGINS": "no_such_plugin"},
    "entry point, guard disabled": {},
    "entry point, guard enabled": {GUARD: "1"},
}
PROBE = ("import sys, verl; g = sys.modules.get('verl_mindspeed.integrations.guard'); "
         "print('loaded' if g else 'not loaded', 'installed' if g and g.installed() else 'not installed')")
LOAD = ("import time, verl\n"  # with VERL_USE_EXTERNAL_PLUGINS=none: verl loads no plugin, this code times ours
        "from importlib.metadata import entry_points\n"
        "(ep,) = [e for e in entry_points(group='verl.plugins') if e.value.startswith('verl_mindspeed')]\n"
        "t = time.perf_counter(); ep.load(); print(time.perf_counter() - t)\n")


def environ(extra: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in (GUARD, "VERL_USE_EXTERNAL_PLUGINS", "PYTHONPATH")}
    return {**env, **extra}


def time_run(cmd: list[str], env: dict, cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def row(label: str, xs: list[float]) -> str:
    ms = [x * 1000 for x in xs]
    return f"{label:30}{statistics.median(ms):>10.2f}{min(ms):>10.2f}{max(ms):>10.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--source", type=Path, default=ROOT, help="the project tree to build (default: this one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        wheel = build_wheel(args.source, tmpdir / "dist", environ({}))
        python = str(make_venv(tmpdir / "venv", wheel))
        imports: dict[str, list[float]] = {label: [] for label in VARIANTS}
        for label, extra in VARIANTS.items():
            seen = subprocess.run([python, "-c", PROBE], env=environ(extra), cwd=tmp, capture_output=True, text=True,
                                  check=True).stdout.strip()
            print(f"{label:30} guard module: {seen}")
        order = list(VARIANTS.items())
        for i in range(args.runs):  # alternate the order: the machine's load drifts
            for label, extra in (order if i % 2 == 0 else order[::-1]):
                imports[label].append(time_run([python, "-c", "import verl"], environ(extra), tmp))
        loads: dict[str, list[float]] = {label: [] for label in list(VARIANTS)[1:]}
        for i in range(args.runs):
            for label in (list(loads) if i % 2 == 0 else list(loads)[::-1]):
                env = environ({**VARIANTS[label], "VERL_USE_EXTERNAL_PLUGINS": "none"})  # we load it, timed
                out = subprocess.run([python, "-c", LOAD], env=env, cwd=tmp, capture_output=True, text=True,
                                     check=True).stdout.strip().splitlines()[-1]
                loads[label].append(float(out))
    print(f"\n{args.runs} runs each (interleaved, alternating), {os.cpu_count()} CPU(s), "
          f"Python {sys.version.split()[0]}")
    print(f"{'python -c ' + repr('import verl'):30}{'median ms':>10}{'min':>10}{'max':>10}")
    for label, xs in imports.items():
        print(row(label, xs))
    base = statistics.median(imports["no entry point"])
    for label in list(VARIANTS)[1:]:
        print(f"  {label}: median difference {1000 * (statistics.median(imports[label]) - base):+.1f} ms")
    print(f"\n{'entry_point.load() of the guard':30}{'median ms':>10}{'min':>10}{'max':>10}")
    for label, xs in loads.items():
        print(row(label, xs))


if __name__ == "__main__":
    main()
