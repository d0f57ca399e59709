"""The launch pipeline: a verl launch's argv (or an already composed config) -> one Resolution.

compose -> model -> resolve -> presets and what MindSpeed receives. ``check``, the Hydra
callback and the launcher all go through here; the CLI only parses arguments and renders.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path
from typing import Any, Optional, Sequence

from . import eras
from . import stack as stacks
from ._version import __version__
from .catalog import universe
from .compose import VerlTree, compose_argv, era_of_tree
from .compose._script import LaunchFile, read_launch_file
from .errors import EvaluationError, Issue, Location
from .i18n import tr
from .resolver import Resolution, follow_fixes, follows, resolve, review
from .rules._base import issue


def read_args_file(path: str) -> list[str]:
    """The argv of an ``--args-file``: one argument per line, or a shell script's ``python -m`` launch line."""
    return read_launch_file(path).argv


def evaluate(argv: list[str], *, strict: bool = False, verl_config_dir: Optional[str] = None,
             model_config: Optional[str] = None, release: Optional[str] = None,
             launcher: bool = False, device_memory_gib: float = 64.0, verl_version: Optional[str] = None,
             entry: Optional[str] = None, source: Optional[LaunchFile] = None, megatron_core: Optional[str] = None,
             bridge: Optional[dict[str, Optional[str]]] = None, verl_source: Optional[str] = None,
             follow: bool = True) -> Resolution:
    """Compose, load the model if possible, resolve. Raises EvaluationError (exit 2).

    The launch is judged as it will run: injected when it goes through ``launcher`` (``verl-mindspeed
    run`` / ``python3 -m verl_mindspeed.main_ppo``) or carries a ``+mindspeed=<preset>``, which installs
    the callback; plain otherwise. ``verl_version`` checks against that verl release's tree (fetched from
    PyPI once); ``entry`` is the module the argv is given to (default ``verl.trainer.main_ppo``, or the
    ``python -m`` module of ``source``); ``source`` is the launch file the argv starts with: its locations
    and findings are kept; ``megatron_core`` and ``bridge`` (:func:`verl_mindspeed.stack.parse_bridge_option`) give
    the stack's layers the options name (:func:`choose_stack`); ``verl_source`` a verl or verl-recipe checkout
    whose entries and configs are composed as verl composes them (else an entry or config the tree lacks is judged
    against the verl config it extends); ``follow`` whether a line that sets a key as meant carries what that key then
    needs (:func:`~verl_mindspeed.resolver.follow_fixes`: the launch judged again with the line pasted; off where
    only the errors count, as for the planner).
    """
    locations: list[Optional[Location]] = []
    if source is not None:
        entry = entry or source.entry
        locations = [*source.locations, *[None] * max(0, len(argv) - len(source.argv))]
    if verl_config_dir is not None and not _is_dir(verl_config_dir):
        raise EvaluationError(tr("--verl-config-dir {path} is not a directory", path=verl_config_dir))
    try:
        comp = compose_argv(argv, verl_config_dir, verl_version=verl_version, entry=entry, verl_source=verl_source)
    except OSError as exc:  # a path the file system refuses (too long, no permission...)
        raise EvaluationError(tr("cannot read {path}: {reason}", path=_short(exc.filename), reason=exc.strerror
                                 or str(exc))) from exc
    presets = preset_settings(comp.parsed)
    res = resolve_launch(comp.cfg, argv, comp.tree, f"{comp.tree.config_dir}/{comp.config_name}.yaml",
                         issues=[*(source.issues if source else ()), *comp.issues], strict=strict, release=release,
                         model_config=model_config, injected=launcher or bool(presets), megatron_core=megatron_core,
                         bridge=bridge,
                         device_memory_gib=device_memory_gib, locations=locations)
    res.presets = presets
    if follow and any(follows(i) for i in res.issues):
        def judge(fixed: list[str]) -> list[Issue]:  # the launch with a key's line pasted, as the user would
            try:
                return evaluate(fixed, strict=strict, verl_config_dir=verl_config_dir, model_config=model_config,
                                release=release, launcher=launcher, device_memory_gib=device_memory_gib,
                                verl_version=verl_version, entry=entry, megatron_core=megatron_core, bridge=bridge,
                                verl_source=verl_source, follow=False).issues
            except EvaluationError:
                return []
        res.issues = follow_fixes(res.issues, argv, judge)
    return res


