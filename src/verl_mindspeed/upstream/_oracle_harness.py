"""The oracle's harness pieces that touch no MindSpeed state: the filtered module view MindSpeed's patch scan
walks, JSON decoding of the bridge's kwargs, where an exception was raised, and a recording patch manager.

Loaded by the upstream worker (``_oracle_worker.py``) as a sibling module: it runs in the oracle's own Python,
which never imports verl_mindspeed.
"""

from __future__ import annotations

import contextlib
import io
import sys
import traceback
import types
import warnings

#: Top-level module names whose ``from x import f`` copies MindSpeed's patch scan must rebind to decide
#: anything: megatron, MindSpeed and the NPU-only names. See ``FilteredModules``.
SCAN_ROOTS = ("megatron", "mindspeed", "torch_npu", "torchair", "transformer_engine", "apex", "acl", "tbe",
              "flash_attn", "triton", "einops")



#: Features switched on by a key other than their own name (``is_need_apply`` reads both): the fused-permute
#: feature is ``moe_permute_fusion`` and MindSpeed's own switch turns it on too (fusions/fused_moe_permute.py).
FEATURE_SWITCHES = {"moe_permute_fusion": {"use_fused_moe_token_permute_and_unpermute"}}

class FilteredModules:
    """``sys.modules`` as MindSpeed's patch manager sees it, restricted to :data:`SCAN_ROOTS` for ``copy()``.

    ``Patch.apply_patch``/``remove_patch`` walk ``sys.modules.copy()`` and rebind every module attribute
    that is the patched function (``from x import f`` copies). Rebinding inside torch, numpy or the
    standard library changes which function object those modules would call at run time; it never runs an
    argument check and never registers a patch. A deliberate harness choice, proven verdict-neutral by
    ``tests/conformance/test_harness.py``.
    """

    def __getitem__(self, key):
        return sys.modules[key]

    def __setitem__(self, key, value):
        sys.modules[key] = value

    def __contains__(self, key):
        return key in sys.modules

    def get(self, key, default=None):
        return sys.modules.get(key, default)

    _cache: dict = {}
    _seen: tuple = (None, -1)

    def copy(self):
        # Recomputed whenever a module was imported or replaced since (the key set's size and the identity of
        # the newest entry change); otherwise the same selection as before.
        modules = sys.modules
        marker = (next(reversed(modules)), len(modules))
        if marker != FilteredModules._seen:
            FilteredModules._cache = {k: v for k, v in list(modules.items())
                                      if k.partition(".")[0] in SCAN_ROOTS or k == "torch.classes"}
            FilteredModules._seen = marker
        return dict(FilteredModules._cache)


class FilteredSys(types.ModuleType):
    def __init__(self):
        super().__init__("sys")
        self.modules = FilteredModules()

    def __getattr__(self, name):
        return getattr(sys, name)


# --------------------------------------------------------------------------- values over JSON

def decode(value):
    """JSON -> Python, for the few non-JSON values a bridge puts in the kwargs."""
    if isinstance(value, dict):
        if set(value) == {"__dtype__"}:
            import torch

            return getattr(torch, value["__dtype__"])
        if set(value) == {"__func__"}:
            import torch.nn.functional as F

            return getattr(F, value["__func__"])
        if set(value) == {"__enum__"}:
            from megatron.core.transformer import enums

            cls, _, member = value["__enum__"].partition(".")
            return getattr(enums, cls)[member]
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:400] if text else ""


def traceback_text(exc: BaseException, roots=("mindspeed", "megatron")) -> str:
    """The exception as Python prints it, from the first frame of upstream code (``roots``) on: what a worker's log
    shows of the raise. Bounded: the last 30 frames and 4,000 characters of the message."""
    frames = traceback.extract_tb(exc.__traceback__)
    first = next((i for i, f in enumerate(frames) if any(f"/{root}/" in f.filename for root in roots)), 0)
    kept = traceback.StackSummary.from_list(frames[first:][-30:])
    text = str(exc)
    message = f"{type(exc).__name__}: {text[:4000]}" if text else type(exc).__name__
    return "Traceback (most recent call last):\n" + "".join(kept.format()) + message


def where_raised(exc: BaseException) -> str:
    """The innermost frame of the traceback that is upstream code (not this worker), as ``file:line``."""
    frames = traceback.extract_tb(exc.__traceback__)
    for frame in reversed(frames):
        if "/mindspeed/" in frame.filename or "/megatron/" in frame.filename:
            parts = frame.filename.split("/")
            for root in ("mindspeed", "megatron"):
                if root in parts:
                    idx = len(parts) - 1 - parts[::-1].index(root)
                    return f"{'/'.join(parts[idx:])}:{frame.lineno}"
    return f"{frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" if frames else ""


