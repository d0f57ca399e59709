"""What the verl-mindspeed Hydra plugin adds to the start of ANY Hydra app (every app imports every plugin).

Builds the wheel, makes two fresh venvs that see this Python's packages (hydra, omegaconf...) through
a ``.pth`` line, installs the wheel into one of them only, then runs a trivial ``@hydra.main`` app
(compose only, no verl) as a subprocess N times in each, interleaved. Prints the medians side by side
and their ratio.

    python benchmarks/plugin_overhead.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APP = """
    import hydra

    @hydra.main(config_path=None, config_name=None, version_base=None)
    def main(cfg) -> None:
        pass

    if __name__ == "__main__":
        main()
"""
PLUGINS = ("from hydra.core.plugins import Plugins; from hydra.plugins.search_path_plugin import SearchPathPlugin; "
           "print(sorted(c.__name__ for c in Plugins.instance().discover(SearchPathPlugin)))")


def build_wheel(source: Path, dest: Path, env: dict | None = None) -> Path:
    """The project's wheel, built from ``source`` into ``dest`` (the dependencies are this Python's)."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dest),
                    str(source)], check=True, env=env)
    (wheel,) = dest.glob("*.whl")
    return wheel


def make_venv(where: Path, wheel: Path | None) -> Path:
    """A venv seeing this Python's site-packages (not its .pth files, so no editable install), plus ``wheel``."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "base_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    if wheel is not None:
        subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q",
                        str(wheel)], check=True)
    return python


def time_run(cmd: list[str], cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--source", type=Path, default=ROOT, help="the project tree to build (default: this one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        wheel = build_wheel(args.source, tmpdir / "dist")
        pythons = {"without the plugin": make_venv(tmpdir / "without", None),
                   "with the plugin": make_venv(tmpdir / "with", wheel)}
        app = tmpdir / "app.py"
        app.write_text(textwrap.dedent(APP))
        times: dict[str, list[float]] = {label: [] for label in pythons}
        for label, python in pythons.items():
            seen = subprocess.run([str(python), "-c", PLUGINS], capture_output=True, text=True, check=True)
            print(f"{label}: search-path plugins discovered: {seen.stdout.strip()}")
            time_run([str(python), str(app)], tmp)  # warm the file cache and write the .pyc files
        order = list(pythons.items())
        for i in range(args.runs):  # alternate which goes first: the machine's load drifts
            for label, python in (order if i % 2 == 0 else order[::-1]):
                times[label].append(time_run([str(python), str(app)], tmp))
    print(f"\ntrivial @hydra.main app, {args.runs} runs each (interleaved, alternating), {os.cpu_count()} CPU(s), "
          f"Python {sys.version.split()[0]}")
    print(f"{'':22}{'median':>10}{'min':>10}{'max':>10}")
    for label, xs in times.items():
        print(f"{label:22}{statistics.median(xs) * 1000:>8.1f}ms{min(xs) * 1000:>8.1f}ms{max(xs) * 1000:>8.1f}ms")
    w, wo = (statistics.median(times[k]) for k in ("with the plugin", "without the plugin"))
    print(f"ratio with/without: {w / wo:.3f}  (median difference {1000 * (w - wo):+.1f} ms)")


if __name__ == "__main__":
    main()
