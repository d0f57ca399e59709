"""Regenerate ``src/verl_mindspeed/catalog/data/stacks.json``: the facts of each stack layer, read from the packages.

A stack is verl x the bridge that builds megatron's config (Megatron-Bridge, mbridge or verl's converter) x the
megatron-core line x the MindSpeed release. This reads, without importing anything:

- megatron-core 0.12.1, 0.16.1, 0.17.1, 0.18.2 (the wheels, ``pip download --no-deps``): every field of
  ``ModelParallelConfig``, ``TransformerConfig`` and ``MLATransformerConfig`` with its default as written;
- Megatron-Bridge 0.3.1 and 0.5.1, mbridge 0.15.1 (the wheels): the Python and megatron-core they require, the
  provider's own fields and defaults (``GPTModelProvider``), the line that refuses an override the provider lacks,
  and, per HF architecture its model bridges register, the fusion flags its ``provider_bridge`` sets (what it
  leaves unset keeps ``GPTModelProvider``'s default, else ``TransformerConfig``'s);
- mbridge 0.15.1 (the wheel): per HF model_type it registers, the fusion flags its config build passes;
- MindSpeed core_r0.17.0 and core_r0.18.0 (``--upstream``, the archives): the line that imports ``megatron_adaptor``.

    python tools/refresh_stack_facts.py --upstream ../shared/upstream [--wheels DIR]

The wheels for Python 3.12 (megatron-core 0.17+, Megatron-Bridge 0.5+) are asked for with ``--python-version 3.12
--only-binary=:all:``, so this runs from Python 3.11.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from email.parser import Parser
from pathlib import Path
from typing import Any, Optional

OUT = Path(__file__).resolve().parents[1] / "src/verl_mindspeed/catalog/data/stacks.json"
CORES = ("0.12.1", "0.16.1", "0.17.1", "0.18.2")
BRIDGES = ("0.3.1", "0.5.1")
MBRIDGES = ("0.15.1",)
ADAPTOR_RELEASES = ("core_r0.17.0", "core_r0.18.0")
#: The provider values a rule reads: the fusions MindSpeed's fused kernels hang on, and the softmax precision.
PROVIDER_KEYS = ("bias_activation_fusion", "bias_dropout_fusion", "persist_layer_norm", "masked_softmax_fusion",
                 "apply_rope_fusion", "attention_softmax_in_fp32", "gradient_accumulation_fusion")
_CONFIG_CLASSES = {"model_parallel_config.py": ("ModelParallelConfig",),
                   "transformer/transformer_config.py": ("TransformerConfig", "MLATransformerConfig")}


def _download(name: str, version: str, into: Path) -> Path:
    found = sorted(into.glob(f"{name.replace('-', '_')}-{version}-*.whl"))
    if found:
        return found[0]
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(into), f"{name}=={version}"]
    if not _py311(name, version):
        cmd += ["--python-version", "3.12", "--only-binary=:all:"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return sorted(into.glob(f"{name.replace('-', '_')}-{version}-*.whl"))[0]


def _py311(name: str, version: str) -> bool:
    major_minor = tuple(int(p) for p in version.split(".")[:2])
    return not ((name == "megatron-core" and major_minor >= (0, 17)) or
                (name == "megatron-bridge" and major_minor >= (0, 5)))


def _metadata(wheel: zipfile.ZipFile) -> dict[str, Any]:
    name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    msg = Parser().parsestr(wheel.read(name).decode())
    requires = msg.get_all("Requires-Dist") or []
    core = sorted((r for r in requires if r.startswith("megatron-core")), key=lambda r: "extra ==" in r)
    spec = core[0].split(";", 1)[0].split("megatron-core", 1)[1] if core else None
    return {"requires_python": msg.get("Requires-Python"),
            "megatron_core": (spec.split("]", 1)[-1].strip() or "any") if spec is not None else None}


def _default(node: Optional[ast.AST]) -> Any:
    if node is None:
        return "<required>"
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return "<" + ast.unparse(node) + ">"


def _class_fields(tree: ast.Module, name: str) -> dict[str, Any]:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return {st.target.id: _default(st.value) for st in node.body
                    if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)}
    return {}


def core_facts(wheel_path: Path) -> dict[str, Any]:
    with zipfile.ZipFile(wheel_path) as wheel:
        fields: dict[str, dict[str, Any]] = {}
        for rel, classes in _CONFIG_CLASSES.items():
            tree = ast.parse(wheel.read(f"megatron/core/{rel}").decode())
            for cls in classes:
                fields[cls] = _class_fields(tree, cls)
        meta = _metadata(wheel)
    base = {**fields["ModelParallelConfig"], **fields["TransformerConfig"]}
    mla = {k: v for k, v in fields["MLATransformerConfig"].items() if k not in base}
    return {"requires_python": meta["requires_python"], "fields": dict(sorted(base.items())),
            "mla_fields": dict(sorted(mla.items())),
            "cites": "megatron/core/model_parallel_config.py, megatron/core/transformer/transformer_config.py"}


def _sources(wheel: zipfile.ZipFile, prefix: str) -> dict[str, ast.Module]:
    out = {}
    for name in wheel.namelist():
        if name.startswith(prefix) and name.endswith(".py"):
            try:
                out[name] = ast.parse(wheel.read(name).decode())
            except SyntaxError:
                continue
    return out


def _classes(trees: dict[str, ast.Module]) -> dict[str, ast.ClassDef]:
    return {n.name: n for t in trees.values() for n in t.body if isinstance(n, ast.ClassDef)}


def _class_values(cls_name: str, classes: dict[str, ast.ClassDef], keys: tuple[str, ...]) -> dict[str, Any]:
    """Class-level defaults of ``keys`` along a provider's bases (nearest class wins)."""
    out: dict[str, Any] = {}
    cls = classes.get(cls_name)
    if cls is None:
        return out
    for base in reversed(cls.bases):
        out.update(_class_values(ast.unparse(base).rsplit(".", 1)[-1], classes, keys))
    for st in cls.body:
        if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.target.id in keys:
            out[st.target.id] = _default(st.value)
        elif isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) \
                and st.targets[0].id in keys:
            out[st.targets[0].id] = _default(st.value)
    return out


