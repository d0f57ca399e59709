"""The value a fix line takes, where the message prints no value that would pass but a fact gives one.

- A tensor printed with its shape and dtype (``torch.Size([151936, 4096]), torch.float32``) has a size in bytes: a
  bucket measured in megabytes holds it from the next power of two at least that size.
- A limit verl's own config documents as "non-positive values mean no upper limit" is lifted by that value.
- A share of the device lowered by a tenth, from the launch's value, else from verl's default.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from pathlib import Path
from typing import Optional

#: Bytes per element of the dtypes torch prints.
_BYTES = {"float64": 8, "double": 8, "int64": 8, "long": 8, "complex64": 8, "float32": 4, "float": 4, "int32": 4,
          "int": 4, "float16": 2, "half": 2, "bfloat16": 2, "int16": 2, "short": 2, "int8": 1, "uint8": 1,
          "bool": 1, "float8_e4m3fn": 1, "float8_e5m2": 1}
_TENSOR = re.compile(r"torch\.Size\(\[(?P<dims>\d+(?:,\s*\d+)*)\]\),?\s*torch\.(?P<dtype>\w+)")


def tensor_megabytes(message: str) -> Optional[float]:
    """The size, in MiB, of the tensor a message prints with its shape and dtype; None when it prints none, or
    several of different sizes."""
    sizes = {math.prod(int(d) for d in hit.group("dims").split(",")) * _BYTES[hit.group("dtype")] / (1 << 20)
             for hit in _TENSOR.finditer(message[:20000]) if hit.group("dtype") in _BYTES}
    return sizes.pop() if len(sizes) == 1 else None


def bucket_fix(key: str, message: str) -> Optional[str]:
    """``key=N`` for a setting in megabytes (``..._megabytes``, ``..._mb``) that must hold the tensor the message
    prints: the next power of two at least its size (2374 MiB: 4096)."""
    size = tensor_megabytes(message)
    if size is None or not re.search(r"_(?:megabytes|mb)$", key, re.I) or not 0 < size < 1 << 30:
        return None
    return f"{key}={1 << max(0, math.ceil(math.log2(size)))}"


#: "non-positive values mean no upper limit", "-1 means unlimited", "0 for no limit", "null = no limit".
_NO_LIMIT = re.compile(r"(?<![\w.-])(?P<what>non-positive|zero|0|-1|negative|null|none)\b(?: values?)?[^.;\n]{0,30}?"
                       r"(?:\b(?:means?|for|disables?)\b|=)[^.;\n]{0,20}?\b(?:no (?:upper )?limit|unlimited|no cap|"
                       r"infinite)", re.I)
_WRITTEN = {"non-positive": "0", "zero": "0", "0": "0", "-1": "-1", "negative": "-1", "null": "null", "none": "null"}
_LINE = re.compile(r"^(?P<indent>\s*)(?P<name>[A-Za-z_]\w*):(?:\s|$)")


def _comments(root: Path) -> dict[str, set[str]]:
    """Each key path of verl's hand-written config files (``trainer/config``, no ``_generated_``), as written in
    its file (a group's file starts at its section), -> the comment lines right above it, joined."""
    out: dict[str, set[str]] = {}
    for path in sorted((root / "verl" / "trainer" / "config").rglob("*.yaml")):
        if path.name.startswith("_generated"):
            continue
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        stack: list[tuple[int, str]] = []
        above: list[str] = []
        for line in lines:
            if line.strip().startswith("#"):
                above.append(line.strip().lstrip("#").strip())
                continue
            hit = _LINE.match(line)
            if hit is None:  # a blank line or a list item: a comment above it is not the next key's
                above = []
                continue
            depth = len(hit.group("indent"))
            stack = [(d, n) for d, n in stack if d < depth] + [(depth, hit.group("name"))]
            if above:
                out.setdefault(".".join(n for _d, n in stack), set()).add(" ".join(above))
            above = []
    return out


@lru_cache(maxsize=8)
def _documented(verl_version: Optional[str]) -> dict[str, set[str]]:
    from ._verl import source_root

    root = source_root(verl_version)
    return _comments(root) if root is not None else {}


def unlimited(key: str, verl_version: Optional[str] = None) -> Optional[str]:
    """The value verl's config documents as lifting the limit ``key`` sets (``max_num_gen_batches``: "non-positive
    values mean no upper limit" gives ``0``); None when no comment right above it in verl's config files says
    one, or they say different ones."""
    said = {_WRITTEN[hit.group("what").lower()] for path, comments in _documented(verl_version).items()
            if key == path or key.endswith("." + path) for text in comments for hit in [_NO_LIMIT.search(text)] if hit}
    return said.pop() if len(said) == 1 else None


def lowered(value: object) -> Optional[str]:
    """A share of the device (``0.6``) lowered by a tenth, never under 0.1; None when it is no fraction above 0.1."""
    try:
        share = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    lower = max(0.1, round(share - 0.1, 2))
    return str(lower) if 0 < lower < share <= 1 else None


__all__ = ["bucket_fix", "lowered", "tensor_megabytes", "unlimited"]
