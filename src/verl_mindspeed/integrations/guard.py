"""Opt-in runtime guard: each verl engine runs the parallel layout its role asked for, or the run stops.

verl 0.9+ loads every ``verl.plugins`` entry point when ``verl`` is imported, in every process (the
driver, the task runner and each Ray worker); this module is verl-mindspeed's. Disabled (the default) it
reads one environment variable and nothing else. Enabled with ``VERL_MINDSPEED_GUARD=1`` (the Hydra
callback's ``guard=true`` option sets it and exports it to the Ray workers), it wraps, in each process:

- ``_init_device_mesh`` of verl's Megatron engines (``MegatronEngine`` and the MindSpeed engines, which
  call ``repatch`` there first): after each engine's call, the live sizes of megatron's parallel state
  (TP, PP, VPP, CP, EP, ETP) must be the ones the role's ``megatron.*`` asked for, and MindSpeed's
  namespace must hold every value verl handed to ``repatch`` for this role. Otherwise the engine raises
  :class:`~.guard_checks.GuardError` with one message naming the role that built the process groups and
  the override that aligns it. Switches an earlier build set differently are reported, not stopped on.
- MindSpeed's ``repatch`` as verl calls it (``mindspeed.megatron_adaptor.repatch`` and verl's binding of
  it): records the dict and MindSpeed's namespace before the first call.
- megatron's ``parallel_state.initialize_model_parallel``, only for the duration of each engine's
  ``_init_device_mesh``: records which role built the process groups (wrapping it for good would not
  survive MindSpeed's ``repatch``, which removes and re-applies its own patches of that function).

Modules imported later are wrapped by an import hook, right after they execute (verl's MindSpeed engine
binds ``repatch`` at import). verl 0.8 and earlier never load ``verl.plugins``: the guard does not run
there. It has been tested on CPU only, with MindSpeed's real ``repatch`` and megatron's real parallel
state over a fake process group (``tests/conformance/test_guard_oracle.py``); it has not run on an NPU.
"""

from __future__ import annotations

import os
import sys

ENV = "VERL_MINDSPEED_GUARD"
_TRUE = ("1", "true", "yes", "on")
_MEGATRON_ENGINE = "verl.workers.engine.megatron.transformer_impl"
_MINDSPEED_ENGINE = "verl.workers.engine.mindspeed.transformer_impl"
_ADAPTOR = "mindspeed.megatron_adaptor"
_TARGETS = (_MEGATRON_ENGINE, _MINDSPEED_ENGINE, _ADAPTOR)


def enabled(environ=os.environ) -> bool:
    return environ.get(ENV, "").strip().lower() in _TRUE


class _State:
    def __init__(self):
        self.owner = None  # guard_checks.Owner
        self.current = None  # the role whose engine is in _init_device_mesh
        self.sent = None  # the dict of the current engine's repatch
        self.before = None  # MindSpeed's namespace before the first repatch
        self.earlier = {}  # role -> dict its repatch received, in build order


_state = None
_wrappers: dict = {}


def installed() -> bool:
    return _state is not None


def reset() -> None:
    """Forget what earlier builds did (a fresh process, as far as the guard can tell); for tests."""
    if _state is not None:
        _state.__init__()


def is_wrapped(fn) -> bool:
    return getattr(fn, "_verl_mindspeed_guard", False)


def install() -> None:
    """Wrap what is imported already; hook what is imported later. Idempotent."""
    global _state
    if _state is not None:
        return
    _state = _State()
    sys.meta_path.insert(0, _Hook())
    for name in _TARGETS:
        if name in sys.modules:
            _patch(sys.modules[name])


# --------------------------------------------------------------------------- the import hook

class _Hook:
    """A meta-path finder that finds nothing itself: it lets the others find the targets and patches them once run."""

    def __init__(self):
        self._busy = set()

    def find_spec(self, name, path, target=None):
        if name not in _TARGETS or name in self._busy:
            return None
        self._busy.add(name)
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            self._busy.discard(name)
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _Loader(spec.loader)
        return spec


