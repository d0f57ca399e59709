"""The Hydra callback every ``mindspeed`` preset installs: validate and inject inside verl's own process.

Hydra calls :meth:`MindSpeedCallback.on_run_start` with the composed config before the task function
runs; the task function (verl's ``main``) then receives a deep copy of that very object, so what is
injected here is what verl starts Ray with. Hydra turns an ordinary exception raised by a callback
into a warning, so an invalid configuration stops the run with ``SystemExit(1)``.

Installed by ``+mindspeed=<preset>``, or by hand::

    ++hydra.callbacks.verl_mindspeed._target_=verl_mindspeed.integrations.hydra_callback.MindSpeedCallback

Options (``++hydra.callbacks.verl_mindspeed.<name>=<value>``): ``release`` (MindSpeed release branch to
check against), ``strict`` (unknown keys far from any known key are errors too), ``model_config`` (a
HF config.json or its directory, for the model-aware checks; default: ``actor_rollout_ref.model.path``
when it exists on this machine), ``quiet`` (print only errors and warnings), ``lang`` (``en`` or ``zh``;
default: from ``LC_ALL`` / ``LANG``), ``guard`` (turn on the runtime guard of :mod:`.guard` in every Ray
worker; also on when ``VERL_MINDSPEED_GUARD=1`` is set here), ``upstream`` (also run the installed MindSpeed
and megatron-core on the launch, as ``check --upstream`` does, in a subprocess of verl's driver before Ray
starts; an upstream error stops the launch; also on when ``VERL_MINDSPEED_CHECK_UPSTREAM=1`` is set here),
``mindspeed_src``, ``megatron_src``, ``upstream_python`` (as ``check``'s options of the same names).

Imports neither torch nor verl: verl's config directory is located without importing verl.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Optional

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from ..i18n import LANGS, default_lang, render, tr, trn

CALLBACK_KEY = "hydra.callbacks.verl_mindspeed"
TARGET = "verl_mindspeed.integrations.hydra_callback.MindSpeedCallback"
#: The override that installs the callback without a preset; ``++`` so that it also works after one.
INSTALL_OVERRIDE = f"++{CALLBACK_KEY}._target_={TARGET}"
#: Set to 1 in verl's driver environment to run upstream as with the callback's ``upstream=true``.
UPSTREAM_ENV = "VERL_MINDSPEED_CHECK_UPSTREAM"


class MindSpeedCallback(Callback):
    def __init__(self, release: Optional[str] = None, strict: bool = False,
                 model_config: Optional[str] = None, quiet: bool = False, lang: Optional[str] = None,
                 guard: bool = False, upstream: bool = False, mindspeed_src: Optional[str] = None,
                 megatron_src: Optional[str] = None, upstream_python: Optional[str] = None) -> None:
        self.release = release
        self.strict = bool(strict)
        self.model_config = model_config
        self.quiet = bool(quiet)
        self.lang = lang if lang in LANGS else default_lang()
        self.guard = bool(guard)
        self.upstream = bool(upstream) or os.environ.get(UPSTREAM_ENV) == "1"
        self.upstream_options = {"mindspeed_src": mindspeed_src, "megatron_src": megatron_src,
                                 "python": upstream_python}

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        start = time.perf_counter()
        overrides = _task_overrides(config)
        try:
            res = validate_and_inject(config, overrides, release=self.release, strict=self.strict,
                                      model_config=self.model_config,
                                      upstream=self.upstream_options if self.upstream else None)
        except Exception as exc:  # noqa: BLE001 - never let a bug of ours pass silently as a Hydra warning
            message = tr("could not check this launch: {error}; stopping before Ray starts", error=repr(exc))
            print(f"verl-mindspeed: {render(message, self.lang)}", file=sys.stderr, flush=True)
            raise SystemExit(2) from exc
        from ..report import report

        text = report(res, overrides, time.perf_counter() - start, self.lang)
        if self.quiet and res.ok:
            text = text.splitlines()[-1]
        stream = sys.stdout if res.ok else sys.stderr
        print(text, file=stream, flush=True)
        if not res.ok:
            n = len(res.errors)
            message = trn("{n} MindSpeed configuration error; stopping before Ray starts (fix the override above, "
                          "or check again with 'verl-mindspeed check ...')",
                          "{n} MindSpeed configuration errors; stopping before Ray starts (fix the overrides above, "
                          "or check again with 'verl-mindspeed check ...')", n, n=n)
            print(f"verl-mindspeed: {render(message, self.lang)}", file=sys.stderr, flush=True)
            raise SystemExit(1)
        from . import guard

        if self.guard or guard.enabled():
            guard.export(config)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        message = tr("--multirun: the per-job configs are not checked; check each command with "
                     "'verl-mindspeed check ...'")
        print(f"verl-mindspeed: {render(message, self.lang)}", file=sys.stderr, flush=True)


def validate_and_inject(cfg: DictConfig, overrides: list[str], *, release: Optional[str] = None,
                        strict: bool = False, model_config: Optional[str] = None,
                        upstream: Optional[dict[str, Any]] = None):
    """Resolve ``cfg`` (a composed verl config), inject the normalized dicts into it, return the Resolution.

    ``upstream`` (the keyword arguments of :func:`verl_mindspeed.upstream.judge`) also runs MindSpeed itself on
    the launch. Injection happens only when there is no error, so a failing launch leaves ``cfg`` untouched.
    """
    from ..compose import find_verl_tree
    from ..errors import EvaluationError
    from ..launch import resolve_launch
    from ..resolver import inject

    try:
        tree = find_verl_tree()
    except EvaluationError:
        tree = None
    sources = None
    if upstream is not None:  # the release the sources name is the one the hand rules judge too
        from .. import upstream as run_upstream

        sources = run_upstream.locate(upstream.get("mindspeed_src"), upstream.get("megatron_src"))
        release = release or sources.known_release
    res = resolve_launch(cfg, overrides, tree, _config_name(cfg), strict=strict, release=release,
                         model_config=model_config)
    if sources is not None:
        run_upstream.judge(res, sources=sources, python=upstream.get("python"))
    if res.ok:
        inject(cfg, res)
    return res


def _task_overrides(cfg: DictConfig) -> list[str]:
    task = OmegaConf.select(cfg, "hydra.overrides.task", default=None)
    return [str(o) for o in task] if task is not None else []


def _config_name(cfg: DictConfig) -> str:
    name = OmegaConf.select(cfg, "hydra.job.config_name", default=None)
    return f"{name} (as composed by Hydra)" if name else "composed by Hydra"


__all__ = ["CALLBACK_KEY", "INSTALL_OVERRIDE", "MindSpeedCallback", "validate_and_inject"]
