"""``verl-mindspeed check``: the pre-flight check of a verl launch command."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional, Sequence

from .. import __version__
from ..catalog import universe
from ..compose import VerlTree, compose_argv
from ..errors import EvaluationError, Issue
from ..resolve import Resolution, resolve
from ..rules._base import issue
from .render import LABELS, ROLE_ORDER, feature_table, fix_line, issues_block


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check", help="check the MindSpeed options of a verl launch command, before launching",
        description="Give exactly the arguments that follow 'python3 -m verl.trainer.main_ppo'. "
                    "Exit 0: no errors; 1: the configuration has errors; 2: it could not be evaluated.",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    p.add_argument("--strict", action="store_true", help="unknown keys far from any known key are errors too")
    p.add_argument("--verl-config-dir", help="verl's trainer/config directory (default: the installed verl's)")
    p.add_argument("--model-config", help="a HF config.json, or a directory holding one, for model-aware checks")
    p.add_argument("--mindspeed-release", default=universe.DEFAULT_RELEASE, choices=universe.releases(),
                   help="MindSpeed release branch to check against (default: %(default)s)")
    p.add_argument("--args-file", help="read the argv from a file, one argument per line ('#' comments)")
    p.add_argument("--lang", choices=("en", "zh"), default="en", help="language of the report's table and headings")
    p.add_argument("argv", nargs=argparse.REMAINDER, help="the launch arguments (after an optional --)")
    p.set_defaults(run=run)


#: check's own options and whether each takes a value; everything else is the launch's argv.
OWN_OPTIONS = {"--json": False, "--strict": False, "--verl-config-dir": True, "--model-config": True,
               "--mindspeed-release": True, "--args-file": True, "--lang": True, "-h": False, "--help": False}


def split_own_options(args: list[str]) -> tuple[list[str], list[str]]:
    """Leading options of ``check`` vs the launch argv (which may itself start with ``--config-path``)."""
    ours: list[str] = []
    i = 0
    while i < len(args):
        name = args[i].split("=", 1)[0]
        if args[i] == "--":
            return ours, args[i + 1:]
        if name not in OWN_OPTIONS:
            break
        ours.append(args[i])
        if OWN_OPTIONS[name] and "=" not in args[i] and i + 1 < len(args):
            ours.append(args[i + 1])
            i += 1
        i += 1
    return ours, args[i:]


def launch_argv_of(ns: argparse.Namespace) -> list[str]:
    """The launch argv given to ``check`` or ``run``: ``--args-file`` lines first, then the command line."""
    argv = [a for a in ns.argv if a != "--"] if ns.argv else []
    return read_args_file(ns.args_file) + argv if ns.args_file else argv


def read_args_file(path: str) -> list[str]:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]


def evaluate(argv: list[str], *, strict: bool = False, verl_config_dir: Optional[str] = None,
             model_config: Optional[str] = None, release: Optional[str] = None) -> Resolution:
    """Compose, load the model if possible, resolve. Raises EvaluationError (exit 2)."""
    comp = compose_argv(argv, verl_config_dir)
    res = resolve_launch(comp.cfg, argv, comp.tree, f"{comp.tree.config_dir}/{comp.config_name}.yaml",
                         issues=comp.issues, strict=strict, release=release, model_config=model_config)
    res.presets = preset_settings(comp.overrides)
    res.receives = mindspeed_receives(comp, res)
    return res


def resolve_launch(cfg: Any, argv: list[str], tree: Optional[VerlTree], config_label: str, *,
                   issues: Sequence[Issue] = (), strict: bool = False, release: Optional[str] = None,
                   model_config: Optional[str] = None) -> Resolution:
    """Resolve a composed launch config the same way for ``check`` and the in-process callback.

    Loads the model for the model-aware rules, puts ``issues`` (composition problems) first,
    writes each issue's corrected override from ``argv`` and records the versions involved.
    """
    model, model_issues = load_model(cfg, model_config)
    res = resolve(cfg, strict=strict, release=release, model=model,
                  known_megatron_keys=tree.known_megatron_keys if tree else None,
                  otc_defaults=tree.otc_defaults if tree else None)
    res.issues = [replace(i, override=fix_line(i, argv)) for i in [*issues, *model_issues, *res.issues]]
    res.versions.update({"verl": tree.version if tree else "not found", "verl_config": config_label,
                         "verl_mindspeed": __version__, "transformer_config": universe.transformer_config_fields()[1]})
    return res


def mindspeed_receives(comp: Any, res: Resolution) -> dict[str, Any]:
    """What MindSpeed's ``repatch`` gets per worker once the dicts are injected, in this verl tree's era."""
    import copy

    from ..integrations import verl_versions
    from ..resolve import inject

    try:
        era = verl_versions.era_of_tree(comp.tree.config_dir)
    except ValueError:
        return {}
    cfg = copy.deepcopy(comp.cfg)
    inject(cfg, res)
    calls = verl_versions.repatch_calls(cfg, era)
    return {"era": era, "calls": [{"roles": list(c.roles), "source": c.source, "args": c.args} for c in calls]}


def preset_settings(overrides: list[str]) -> dict[str, dict[str, Any]]:
    """What each ``+mindspeed=<preset>`` of the (composed) overrides sets, key by key."""
    from ..compose._argv import parse_overrides
    from ..integrations import presets

    out: dict[str, dict[str, Any]] = {}
    for override in parse_overrides(overrides):
        if override.key_or_group != presets.GROUP:
            continue
        value = override.value()
        for name in value if isinstance(value, list) else [value]:
            if isinstance(name, str) and name in presets.names():
                out[name] = presets.settings(name)
    return out


def load_model(cfg: Any, explicit: Optional[str]) -> tuple[Any, list[Issue]]:
    """The model spec for model-aware checks (from --model-config or a local model path) and a note on it."""
    from omegaconf import OmegaConf

    path = explicit or OmegaConf.select(cfg, "actor_rollout_ref.model.path", default=None)
    if not isinstance(path, str) or not (explicit or Path(path).exists()):
        return None, []
    from ..model import load_model_spec

    spec, note = load_model_spec(path)
    key = "--model-config" if explicit else "actor_rollout_ref.model.path"
    if spec is None:
        return None, [issue("note", key, f"model-aware checks skipped: {note}", "model")]
    return spec, [issue("note", key, f"model-aware checks use {spec.architecture} from {path}", "model")]


def run(ns: argparse.Namespace) -> int:
    argv = launch_argv_of(ns)
    start = time.perf_counter()
    try:
        res = evaluate(argv, strict=ns.strict, verl_config_dir=ns.verl_config_dir,
                       model_config=ns.model_config, release=ns.mindspeed_release)
    except EvaluationError as exc:
        if ns.json:
            print(json.dumps({"ok": False, "fatal": str(exc), "errors": [], "warnings": [], "roles": {}}))
        else:
            print(f"verl-mindspeed check: cannot evaluate this command: {exc}", file=sys.stderr)
        return 2
    elapsed = time.perf_counter() - start
    if ns.json:
        print(json.dumps(res.to_json(), indent=2, ensure_ascii=False, default=str))
    else:
        print(report(res, argv, elapsed, ns.lang))
    return 0 if res.ok else 1


def report(res: Resolution, argv: list[str], elapsed: float, lang: str = "en") -> str:
    words = LABELS[lang]
    v = res.versions
    lines = [f"verl-mindspeed check  |  verl {v.get('verl')}  |  MindSpeed {res.release}  |  {v.get('verl_config')}", ""]
    for name, settings in res.presets.items():
        lines.append(words["preset"].format(name=name))
        lines += [f"  {key}={value}" for key, value in settings.items()]
        lines.append("")
    if res.roles:
        lines += [feature_table(res.roles, lang), ""]
    lines += issues_block(words["errors"], "✗", res.errors, argv, lang)
    lines += issues_block(words["warnings"], "!", res.warnings, argv, lang)
    notes = [i for i in res.notes if i.rule != "inject"]
    lines += issues_block(words["notes"], "·", notes, argv, lang)
    injected = sorted({i.key.rsplit(".", 1)[-1] for i in res.notes if i.rule == "inject" and "added" in i.message})
    if injected:
        lines.append(f"{words['injected']}: {', '.join(injected)}")
    roles = ", ".join(r for r in ROLE_ORDER if r in res.roles) or "-"
    verdict = words["ok"] if res.ok else words["failed"]
    summary = words["summary"].format(n_err=len(res.errors), n_warn=len(res.warnings), roles=roles)
    lines.append(f"{verdict}: {summary}; {elapsed:.2f} s")
    return "\n".join(lines)
