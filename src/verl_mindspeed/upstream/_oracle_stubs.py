"""Stand-ins for the modules that exist only on an Ascend machine (or a CUDA one), so MindSpeed imports on CPU.

A meta-path finder answers for the top-level names in :data:`NPU_ONLY` that are NOT installed with an
empty package whose every attribute is a ``MagicMock``. ``torch.npu`` gets the same stand-in. Nothing
else is replaced: an installed module (einops comes with megatron-core) is always the real one.

What a stub returns is never evidence. The oracle judges only what does not go through a stub:
MindSpeed's argument checks, its patch registration, and megatron-core's own Python logic.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from unittest import mock

#: Top-level modules MindSpeed may import that need an NPU, CANN or a CUDA build.
NPU_ONLY = ("torch_npu", "torchair", "transformer_engine", "apex", "acl", "tbe", "flash_attn", "triton", "einops")
#: Megatron-LM packages outside the source archives (which hold ``megatron/training`` and ``megatron/legacy``)
#: that ``megatron.training`` imports unconditionally: 0.16.1's ``training.py`` imports ``megatron.rl``
#: (reinforcement-learning loops, never reached while building a config).
MISSING_SOURCES = ("megatron.rl",)




class StubModule(types.ModuleType):
    """A package whose unknown attributes are mocks, or mock classes for capitalised names (created once)."""

    def __init__(self, name: str):
        super().__init__(name)
        self.__path__ = []
        self.__file__ = f"<oracle stub {name}>"
        # Version-gated imports (megatron's triton check) then take their "not available" branch.
        self.__version__ = "0.0.0"

    def __getattr__(self, item: str):
        if item.startswith("__") and item.endswith("__"):
            raise AttributeError(item)
        if item[:1].isupper():  # a class name: a class (a MagicMock subclass), so isinstance/issubclass work
            value = type(item, (mock.MagicMock,), {"__module__": self.__name__})
        else:
            value = mock.MagicMock(name=f"{self.__name__}.{item}")
        setattr(self, item, value)
        return value


class NoDriverModule(StubModule):
    """``triton.runtime.driver``: no active device, as on a CPU machine (MindSpeed then picks ``cpu``)."""

    @property
    def active(self):
        raise RuntimeError("no triton driver on this machine")


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, roots: frozenset[str]):
        self.roots = roots

    def find_spec(self, fullname, path, target=None):
        if fullname.split(".")[0] in self.roots or any(
                fullname == m or fullname.startswith(m + ".") for m in self.roots if "." in m):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = StubModule(spec.name)
        if spec.name == "triton":
            runtime = sys.modules["triton.runtime"] = StubModule("triton.runtime")
            runtime.driver = sys.modules["triton.runtime.driver"] = NoDriverModule("triton.runtime.driver")
            module.runtime = runtime
        return module

    def exec_module(self, module):
        pass


def _absent(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return True


def install() -> list[str]:
    """Install the finder for the absent names; call once the sources are on ``sys.path``. Returns them."""
    absent = sorted(name for name in (*NPU_ONLY, *MISSING_SOURCES) if _absent(name))
    sys.meta_path.insert(0, _Finder(frozenset(absent)))
    import torch

    if not hasattr(torch, "npu"):
        torch.npu = StubModule("torch.npu")
        sys.modules["torch.npu"] = torch.npu
        absent.append("torch.npu")
    return absent
