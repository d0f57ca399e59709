"""The doctor's round trip on executed code: a launch from the differential generator, the exception verl's or
MindSpeed's own code raises on it, that exception as a Ray worker's log shows it, the doctor's lines pasted back, and
the code run again.

    trips = RoundTrip(oracle_pool, release).run(configs, rounds=3)

For each launch the oracle refuses (outside a module its venv lacks):

1. The log: the oracle's traceback (verl's frames for a refusal of verl's own, MindSpeed's and megatron-core's for
   theirs), each line under the process that raised it (``(TaskRunner pid=…)`` for verl's driver checks,
   ``(WorkerDict pid=…)`` for the rest), then Hydra's ``Error executing job with overrides: [...]`` and the driver's
   ``RayTaskError`` re-raise, as verl's logs show them.
2. The doctor reads the log three ways: alone; as it stands (Hydra's override list is the launch it replays); with
   the launch file given (``--args-file``).
3. Each way's lines are pasted into the launch as printed (:func:`verl_mindspeed.doctor._replay.pasted`: a key a line
   sets replaces the argument that set it; a deletion removes it) and the oracle runs the result. A line "clears"
   when that raise (its site and message) is gone.
4. Followed: with the launch given, the doctor's lines are pasted and the result run again, up to ``rounds`` times,
   as a user would do; a launch "passes" when the oracle accepts it.

By construction every refusal here comes from the launch (the generator's base launch passes), so the doctor saying
"no launch key is at fault" of one is a false acquittal.
"""

from __future__ import annotations

import shlex
import tempfile
from dataclasses import dataclass, field
from typing import Any, Optional

import differential
import verl_side

#: Stages of the oracle that run in verl's driver (the TaskRunner actor); every other runs in a worker.
DRIVER_STAGES = ("verl-driver", "verl-config")
WAYS = ("alone", "log", "launch")


@dataclass
class Way:
    """What the doctor said of one log, read one way, and what its lines did."""

    exit_code: int
    kinds: list[str]
    causes: list[tuple[str, Optional[str], bool]]
    """(key, fix line, deletion) per cause."""
    lines: list[str] = field(default_factory=list)
    after: Optional[dict] = None
    """The oracle's verdict on the launch with the lines pasted (None: no line to paste)."""
    cleared: Optional[bool] = None


@dataclass
class Trip:
    config: differential.Config
    oracle: dict
    log: str
    ways: dict[str, Way] = field(default_factory=dict)
    followed: list[dict] = field(default_factory=list)
    """Each later round's oracle verdict (and the doctor's lines on it) while following the doctor's lines."""

    @property
    def passes(self) -> bool:
        return bool(self.followed) and _runs(self.followed[-1]["verdict"])


def worker_log(oracle: dict, argv: list[str]) -> str:
    """The log of a launch the oracle refused, as verl prints it: the raising process's traceback under its Ray
    prefix, Hydra's override list, and the driver's re-raise."""
    process = "TaskRunner pid=2715" if oracle.get("stage") in DRIVER_STAGES else "WorkerDict pid=3388"
    trace = oracle.get("traceback") or f"{oracle.get('exc_type')}: {oracle.get('message')}"
    prefixed = "\n".join(f"({process}) {line}" for line in trace.splitlines())
    overrides = [a for a in argv if not a.startswith("--config-name")]
    lines = trace.strip().splitlines()
    frames = [i for i, line in enumerate(lines) if line.startswith("  File ")]
    # the exception the frames end in (every line of its message), below the frame's code line
    start = next((i for i in range(frames[-1] + 1 if frames else 0, len(lines)) if not lines[i].startswith(" ")),
                 len(lines) - 1)
    last = "\n".join(lines[start:])
    return (f"{prefixed}\nError executing job with overrides: {overrides!r}\n"
            "Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.10/site-packages/verl/trainer/main_ppo.py", line 96, in run_ppo\n'
            "    ray.get(runner.run.remote(config))\n"
            f"ray.exceptions.RayTaskError({oracle.get('exc_type')}): ray::TaskRunner.run() (pid=2715, "
            "ip=10.0.0.3)\n"
            f"{last}\n")


def launch_file(cfg: differential.Config, argv: list[str]) -> str:
    """The launch as a script a user passes with ``--args-file``: its entry module and arguments."""
    handle = tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False)
    with handle:
        handle.write(f"python3 -m {cfg.entry or 'verl.trainer.main_ppo'} \\\n"
                     + " \\\n".join(f"    {shlex.quote(a)}" for a in argv) + "\n")
    return handle.name


def pasted_argv(argv: list[str], causes: list[tuple[str, Optional[str], bool]]) -> Optional[list[str]]:
    """``argv`` with every cause's line pasted as printed, and each deletion's argument removed; None when the
    causes give nothing to paste."""
    from verl_mindspeed.doctor._replay import pasted, without

    out, changed = list(argv), False
    for key, line, delete in causes:
        if line:
            out, changed = pasted(out, line), True
        elif delete:
            kept = without(out, key)
            changed = changed or len(kept) != len(out)
            out = kept
    return out if changed else None


def _runs(verdict: str) -> bool:
    """The oracle accepts the launch (``unjudged``: a stack's oracle that has no verdict on it, never a run)."""
    return verdict not in ("error", "unjudged")


