"""MindSpeed's side of the oracle: its adaptor imported once, its argument namespace, its patch passes and
``repatch``, which features each pass applied and registered, and the per-case return to the state right after
the import. ``_oracle_worker.py`` adds megatron's side (process groups, config build, layers, recompute).
"""

from __future__ import annotations

import contextlib
import copy
import io
import logging
import os
import sys
import warnings

try:  # as part of the package, or as the worker's sibling (the worker has put this folder on sys.path)
    from ._oracle_harness import FilteredSys, dry_run
except ImportError:
    from _oracle_harness import FilteredSys, dry_run


#: Modules whose functions and classes a case's patches may replace, and whose classes' methods too: megatron's
#: and MindSpeed's; of torch, what MindSpeed's switches patch per case (the distributed calls and the tensor
#: classes; the rest of its torch patches come with the import, which is the state to return to).
PATCHED_MODULES = ("megatron", "mindspeed", "torch.distributed")
PATCHED_CLASSES = ("megatron", "mindspeed", "torch._tensor", "torch.nn.parameter")


def callables() -> dict[tuple, tuple]:
    """Every function or class bound in a :data:`PATCHED_MODULES` module, and every method of the classes there
    (of :data:`PATCHED_CLASSES`), by (owner, name): what :func:`restore` puts back."""
    out: dict[tuple, tuple] = {}
    for name, module in list(sys.modules.items()):
        if module is None or not (name.startswith(PATCHED_MODULES) or name in ("torch", "torch.nn.parameter")):
            continue
        try:
            items = list(vars(module).items())
        except TypeError:
            continue
        for attr, value in items:
            if not callable(value) or (name == "torch" and attr != "Tensor"):
                continue
            out[(id(module), attr)] = (module, value)
            if isinstance(value, type) and getattr(value, "__module__", "").startswith(PATCHED_CLASSES):
                for method, fn in list(vars(value).items()):
                    if callable(fn) or isinstance(fn, (staticmethod, classmethod, property)):
                        out[(id(value), method)] = (value, fn)
    return out


def restore(pristine: dict[tuple, tuple]) -> int:
    """Put back each binding of :func:`callables` that a case changed; how many there were."""
    changed = 0
    for (_, attr), (owner, value) in pristine.items():
        current = (vars(owner) if isinstance(owner, type) else owner.__dict__).get(attr)
        if current is not value:
            with contextlib.suppress(AttributeError, TypeError):
                setattr(owner, attr, value)
                changed += 1
    return changed


