"""The third stack's judge: MindSpeed core_r0.18.0 on megatron-core 0.18.2 with Megatron-Bridge 0.5.1.

MindSpeed core_r0.18.0 cannot run here (it imports ``megatron_adaptor``), so the oracle of this stack is its bridge
part, executed: each generated launch's Megatron-Bridge roles, their provider built by Megatron-Bridge 0.5.1 on
megatron-core 0.18.2 for the fixture model, then the overrides verl 0.9.1 hands it, through
``apply_overrides_and_finalize``. The keys of MindSpeed's argument namespace are held back (megatron_adaptor decides
them; ``verl_mindspeed.upstream._provider``). Each role is compared with the project's verdict on that stack (the
hand rules, ``--mindspeed-release core_r0.18.0``):

- ``agree``: both accept, or the bridge refuses and the project errs on the key it names (an AttributeError), or on
  the role (an exception of ``finalize``);
- ``missed``: the bridge refuses a key (AttributeError) that the project passes;
- ``stricter``: the project says ``bridge-refuses-unknown`` where the bridge accepts every key;
- ``mindspeed-absent``: megatron-core's own check in ``finalize`` raises where the project passes. That check runs
  here without MindSpeed core_r0.18.0, whose patches may change it on an NPU (the allgather dispatcher on a dense
  model: MindSpeed's ``variable_seq_length.py`` ``pre_validate_args``, in core_r0.18.0 as in the releases the
  MindSpeed oracle runs, hides ``variable_seq_lengths`` while megatron validates a model without experts), so it is
  no verdict; ``check --upstream`` reports it as a warning, and the report lists each distinct message.

The bridge needs the model's config: a configuration generated without a model is judged, on both sides, with a
fixture model in turn. Roles built another way (mbridge, the converter) are not this oracle's: not counted.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

RELEASE = "core_r0.18.0"


def judge(configs: list, progress=lambda text: None) -> list[dict[str, Any]]:
    """One row per (configuration, Megatron-Bridge role): ``{"config", "role", "bridge", "project", "klass"}``."""
    import verl_side

    from verl_mindspeed.upstream._bridge_layer import providers

    models = sorted(verl_side.fixture_models())
    pending = []
    for n, cfg in enumerate(configs, 1):
        if n % 100 == 0:
            progress(f"core_r0.18.0: composed and judged by the project: {n}/{len(configs)}")
        composed, argv, tree, issues = _judge()._composed(cfg)
        model_dir = str(verl_side.fixture_models()[cfg.model or models[n % len(models)]])
        res, roles = _roles(composed, argv, tree, issues, model_dir, cfg.preset is not None)
        pending += [(cfg, name, build, res, request) for name, build, request in roles]
    progress(f"core_r0.18.0: {len(pending)} roles through Megatron-Bridge 0.5.1")
    runs = providers("0.18.2", [p[4] for p in pending]) if pending else []
    return [_row(cfg, name, build, res, run) for (cfg, name, build, res, _), run in zip(pending, runs)]


@lru_cache(maxsize=None)
def _judge():
    """The differential's judge for this release, made once: only its composition (a base launch composed once per
    preset and entry) is used here."""
    import differential

    return differential.Judge(None, releases=[RELEASE])


def _roles(composed, argv, tree, issues, model_dir: str, injected: bool):
    """The project's resolution of a launch on this stack, and each role Megatron-Bridge builds, in verl's build
    order: ``(name, build, request)`` with the request the probe takes (MindSpeed's own keys held back)."""
    from verl_mindspeed.launch import resolve_launch
    from verl_mindspeed.simulate import MEGATRON_BRIDGE
    from verl_mindspeed.upstream import _provider

    res = resolve_launch(composed, argv, tree, "conformance", issues=issues, release=RELEASE,
                         model_config=model_dir, injected=injected)
    sim = res.simulation
    if sim is None:
        return res, []
    held = _provider.held_back(RELEASE, "0.18.2", res.model.is_mla)
    roles = []
    for name in sim.order:
        build = sim.builds[name]
        if build.bridge_kind != MEGATRON_BRIDGE or (build.inherits_actor and "actor" in sim.builds):
            continue
        given = {k: v for k, v in build.given.items() if k not in held}
        roles.append((name, build, {"model_dir": model_dir, "keys": [], "overrides": json.loads(
            json.dumps(_provider.provider_overrides(build.megatron, given), default=str))}))
    return res, roles


@dataclass
class Verdict:
    """A plain launch on this stack, as the round trip reads a judge's row: verl 0.9.1's own checks (its config,
    driver and engine code, executed as on the other stacks), then each role Megatron-Bridge 0.5.1 builds on
    megatron-core 0.18.2. ``oracle`` is ``error`` (``oracle_detail``: the first raise, its traceback), ``ok``, or
    ``unjudged`` (no role built by Megatron-Bridge: mbridge's and the converter's are not this stack's oracle)."""

    config: Any
    oracle: str
    oracle_detail: dict
    klass: str = "agree"


class RoundJudge:
    """``judge(configs)`` for the round trip (``roundtrip.RoundTrip(judge=RoundJudge())``): a launch's verdict on
    this stack. A configuration without a model needs one for the bridge: give each a fixture model first."""

    def judge(self, configs: list) -> list[Verdict]:
        import differential
        import verl_side

        from verl_mindspeed.upstream._bridge_layer import providers

        out, pending = [], []
        for cfg in configs:
            composed, argv, tree, issues = _judge()._composed(cfg)
            model_dir = str(verl_side.fixture_models()[cfg.model])
            up = verl_side.upstream_of(composed, model_dir, tree.otc_defaults,
                                       validates=differential._validates(tree))
            if up.verl_error is not None:
                out.append(Verdict(cfg, "error", {"verdict": "error", **up.verl_error}))
                continue
            _, roles = _roles(composed, argv, tree, issues, model_dir, False)
            out.append(Verdict(cfg, "unjudged" if not roles else "ok", {"verdict": "ok"},
                               "oracle-environment" if not roles else "agree"))
            pending += [(out[-1], name, request) for name, _, request in roles]
        runs = providers("0.18.2", [p[2] for p in pending]) if pending else []
        for (verdict, name, _), run in zip(pending, runs):
            err = run["error"]
            if err is None or verdict.oracle == "error":
                continue  # the first role that refuses stops verl's build
            verdict.oracle = "error"
            verdict.oracle_detail = {"verdict": "error", "stage": "build", "role": name, "exc_type": err["type"],
                                     "message": err["message"], "where": f"{err['file']}:{err['line']}",
                                     "traceback": err.get("traceback")}
        return out


def _row(cfg, name: str, build, res, run: dict) -> dict[str, Any]:
    err = run["error"]
    errors = list(res.errors)
    on_role = [i for i in errors if i.key.startswith(build.prefix)]
    if err is None:
        klass = "stricter" if any(i.rule == "bridge-refuses-unknown" and i.key.startswith(build.prefix)
                                  for i in errors) else "agree"
    elif err["type"] == "AttributeError":
        named = next((k for k in build.given if f"'{k}'" in err["message"]), None)
        klass = "agree" if named and any(i.key == build.key(named) for i in errors) else "missed"
    else:
        klass = "agree" if on_role or errors else "mindspeed-absent"
    return {"config": cfg.name, "role": name, "bridge": err and f"{err['type']}: {err['message']}"[:200],
            "project": sorted({i.rule for i in on_role}), "klass": klass}


def table(rows: list[dict[str, Any]]) -> dict[str, int]:
    counts = Counter(r["klass"] for r in rows)
    classes = ("agree", "missed", "stricter", "mindspeed-absent")
    return {"roles": len(rows), "configs": len({r["config"] for r in rows}),
            "refused": sum(1 for r in rows if r["bridge"]), **{k: counts.get(k, 0) for k in classes}}