def resolve_launch(cfg: Any, argv: list[str], tree: Optional[VerlTree], config_label: str, *,
                   issues: Sequence[Issue] = (), strict: bool = False, release: Optional[str] = None,
                   model_config: Optional[str] = None, injected: bool = True,
                   device_memory_gib: float = 64.0,
                   locations: Optional[Sequence[Optional[Location]]] = None, megatron_core: Optional[str] = None,
                   bridge: Optional[dict[str, Optional[str]]] = None) -> Resolution:
    """Resolve a composed launch config the same way for ``check`` and the in-process callback.

    Loads the model for the model-aware rules, takes the era from the verl tree, puts ``issues``
    (composition problems) first, writes each issue's corrected override from ``argv`` and records
    the versions involved.
    """
    from omegaconf.errors import OmegaConfBaseException

    model, model_issues, model_path = load_model(cfg, model_config)
    stack, release_issues = choose_stack(release, cfg, tree, megatron_core=megatron_core, bridge=bridge)
    release = stack.mindspeed
    model_issues = [*release_issues, *model_issues]
    era = era_of(tree)
    try:
        res = resolve(cfg, strict=strict, release=release, model=model, era=era, injected=injected, stack=stack,
                      device_memory_gib=device_memory_gib,
                      driver_validates=tree.entry.validates if tree and tree.entry else True,
                      known_megatron_keys=tree.known_megatron_keys if tree else None,
                      otc_defaults=tree.otc_defaults if tree else None)
    except OmegaConfBaseException as exc:  # a value the checks need does not resolve: that is the error to report
        res = Resolution([_unresolved(exc)], {}, release, era=era, injected=injected, stack=stack)
    res.model, res.model_dir = model, model_path
    res.issues = review([*issues, *model_issues, *res.issues], cfg, argv, tree, locations)
    res.versions.update({"verl": tree.version if tree else "not found", "verl_config": config_label,
                         "verl_mindspeed": __version__, "transformer_config": universe.transformer_config_fields()[1]})
    return res


def choose_stack(release: Optional[str], cfg: Any = None, tree: Optional[VerlTree] = None, *,
                 megatron_core: Optional[str] = None,
                 bridge: Optional[dict[str, Optional[str]]] = None) -> tuple[stacks.Stack, list[Issue]]:
    """The stack to judge the launch on (:mod:`verl_mindspeed.stack`) and the notes on how it was chosen."""
    chosen, source, notes = choose_release(release, default=_default_release(cfg))
    if megatron_core is not None and stacks.line_of(megatron_core) is None:
        raise EvaluationError(tr("--megatron-core {value!r} is not a version", value=megatron_core))
    verl = tree.version if tree is not None else "?"
    return stacks.build_stack(verl, chosen, source, core=megatron_core, bridges=bridge), notes


def _default_release(cfg: Any) -> str:
    """The release assumed when none is given or installed: one whose stack can start the launch. A launch whose
    actor builds through Megatron-Bridge (verl 0.9's default) needs megatron-core 0.15+, so the newest MindSpeed
    release of such a line that imports without ``megatron_adaptor``; else the newest release branch."""
    from omegaconf import OmegaConf

    from .simulate import MEGATRON_BRIDGE, bridge_kind

    section = {}
    for key in ("use_mbridge", "vanilla_mbridge"):  # only these two: another key's interpolation may not resolve
        try:
            section[key] = OmegaConf.select(cfg, f"actor_rollout_ref.actor.megatron.{key}", default=None)
        except Exception:  # an interpolation that does not resolve: its own check reports it
            section[key] = None
    if cfg is not None and bridge_kind(section) == MEGATRON_BRIDGE:
        return stacks.BRIDGE_DEFAULT_RELEASE
    return universe.DEFAULT_RELEASE


def choose_release(release: Optional[str], default: str = universe.DEFAULT_RELEASE) -> tuple[str, str, list[Issue]]:
    """The MindSpeed release to check against and how it was learnt: the one asked for (short names accepted),
    else the one installed here, else ``default``; with a note saying which and why."""
    if release:
        found = universe.canonical_release(release)
        if found is None:
            raise EvaluationError(tr("unknown MindSpeed release {release!r}; known: {known}", release=release,
                                     known=", ".join(universe.releases())))
        return found, stacks.GIVEN, []
    installed, seen = universe.installed_release()
    if installed:
        return installed, stacks.FOUND, [issue("note", "--mindspeed-release", tr(
            "checking against MindSpeed {release}, the release installed here ({seen})", release=installed,
            seen=seen), "release")]
    if seen:
        return default, stacks.ASSUMED, [issue("note", "--mindspeed-release", tr(
            "{seen} is installed here but names no known release branch; checking against {release} (pass "
            "--mindspeed-release to choose)", seen=seen, release=default), "release")]
    return default, stacks.ASSUMED, []


def era_of(tree: Optional[VerlTree]) -> str:
    """The era of the verl tree being checked (verl 0.8+ engines when it cannot be told)."""
    if tree is None:
        return eras.ENGINE
    try:
        return era_of_tree(tree.trainer_config_dir)
    except ValueError:
        return eras.ENGINE