def _architecture_values(trees: dict[str, ast.Module], keys: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """HF architecture -> the values of ``keys`` its model bridge's ``provider_bridge`` leaves on the provider
    (the provider class it builds, then keyword arguments, then ``provider.<key> = ...`` assignments)."""
    classes = _classes(trees)
    out: dict[str, dict[str, Any]] = {}
    for tree in trees.values():
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            sources = [kw.value for dec in cls.decorator_list if isinstance(dec, ast.Call)
                       and ast.unparse(dec.func).endswith("register_bridge") for kw in dec.keywords
                       if kw.arg == "source"]
            bridge = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "provider_bridge"),
                          None)
            if not sources or bridge is None:
                continue
            values: dict[str, Any] = {}
            for node in ast.walk(bridge):
                if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("Provider"):
                    values.update(_class_values(ast.unparse(node.func).rsplit(".", 1)[-1], classes, keys))
                    values.update({kw.arg: _default(kw.value) for kw in node.keywords if kw.arg in keys})
            for node in ast.walk(bridge):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                        and isinstance(node.targets[0], ast.Attribute) and node.targets[0].attr in keys:
                    values[node.targets[0].attr] = _default(node.value)
            for src in sources:
                name = src.value if isinstance(src, ast.Constant) else ast.unparse(src).rsplit(".", 1)[-1]
                out[str(name)] = dict(sorted(values.items()))
    return dict(sorted(out.items()))