class _Loader:
    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _patch(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


def _patch(module) -> None:
    if module.__name__ in (_MEGATRON_ENGINE, _MINDSPEED_ENGINE):
        for value in list(vars(module).values()):
            if isinstance(value, type) and value.__module__ == module.__name__ \
                    and "_init_device_mesh" in vars(value) and not is_wrapped(vars(value)["_init_device_mesh"]):
                value._init_device_mesh = _wrap_mesh(vars(value)["_init_device_mesh"],
                                                     module.__name__ == _MEGATRON_ENGINE)
    for name in (_ADAPTOR, _MINDSPEED_ENGINE):
        holder = sys.modules.get(name)
        fn = getattr(holder, "repatch", None)
        if callable(fn) and not is_wrapped(fn):
            holder.repatch = _wrap_repatch(fn)


# --------------------------------------------------------------------------- the wrappers

def _mark(wrapper, original):
    wrapper._verl_mindspeed_guard = True
    wrapper.__wrapped__ = original
    wrapper.__name__ = getattr(original, "__name__", "wrapped")
    wrapper.__qualname__ = getattr(original, "__qualname__", wrapper.__name__)
    return wrapper


def _wrap_repatch(original):
    if id(original) in _wrappers:  # the adaptor's function and verl's binding of it share one wrapper
        return _wrappers[id(original)]

    def repatch(args):
        if _state.before is None:
            _state.before = _namespace() or {}
        result = original(args)
        _state.sent = dict(args)
        return result

    _wrappers[id(original)] = _mark(repatch, original)
    return _wrappers[id(original)]


def _wrap_mesh(original, calls_megatron: bool):
    """``calls_megatron``: ``original`` is the base engine's, the one that calls ``initialize_model_parallel``
    (the MindSpeed engines' override calls ``repatch`` and then the base one)."""

    def _init_device_mesh(self, *args, **kwargs):
        from megatron.core import parallel_state as mpu

        if _state.current is not None:  # the MindSpeed engine's override calls the base one: check once, outside
            return _recorded(original, self, args, kwargs, mpu) if calls_megatron else original(self, *args, **kwargs)
        from . import guard_checks as gc

        role = gc.role_of(getattr(getattr(self, "model_config", None), "model_type", None),
                          bool(getattr(self.engine_config, "forward_only", False)))
        was_built = _built(mpu)
        _state.current, _state.sent = role, None
        try:
            if calls_megatron:
                result = _recorded(original, self, args, kwargs, mpu)
            else:
                result = original(self, *args, **kwargs)
        finally:
            _state.current = None
        if not was_built and _built(mpu) and _state.owner is None:
            _state.owner = gc.Owner(role, gc.asked_sizes(lambda n: getattr(self.engine_config, n, None)))
        _check(role, self.engine_config, mpu, gc)
        return result

    return _mark(_init_device_mesh, original)


def _recorded(original, engine, args, kwargs, mpu):
    """Call the base ``_init_device_mesh`` with ``initialize_model_parallel`` recording its caller.

    Installed after ``repatch`` and removed right after: a ``repatch`` meanwhile would make MindSpeed take the
    recording wrapper for the function it patches, and keep it."""
    plain = mpu.initialize_model_parallel
    mpu.initialize_model_parallel = _recording(plain, _state.current)
    try:
        return original(engine, *args, **kwargs)
    finally:
        if is_wrapped(mpu.initialize_model_parallel):
            mpu.initialize_model_parallel = plain


def _recording(original, role):
    def initialize_model_parallel(*args, **kwargs):
        from . import guard_checks as gc

        if _state.owner is None:
            _state.owner = gc.Owner(role, gc.asked_sizes(lambda n: kwargs.get(n)))
        return original(*args, **kwargs)

    return _mark(initialize_model_parallel, original)


def _built(mpu) -> bool:
    check = getattr(mpu, "is_initialized", None) or mpu.model_parallel_is_initialized
    return bool(check())


def _namespace():
    try:
        from mindspeed.args_utils import get_full_args

        return dict(vars(get_full_args()))
    except Exception:  # noqa: BLE001 - no MindSpeed (a GPU run) or one without the namespace: nothing to compare
        return None


def _check(role, engine_config, mpu, gc) -> None:
    from ..i18n import default_lang

    lang = default_lang()
    asked = gc.asked_sizes(lambda n: getattr(engine_config, n, None))
    live = gc.live_sizes(lambda name: getattr(mpu, name, None))
    problem = gc.layout_mismatch(role, asked, live, _state.owner)
    sent, _state.sent = _state.sent, None
    if problem is None and sent is not None:
        namespace = _namespace()
        if namespace is not None:
            problem = gc.namespace_mismatch(role, sent, namespace)
            if problem is None:
                for note in gc.switch_notes(role, sent, namespace, _state.before or {}, _state.earlier):
                    _say(note.render(lang))
        _state.earlier[role] = sent
    if problem is not None:
        raise gc.GuardError(f"verl-mindspeed guard: {problem.render(lang)}")
    if _rank() == 0:
        _say(gc.passed(role, live).render(lang))


def _rank() -> int:
    try:
        import torch.distributed as dist

        return dist.get_rank() if dist.is_initialized() else 0
    except Exception:  # noqa: BLE001
        return 0


def _say(text: str) -> None:
    print(f"verl-mindspeed guard: {text}", file=sys.stderr, flush=True)


def export(cfg) -> None:
    """Turn the guard on for this launch: here and, through ``ray_kwargs.ray_init.runtime_env.env_vars``
    (which verl merges into the runtime env it starts Ray with), in every Ray worker, on every node."""
    from omegaconf import OmegaConf

    os.environ[ENV] = "1"
    OmegaConf.update(cfg, f"ray_kwargs.ray_init.runtime_env.env_vars.{ENV}", "1", force_add=True)


if enabled():
    try:
        install()
    except Exception as exc:  # noqa: BLE001 - verl swallows a plugin's exception: say it instead
        from ..i18n import default_lang, tr

        _say(tr("{env} is set but the guard could not be installed: {error}", env=ENV,
                error=repr(exc)).render(default_lang()))
