"""``check --upstream`` on every MindSpeed archive, over the examples and the real-script corpus: verdicts and times.

    python benchmarks/upstream_check.py [--upstream DIR] [--corpus DIR] [--strict] [--per-release K]

For each archive ``mindspeed-*.tar.gz`` in the upstream folder (default ``$VERL_MINDSPEED_UPSTREAM``, else
``../shared/upstream``) and each launch file, the command a user types runs twice as a fresh process:

- **new**: a launch this machine has never judged (the verdict cache is a fresh folder; the archives are
  extracted and the environments built beforehand, so neither is timed);
- **repeated**: the same command again, answered from the verdict cache.

Targets on a 2-core machine: new launch median at most 10 s, repeated at most 1.5 s. A row fails when the
command could not evaluate the launch (exit 2) or the upstream run could not judge it (``upstream-harness``);
``--strict`` also fails on a missed target. A release no environment here can run (MindSpeed core_r0.17.0 and
core_r0.18.0 import MegatronAdaptor's ``megatron_adaptor`` and run on megatron-core 0.17/0.18) must say so
(``upstream-unavailable``, verdict ``not-run``): its rows are listed, left out of the medians, and fail only
when the command fails or says nothing of it. Launch files take the fixture model their model path names.

``--per-release K`` (what CI runs) judges K launch files per release instead of all of them, taken in turn so
that the releases together cover every launch file (with K x releases >= launch files); the medians are then
those of the sample, and the line says so.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "tests" / "fixtures" / "models"
NEW_TARGET, REPEATED_TARGET = 10.0, 1.5


def model_for(launch: Path) -> list[str]:
    text = launch.read_text()
    for model in sorted(MODELS.iterdir(), key=lambda p: -len(p.name)):
        if model.is_dir() and model.name.split("-Instruct")[0] in text:
            return ["--model-config", str(model)]
    return []


def run(cmd: list[str], env: dict) -> tuple[float, int, dict]:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    try:
        return seconds, done.returncode, json.loads(done.stdout)
    except ValueError:
        return seconds, done.returncode, {"stderr": done.stderr[-500:]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream", default=os.environ.get("VERL_MINDSPEED_UPSTREAM", str(ROOT.parent / "shared" /
                                                                                              "upstream")))
    parser.add_argument("--corpus", default=None, help="real launch lines (default: corpus/real-scripts beside it)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a median misses its target")
    parser.add_argument("--per-release", type=int, default=None, metavar="K",
                        help="only K launch files per release, in turn, so all releases together cover every file")
    opts = parser.parse_args(argv)
    upstream_dir = Path(opts.upstream)
    corpus = Path(opts.corpus) if opts.corpus else upstream_dir.parent / "corpus" / "real-scripts"
    archives = sorted(upstream_dir.glob("mindspeed-*.tar.gz"))
    launches = sorted((ROOT / "examples").glob("*.args")) + sorted(corpus.glob("*.args"))
    if not archives or not launches:
        print(f"nothing to run: {len(archives)} archives in {upstream_dir}, {len(launches)} launch files",
              file=sys.stderr)
        return 1

    from verl_mindspeed import upstream

    for archive in archives:  # the environments are built beforehand: not part of a launch's time
        sources = upstream.locate(str(archive))
        if not sources.unrunnable:
            upstream.prepare(sources.line)
    os.environ["VERL_MINDSPEED_UPSTREAM_ENVS"] = str(upstream.envs_dir())
    os.environ["VERL_MINDSPEED_CACHE"] = tempfile.mkdtemp(prefix="verl-mindspeed-bench-")  # no verdict cached yet
    for archive in archives:
        upstream.locate(str(archive))  # each archive extracted into that cache, untimed
    env = dict(os.environ)
    exe = [sys.executable, "-m", "verl_mindspeed", "check", "--json", "--upstream"]
    failures, rows, new_all, again_all, unran = [], [], [], [], set()
    print(f"{'release':<28} {'launch':<46} {'exit':>4} {'upstream':>9} {'new s':>6} {'again s':>7}")
    for index, archive in enumerate(archives):
        chosen = launches if opts.per_release is None else [
            launches[(index * opts.per_release + k) % len(launches)] for k in range(min(opts.per_release,
                                                                                         len(launches)))]
        for launch in chosen:
            cmd = [*exe, "--mindspeed-src", str(archive), "--args-file", str(launch), *model_for(launch)]
            new, code, report = run(cmd, env)
            again, code2, report2 = run(cmd, env)
            verdict = (report.get("upstream") or {}).get("verdict", "-")
            harness = [i for i in report.get("warnings", []) if i.get("rule") == "upstream-harness"]
            said = any(i.get("rule") == "upstream-unavailable" for i in report.get("warnings", []))
            release = archive.name[len("mindspeed-"):-len(".tar.gz")]
            print(f"{release:<28} {launch.name[:46]:<46} {code:>4} {verdict:>9} {new:>6.2f} {again:>7.2f}", flush=True)
            rows.append((release, launch.name, code, verdict, new, again))
            if said and verdict == "not-run":
                unran.add(release)
            else:
                new_all.append(new)
                again_all.append(again)
            cached = (report2.get("upstream") or {}).get("cached") or release in unran
            if code == 2 or code2 != code or harness or not cached:
                failures.append(f"{release} {launch.name}: exit {code}/{code2}, {harness or report.get('stderr', '')}")
    new_median = statistics.median(new_all) if new_all else 0.0
    again_median = statistics.median(again_all) if again_all else 0.0
    sample = "" if opts.per_release is None else (
        f" (a sample: {opts.per_release} of {len(launches)} launch files per release, "
        f"{len({r[1] for r in rows})} distinct)")
    print(f"\n{len(rows)} launches on {len(archives)} releases{sample}; median new launch {new_median:.2f} s "
          f"(target <= {NEW_TARGET:g} s), median repeated launch {again_median:.2f} s "
          f"(target <= {REPEATED_TARGET:g} s)")
    if unran:
        print(f"not run here, as each report says (upstream-unavailable): {', '.join(sorted(unran))}; "
              "left out of the medians")
    missed = new_median > NEW_TARGET or again_median > REPEATED_TARGET
    for failure in failures:
        print(f"FAILED {failure}")
    return 1 if failures or (opts.strict and missed) else 0


if __name__ == "__main__":
    raise SystemExit(main())