def preset_settings(overrides: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """What each ``+mindspeed=<preset>`` of the (composed) overrides sets, key by key: Hydra's parsed overrides
    (``Composition.parsed``), or their text."""
    from . import presets
    from .overrides import parse_overrides

    out: dict[str, dict[str, Any]] = {}
    texts = [o for o in overrides if isinstance(o, str)]
    parsed = [o for o in overrides if not isinstance(o, str)] + (parse_overrides(texts) if texts else [])
    for override in parsed:
        if override.key_or_group != presets.GROUP:
            continue
        value = override.value()
        for name in value if isinstance(value, list) else [value]:
            if isinstance(name, str) and name in presets.names():
                out[name] = presets.settings(name)
    return out


def load_model(cfg: Any, explicit: Optional[str]) -> tuple[Any, list[Issue], Optional[str]]:
    """The model spec for model-aware checks (from --model-config or a local model path), a note on it, and the
    path it was read from (``check --upstream`` runs the model bridge on it).

    A ``--model-config`` that cannot be read or holds nonsense is an error on ``--model-config``;
    a model path that does not exist here, or an architecture this library does not map, is a note.
    """
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    key = "--model-config" if explicit else "actor_rollout_ref.model.path"
    try:
        path = explicit or OmegaConf.select(cfg, "actor_rollout_ref.model.path", default=None)
    except OmegaConfBaseException as exc:
        return None, [issue("note", key, tr("model-aware checks skipped: the model path does not resolve ({error})",
                                            error=str(exc).splitlines()[0]), "model")], None
    if not isinstance(path, str) or not path:
        return None, [], None
    from .model import load_model_spec
    from .model.hf import SUPPORTED_ARCHITECTURES, local_model_dir

    if not explicit:
        found = local_model_dir(path)
        if found is None:
            shown = str(Path(path).expanduser()) if path.startswith("~") else path
            return None, [issue("note", key, tr("model-aware checks skipped: the model path {path} does not exist on "
                                                "this machine, nor in the Hugging Face cache (give its config.json "
                                                "with --model-config)", path=shown), "model")], None
        path = found

    spec, note = load_model_spec(path)
    problem = _spec_problem(spec) if spec is not None else note
    if problem is None:
        return spec, [issue("note", key, tr("model-aware checks use {architecture} from {path}",
                                            architecture=spec.architecture, path=path), "model")], path
    arch = _architecture(path)
    severity = "error" if explicit and (arch is None or arch in SUPPORTED_ARCHITECTURES) else "note"
    return None, [issue(severity, key, tr("model-aware checks skipped: {reason}", reason=problem), "model")], None


def _unresolved(exc: Exception) -> Issue:
    key = getattr(exc, "full_key", None) or "?"
    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return issue("error", key, tr("{key} does not resolve: {reason}", key=key, reason=reason), "interpolation",
                 hint=tr("set the variable, or write the value itself instead of the interpolation"))


#: Upper bounds of model sizes, far above any real model (the largest have ~100 layers, ~500 experts).
_MOST = {"num_layers": 10_000, "num_experts": 100_000, "first_k_dense_replace": 10_000, "moe_layer_freq": 10_000}
_MOST_SIZE = 2 ** 31 - 1


def _spec_problem(spec: Any) -> Optional[str]:
    """Why a mapped model spec cannot be used (a size that is not a positive integer), or None."""
    hints = typing.get_type_hints(type(spec))
    for f in dataclasses.fields(spec):
        value, hint = getattr(spec, f.name), hints[f.name]
        if hint not in (int, Optional[int]) or (value is None and hint is not int):
            continue
        least = 0 if f.name == "first_k_dense_replace" or hint is not int else 1
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            return tr("{field}={value!r} in the model config is not an integer >= {least}", field=f.name,
                      value=value, least=least)
        most = _MOST.get(f.name, _MOST_SIZE)
        if value > most:  # the checks walk layers and experts one by one: a huge count would never finish
            return tr("{field}={value!r} in the model config is larger than {most}, beyond any real model",
                      field=f.name, value=value, most=most)
    layers = getattr(spec, "mlp_only_layers", ())
    if len(layers) > _MOST["num_layers"] or not all(isinstance(i, int) and not isinstance(i, bool) for i in layers):
        return tr("mlp_only_layers={value!r} in the model config is not a list of layer indices", value=layers)
    return None


def _architecture(path: str) -> Optional[str]:
    try:
        file = Path(path) / "config.json" if Path(path).is_dir() else Path(path)
        archs = json.loads(file.read_text(encoding="utf-8")).get("architectures") or []
        return archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None
    except (OSError, ValueError, AttributeError):
        return None


def _is_dir(path: str) -> bool:
    try:
        return Path(path).is_dir()
    except (OSError, ValueError):
        return False


def _short(text: Any, limit: int = 120) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit // 2] + "..." + text[-limit // 2:]


__all__ = ["LaunchFile", "choose_release", "choose_stack", "era_of", "evaluate", "load_model", "preset_settings",
           "read_args_file", "read_launch_file",
           "resolve_launch"]
