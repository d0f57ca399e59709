"""The doctor's round trip through the preset: a launch with ``+mindspeed=<preset>`` as it really runs, and what its
log shows at each step, followed as a user would.

    trips = PresetTrip(oracle_pool, release).run(configs, rounds=6)

Each round, for each launch still failing:

1. The preset's callback (:class:`~verl_mindspeed.integrations.hydra_callback.MindSpeedCallback`, run on the config
   Hydra composes, its overrides under ``hydra``) checks the launch. Where ``check`` errs it stops the launch before
   Ray: the log is what it printed, and the doctor reads that log alone (no launch given).
2. Where the callback lets it through, its injection is what verl runs: the oracle (verl 0.9.1's config code, driver
   and engine checks, then MindSpeed's and megatron-core's code) runs the injected config. Where that code refuses,
   the log is the worker's traceback and Hydra's override list (``roundtrip.worker_log``, the preset in the list),
   and the doctor reads it with the launch given.
3. The doctor's lines are pasted as printed; a line "clears" when the error it was given for (the callback's
   ``(rule, key)``, or the oracle's raise) is gone in the next round.

A launch "runs" when the callback passes it and the oracle accepts the injected config.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass, field
from typing import Optional

import differential
import roundtrip
import verl_side


@dataclass
class Step:
    stage: str
    """``callback`` (check stopped it), ``upstream`` (the oracle refused the injected config) or ``runs``."""
    argv: list[str]
    errors: set = field(default_factory=set)
    """The callback's errors ``(rule, key)``, or the oracle's raise ``(exc_type, message, where)``."""
    causes: list = field(default_factory=list)
    exit_code: Optional[int] = None
    kinds: list = field(default_factory=list)


@dataclass
class PresetRun:
    config: differential.Config
    steps: list[Step] = field(default_factory=list)

    @property
    def runs(self) -> bool:
        return bool(self.steps) and self.steps[-1].stage == "runs"


def launch_argv(cfg: differential.Config) -> list[str]:
    """The launch line with its preset, as the user types it."""
    return list(cfg.argv) if cfg.argv is not None else [*differential.base_of(cfg),
                                                         *differential.settings_args(cfg.settings)]


class PresetTrip:
    def __init__(self, pool, release: str):
        self.release = release
        self.judge = differential.Judge(pool, releases=[release], injected=True)

    def _model(self, cfg: differential.Config) -> Optional[str]:
        return str(verl_side.fixture_models()[cfg.model]) if cfg.model else None

    def _callback(self, cfg: differential.Config, argv: list[str]) -> tuple[set, str]:
        """The callback on the launch: its errors and everything it printed (empty errors: it let the launch on)."""
        from omegaconf import open_dict

        from verl_mindspeed.compose import compose_argv
        from verl_mindspeed.integrations.hydra_callback import MindSpeedCallback, validate_and_inject

        composed = compose_argv(argv, entry=cfg.entry).cfg
        with open_dict(composed):
            composed.hydra = {"overrides": {"task": [a for a in argv if not a.startswith("--")]}}
        res = validate_and_inject(composed.copy(), [a for a in argv if not a.startswith("--")],
                                  release=self.release, model_config=self._model(cfg))
        if res.ok:
            return set(), ""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), contextlib.suppress(SystemExit):
            MindSpeedCallback(release=self.release, model_config=self._model(cfg)).on_run_start(composed)
        return {(i.rule, i.key) for i in res.errors}, out.getvalue() + err.getvalue()

    def _doctor(self, cfg, step: Step, log: str, argv: Optional[list[str]]) -> None:
        from verl_mindspeed.doctor import diagnose
        from verl_mindspeed.launch import read_launch_file

        options = {"release": self.release, **({"model_config": self._model(cfg)} if cfg.model else {})}
        if argv is None:
            found = diagnose(log, **options)
        else:
            source = read_launch_file(roundtrip.launch_file(cfg, argv))
            found = diagnose(log, source.argv, source, **options)
        step.causes = [(c.key, c.fix, c.delete) for c in found.causes]
        step.exit_code, step.kinds = found.exit_code, [f.verdict.kind for f in found.failures]

    def run(self, configs: list[differential.Config], rounds: int = 6) -> list[PresetRun]:
        runs = [PresetRun(cfg) for cfg in configs if cfg.preset]
        live = [(run, launch_argv(run.config)) for run in runs]
        for _ in range(rounds + 1):
            upstream = []
            for run, argv in live:
                errors, log = self._callback(run.config, argv)
                if errors:
                    step = Step("callback", argv, errors)
                    self._doctor(run.config, step, log, None)
                    run.steps.append(step)
                else:
                    upstream.append((run, argv))
            rows = self.judge.judge([roundtrip._with_argv(run.config, argv) for run, argv in upstream])
            for (run, argv), row in zip(upstream, rows):
                if row.oracle != "error":
                    run.steps.append(Step("runs", argv))
                    continue
                detail = row.oracle_detail
                step = Step("upstream", argv, {(detail.get("exc_type"), detail.get("message"), detail.get("where"))})
                self._doctor(run.config, step, roundtrip.worker_log(detail, argv), argv)
                run.steps.append(step)
            live = []
            for run in runs:
                last = run.steps[-1] if run.steps else None
                if last is not None and last.stage != "runs" and len(run.steps) <= rounds:
                    after = roundtrip.pasted_argv(last.argv, last.causes)
                    if after is not None and after != last.argv:
                        live.append((run, after))
        return runs


def figures(runs: list[PresetRun]) -> dict:
    """The counts the docs and the test read. A step's lines "clear" when none of its errors is in the next step."""
    steps = [(run, i, s) for run in runs for i, s in enumerate(run.steps) if s.stage != "runs"]
    followed = [(s, run.steps[i + 1]) for run, i, s in steps if i + 1 < len(run.steps)]
    out = {"launches": len(runs), "run_at_once": sum(bool(r.steps) and r.steps[0].stage == "runs" for r in runs),
           "runs_after": sum(r.runs for r in runs), "stuck": sum(not r.runs for r in runs)}
    for stage in ("callback", "upstream"):
        mine = [s for _run, _i, s in steps if s.stage == stage]
        out[stage] = {"failures": len(mine), "named": sum(bool(s.causes) for s in mine),
                      "with_lines": sum(any(f or d for _k, f, d in s.causes) for s in mine),
                      "acquitted": sum(not s.causes and any(k in ("upstream", "env", "version-skew", "resource")
                                                            for k in s.kinds) for s in mine),
                      "kept": sum(bool(s.errors & n.errors) for s, n in followed if s.stage == stage)}
    return out


__all__ = ["PresetRun", "PresetTrip", "Step", "figures", "launch_argv"]