def drop_stub_group_options():
    """MindSpeed hands HCCL options (from the torch_npu stand-in, so a mock) to ``new_group``; the fake
    process group cannot take a mock. Group options tune communication and check nothing: drop them."""
    from unittest import mock

    import torch.distributed as dist

    if getattr(dist.new_group, "_oracle", False):
        return
    original = dist.new_group

    def new_group(*args, **kwargs):
        if isinstance(kwargs.get("pg_options"), mock.Base):
            kwargs["pg_options"] = None
        return original(*args, **kwargs)

    new_group._oracle = True
    dist.new_group = new_group


def upstream_warnings(caught) -> set[str]:
    """Warnings issued by megatron's or MindSpeed's own code, as ``path-from-the-package-root:line: first line``."""
    out = set()
    for w in caught:
        parts = str(w.filename).split("/")
        for root in ("megatron", "mindspeed"):
            if root in parts:
                idx = len(parts) - 1 - parts[::-1].index(root)
                out.add(f"{'/'.join(parts[idx:])}:{w.lineno}: {str(w.message).strip().splitlines()[0][:200]}")
                break
    return out


def plain(value):
    """A config value as JSON: containers and scalars as they are, anything else as its repr."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple, set)):
        return [plain(v) for v in (sorted(value) if isinstance(value, set) else value)]
    return repr(value)


class _Recorder:
    """A patch manager that only records the names a feature registers."""

    def __init__(self):
        self.names: set[str] = set()

    def register_patch(self, orig_func_name, new_func=None, force_patch=False, create_dummy=False):
        self.names.add(orig_func_name)

    def remove_wrappers(self, *args, **kwargs):
        pass


def dry_run(feature, args) -> set[str]:
    recorder = _Recorder()
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        feature.pre_register_patches(recorder, args)
        feature.register_patches(recorder, args)
    return recorder.names


class StageError(Exception):
    def __init__(self, stage: str, exc: BaseException, role: str | None):
        super().__init__(stage)
        self.stage, self.exc, self.role = stage, exc, role


def _mask_wrapper(forward):
    """MindSpeed's generate-mask wrapper of ``DotProductAttention.forward``
    (``core/transformer/flash_attention/generate_mask/adaptor.py`` ``dot_product_attention_forward_wrapper``) in the
    chain of wrappers the patches applied, or None where no repatch registered it."""
    seen = 0
    while forward is not None and seen < 20:
        code = getattr(forward, "__code__", None)
        if code is not None and code.co_qualname.startswith("dot_product_attention_forward_wrapper."):
            return forward
        forward, seen = getattr(forward, "__wrapped__", None), seen + 1
    return None


def first_forward(config) -> bool:
    """What a role's first forward does to its attention mask: verl passes no mask (packed sequences), so the
    generate-mask wrapper calls MindSpeed's ``get_attention_mask(self.config)`` on the config the role built; its
    exception is the verdict. The attention itself does not run (the wrapped ``fn`` is set aside for the call), and
    the mask tensor is a 1 x 1 stand-in (``torch.ones`` asked on ``npu``): both only after MindSpeed's own checks.
    False where no patch wraps the forward (nothing of MindSpeed's runs there)."""
    import torch
    from megatron.core.transformer.dot_product_attention import DotProductAttention
    from megatron.core.transformer.enums import AttnMaskType

    wrapper = _mask_wrapper(DotProductAttention.forward)
    if wrapper is None:
        return False
    mask = sys.modules[wrapper.__globals__["get_attention_mask"].__module__]  # wraps() copied megatron's __module__
    cells = dict(zip(wrapper.__code__.co_freevars, wrapper.__closure__ or ()))
    saved, cells["fn"].cell_contents = cells["fn"].cell_contents, lambda *args, **kwargs: None
    ones, torch.ones = torch.ones, lambda *args, **kwargs: torch.zeros((1, 1), dtype=torch.bool)
    mask._GLOBAL_ATTN_MASK = None
    try:
        wrapper(types.SimpleNamespace(config=config, attn_mask_type=AttnMaskType.causal), None, None, None, None)
    finally:
        cells["fn"].cell_contents, torch.ones, mask._GLOBAL_ATTN_MASK = saved, ones, None
    return True