class RoundTrip:
    """``judge``: the stack's oracle, anything with ``judge(configs)`` giving rows with ``config``, ``oracle``,
    ``oracle_detail`` and ``klass`` (default: the differential's, MindSpeed's and megatron-core's code on ``pool``)."""

    def __init__(self, pool, release: str, judge=None):
        self.release = release
        self.judge = judge or differential.Judge(pool, releases=[release])

    def _verdicts(self, configs: list[differential.Config]) -> list[Any]:
        return self.judge.judge(configs) if configs else []

    def _doctor(self, trip: Trip, argv: list[str], log: str, way: str) -> Way:
        from verl_mindspeed.doctor import diagnose
        from verl_mindspeed.launch import read_launch_file

        cfg = trip.config
        options: dict[str, Any] = {"release": self.release}
        if cfg.model:
            options["model_config"] = str(verl_side.fixture_models()[cfg.model])
        if way == "alone":
            found = diagnose(log.split("Error executing job")[0])
        elif way == "log":
            found = diagnose(log, **options)
        else:
            source = read_launch_file(launch_file(cfg, argv))
            found = diagnose(log, source.argv, source, **options)
        causes = [(c.key, c.fix, c.delete) for c in found.causes]
        return Way(found.exit_code, [f.verdict.kind for f in found.failures], causes,
                   [c.fix for c in found.causes if c.fix])

    def run(self, configs: list[differential.Config], rounds: int = 3) -> list[Trip]:
        rows = self._verdicts(configs)
        trips = [Trip(r.config, r.oracle_detail, worker_log(r.oracle_detail, differential.plain_argv(r.config)))
                 for r in rows if r.oracle == "error" and r.klass != "oracle-environment"]
        pending: list[tuple[Trip, Way, list[str]]] = []
        for trip in trips:
            argv = differential.plain_argv(trip.config)
            for way in WAYS:
                trip.ways[way] = self._doctor(trip, argv, trip.log, way)
                after = pasted_argv(argv, trip.ways[way].causes)
                if after is not None:
                    pending.append((trip, trip.ways[way], after))
        judged = self._verdicts([_with_argv(t.config, a) for t, _, a in pending])
        for (trip, way, _argv), row in zip(pending, judged):
            way.after = row.oracle_detail | {"verdict": row.oracle}
            way.cleared = not _same_raise(trip.oracle, way.after)
        self._follow(trips, rounds)
        return trips

    def _follow(self, trips: list[Trip], rounds: int) -> None:
        """Paste the doctor's lines (the launch given) and run again, while the oracle refuses and the doctor has
        lines, up to ``rounds`` runs after the first."""
        live = []
        for trip in trips:
            after = pasted_argv(differential.plain_argv(trip.config), trip.ways["launch"].causes)
            if after is not None:
                live.append((trip, after))
        for _ in range(rounds):
            if not live:
                return
            judged = self._verdicts([_with_argv(t.config, a) for t, a in live])
            nxt = []
            for (trip, argv), row in zip(live, judged):
                step = {"verdict": row.oracle, "argv": argv,
                        **{k: row.oracle_detail.get(k) for k in ("exc_type", "message", "where", "traceback")}}
                trip.followed.append(step)
                if row.oracle != "error" or row.klass == "oracle-environment":
                    continue
                way = self._doctor(trip, argv, worker_log(row.oracle_detail, argv), "launch")
                step["lines"], step["causes"], step["kinds"] = way.lines, way.causes, way.kinds
                again = pasted_argv(argv, way.causes)
                if again is not None and again != argv:
                    nxt.append((trip, again))
            live = nxt


def _with_argv(cfg: differential.Config, argv: list[str]) -> differential.Config:
    return differential.Config(f"{cfg.name}-pasted", model=cfg.model, argv=argv, entry=cfg.entry)


def _same_raise(before: dict, after: dict) -> bool:
    """The same raise: its site, message and the role whose build raised it (a line that moves the raise to another
    role, the critic built at the actor's sizes, has cleared this one; the next round's line is that role's)."""
    return after.get("verdict") == "error" and all(after.get(k) == before.get(k)
                                                   for k in ("exc_type", "message", "where", "role"))


def figures(trips: list[Trip]) -> dict[str, Any]:
    """The counts the docs and the test read."""
    out: dict[str, Any] = {"refused": len(trips)}
    for name in WAYS:
        ways = [t.ways[name] for t in trips]
        out[name] = {
            "named": sum(bool(w.causes) for w in ways),
            "acquitted": sum(not w.causes and any(k in ("upstream", "env", "version-skew", "resource")
                                                  for k in w.kinds) for w in ways),
            "with_lines": sum(w.after is not None for w in ways),
            "cleared": sum(bool(w.cleared) for w in ways),
            "passes_at_once": sum(w.after is not None and _runs(w.after["verdict"]) for w in ways),
        }
    out["followed_to_pass"] = sum(t.passes for t in trips)
    # followed to a launch the stack's oracle has no verdict on (the third stack's: a role mbridge builds)
    out["followed_unjudged"] = sum(bool(t.followed) and t.followed[-1]["verdict"] == "unjudged" for t in trips)
    return out


__all__ = ["RoundTrip", "Trip", "figures", "pasted_argv", "worker_log"]