def _refusal_site(trees: dict[str, ast.Module]) -> Optional[dict[str, Any]]:
    """Where the provider refuses an override it has no attribute for (``apply_overrides_and_finalize``)."""
    for path, tree in trees.items():
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef) and fn.name == "apply_overrides_and_finalize":
                for node in ast.walk(fn):
                    if isinstance(node, ast.Raise) and node.exc is not None and "AttributeError" in ast.unparse(
                            node.exc):
                        return {"file": path.split("megatron/bridge/", 1)[-1], "line": node.lineno}
    return None


def bridge_facts(wheel_path: Path) -> dict[str, Any]:
    with zipfile.ZipFile(wheel_path) as wheel:
        meta = _metadata(wheel)
        trees = _sources(wheel, "megatron/bridge/models/")
    gpt = next((t for p, t in trees.items() if p.endswith("models/gpt_provider.py")), None)
    provider_fields = sorted(_class_fields(gpt, "GPTModelProvider")) if gpt else []
    return {**meta, "provider_fields": provider_fields, "refuses_unknown": _refusal_site(trees),
            "provider_defaults": _class_values("GPTModelProvider", _classes(trees), PROVIDER_KEYS),
            "architectures": _architecture_values(trees, PROVIDER_KEYS)}


def _model_type_values(trees: dict[str, ast.Module], keys: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """HF model_type -> the values of ``keys`` the mbridge model registered for it passes when it builds its config
    (keyword arguments, ``kwargs[...] =`` and ``config.<key> =`` in the class); what it leaves out keeps
    ``TransformerConfig``'s default."""
    out: dict[str, dict[str, Any]] = {}
    for tree in trees.values():
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            types = [d.args[0].value for d in cls.decorator_list if isinstance(d, ast.Call)
                     and ast.unparse(d.func).endswith("register_model") and d.args
                     and isinstance(d.args[0], ast.Constant)]
            if not types:
                continue
            values: dict[str, Any] = {}
            for node in ast.walk(cls):
                if isinstance(node, ast.Call):
                    values.update({kw.arg: _default(kw.value) for kw in node.keywords if kw.arg in keys})
                elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target = node.targets[0]
                    if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant) \
                            and target.slice.value in keys:
                        values[target.slice.value] = _default(node.value)
            for name in types:
                out[str(name)] = dict(sorted(values.items()))
    return dict(sorted(out.items()))


def mbridge_facts(wheel_path: Path) -> dict[str, Any]:
    with zipfile.ZipFile(wheel_path) as wheel:
        return {**_metadata(wheel), "model_types": _model_type_values(_sources(wheel, "mbridge/models/"),
                                                                      PROVIDER_KEYS)}


def adaptor_site(archive: Path) -> Optional[dict[str, Any]]:
    """The line of ``mindspeed/__init__.py`` that imports ``megatron_adaptor``, if any."""
    with tarfile.open(archive) as tar:
        member = next((m for m in tar.getmembers() if m.name.endswith("mindspeed/__init__.py")
                       and m.name.count("/") <= 2), None)
        if member is None:
            return None
        text = tar.extractfile(member).read().decode()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "megatron_adaptor" for a in node.names):
            return {"file": "mindspeed/__init__.py", "line": node.lineno}
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "megatron_adaptor":
            return {"file": "mindspeed/__init__.py", "line": node.lineno}
    return None


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", type=Path, required=True, help="folder with the MindSpeed archives")
    parser.add_argument("--wheels", type=Path, default=None, help="where the wheels are downloaded (kept)")
    ns = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        wheels = ns.wheels or Path(tmp)
        wheels.mkdir(parents=True, exist_ok=True)
        data = {
            "megatron_core": {v: core_facts(_download("megatron-core", v, wheels)) for v in CORES},
            "megatron_bridge": {v: bridge_facts(_download("megatron-bridge", v, wheels)) for v in BRIDGES},
            "mbridge": {v: mbridge_facts(_download("mbridge", v, wheels)) for v in MBRIDGES},
            "mindspeed_adaptor": {r: adaptor_site(ns.upstream / f"mindspeed-{r}.tar.gz") for r in ADAPTOR_RELEASES},
        }
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