class MindSpeedState:
    """MindSpeed imported in this process, and what each patch pass did; :meth:`reset` between cases."""

    def __init__(self, release: str, full_scan: bool):
        self.release = release
        sys.argv = [sys.argv[0]]  # MindSpeed parses the process's argv at import
        self.log = io.StringIO()
        self._install_log_capture()
        self.adaptor = self._import_adaptor()
        self.has_repatch = hasattr(self.adaptor, "repatch")
        import mindspeed.patch_utils as patch_utils
        from mindspeed.features_manager.feature import MindSpeedFeature
        from mindspeed.features_manager.features_manager import MindSpeedFeaturesManager

        self.manager = MindSpeedFeaturesManager
        self.patch_utils = patch_utils
        if not full_scan:
            patch_utils.sys = FilteredSys()
        self.namespace = self._namespace()
        self.pristine = copy.deepcopy(vars(self.namespace)) if self.namespace is not None else {}
        self.registered: dict[str, set[str]] = {}
        self.applied: dict[str, bool] = {}
        self.built: list = []
        self._track_features(MindSpeedFeature)
        # A release without repatch (2.1.0) cannot remove patches either: the patches of the import are
        # the process's for good, so they are recorded once, by a dry run from the same namespace.
        self.can_remove = hasattr(self.manager, "remove_patches")
        # MindSpeed's patch registry outlives remove_patches (it restores the originals, keeps the entries): a
        # switch of one case (dist_train, auto_settings...) would leave patches that a later case's repatch
        # applies again. One launch is one process; so is one case: entries added after the import go away.
        registry = getattr(getattr(patch_utils, "MindSpeedPatchesManager", None), "patches_info", None)
        self.patch_registry = registry if isinstance(registry, dict) else None
        self.pristine_patches = set(registry) if self.patch_registry is not None else set()
        # remove_patches restores only what the patch manager still recognises. A patch that wrapped a function
        # another wrapper had replaced in between (the oracle's own new_group shim, say) stays, and one case's
        # switch then fails every later case (disable_gloo_group's new_group asking megatron's args). So the
        # functions and classes of the upstream modules, and the methods of their classes, go back to these.
        self.pristine_callables = callables()
        if not self.can_remove:
            for feature in self.manager.FEATURES_LIST:
                self.applied[feature.feature_name] = bool(feature.is_need_apply(self.namespace))
                if self.applied[feature.feature_name]:
                    with contextlib.suppress(Exception):
                        self.registered[feature.feature_name] = dry_run(feature, self.namespace)

    # -- setup
    def _install_log_capture(self):
        handler = logging.StreamHandler(self.log)
        handler.setLevel(logging.WARNING)
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        self.handler = handler
        logging.getLogger().addHandler(handler)

    @staticmethod
    def _import_adaptor():
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import mindspeed.megatron_adaptor as adaptor
        return adaptor

    def _namespace(self):
        """MindSpeed's process-wide argument namespace (what ``repatch`` writes into)."""
        if self.has_repatch:
            from mindspeed.args_utils import get_full_args

            return get_full_args()
        return getattr(self.adaptor, "_ARGS", None)

    def _track_features(self, base):
        """Record per feature whether the last patch pass applied it and how many patches it registered."""
        manager = self.patch_utils.MindSpeedPatchesManager
        original = manager.register_patch
        current = {"name": None}
        registered = self.registered

        def register_patch(orig_func_name, new_func=None, force_patch=False, create_dummy=False):
            if current["name"] is not None:
                registered.setdefault(current["name"], set()).add(orig_func_name)
            return original(orig_func_name, new_func, force_patch, create_dummy)

        manager.register_patch = staticmethod(register_patch)
        for feature in self.manager.FEATURES_LIST:
            for method in ("pre_register_patches", "register_patches"):
                bound = getattr(feature, method)

                def tracked(pm, args, _bound=bound, _name=feature.feature_name):
                    current["name"] = _name
                    try:
                        return _bound(pm, args)
                    finally:
                        current["name"] = None

                setattr(feature, method, tracked)
        self.patching_features = {
            f.feature_name for f in self.manager.FEATURES_LIST
            if type(f).register_patches is not base.register_patches
            or type(f).pre_register_patches is not base.pre_register_patches
        }

    def describe(self, stubbed):
        import megatron.core
        import megatron.training
        import mindspeed
        import torch

        return {
            "release": self.release,
            "has_repatch": self.has_repatch,
            "mindspeed": os.path.dirname(mindspeed.__file__),
            "megatron_training": list(megatron.training.__path__)[0] if hasattr(megatron.training, "__path__")
            else os.path.dirname(megatron.training.__file__),
            "megatron_core": os.path.dirname(megatron.core.__file__),
            "megatron_core_version": getattr(megatron.core, "__version__", "?"),
            "torch": torch.__version__,
            "stubbed": stubbed,
            "features": len(self.manager.FEATURES_LIST),
        }

    # -- per case
    def reset(self, remove: bool):
        if self.can_remove and (remove or self.patch_registry is not None):
            self.manager.remove_patches()  # the originals back (repatch would do it too, but keeps the entries)
            for name in set(self.patch_registry or ()) - self.pristine_patches:
                del self.patch_registry[name]
        restore(self.pristine_callables)
        if self.namespace is not None:
            vars(self.namespace).clear()
            vars(self.namespace).update(copy.deepcopy(self.pristine))
        self._destroy_parallel()
        self.log.seek(0)
        self.log.truncate()

    def _apply_defaults(self):
        """What importing ``mindspeed.megatron_adaptor`` did: one patch pass from the argparse defaults."""
        self._patch_pass(self.namespace)

    def _patch_pass(self, ns):
        self.registered.clear()
        self.applied = {f.feature_name: bool(f.is_need_apply(ns)) for f in self.manager.FEATURES_LIST}
        self.manager.apply_features_pre_patches(ns)
        self.manager.apply_features_patches(ns)

    def _repatch(self, args):
        """MindSpeed's own ``repatch(args)``; which features it applied is read from the namespace afterwards."""
        self.registered.clear()
        self.adaptor.repatch(args)
        self.applied = {f.feature_name: bool(f.is_need_apply(self.namespace)) for f in self.manager.FEATURES_LIST}

    def unregistered(self) -> dict[str, list[str]]:
        """Patches each feature would register for a config the run built, but the last patch pass did not.

        MindSpeed decides its patches at ``repatch`` time from the dict alone; the config built afterwards
        holds what the model bridge added (dispatcher, experts, fusion flags). A feature whose switch is on
        in the built config, yet whose patches are not all registered, is silently not (fully) applied.
        Asked of each feature with a recording patch manager, so nothing is applied.
        """
        missing: dict[str, set[str]] = {}
        for config in self.built:
            for feature in self.manager.FEATURES_LIST:
                name = feature.feature_name
                if name not in self.patching_features:
                    continue
                try:
                    if not feature.is_need_apply(config):
                        continue
                    names = dry_run(feature, config)
                except Exception:  # noqa: BLE001 - a feature that cannot even say: no evidence either way
                    continue
                gap = names - self.registered.get(name, set()) if self.applied.get(name) else names
                if gap:
                    missing.setdefault(name, set()).update(gap)
        return {k: sorted(v) for k, v in sorted(missing.items())}

    @staticmethod
    def _destroy_parallel():
        import torch.distributed as dist
        from megatron.core import parallel_state

        with contextlib.suppress(Exception):
            parallel_state.destroy_model_parallel()
        if dist.is_initialized():
            dist.destroy_process_group()
