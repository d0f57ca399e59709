#!/usr/bin/env python3
"""Build the index of raise sites ``verl-mindspeed doctor`` matches a failed run's exception against.

    python tools/build_raise_index.py [--upstream ../shared/upstream] [--check]

Every ``raise X(message)`` and ``assert cond, message`` in the sources of each release here is read with ``ast``
(never imported) and kept with:

- the package, release(s) and the line in each, the file (relative to the import root), the function;
- the exception class; the message as a template: its literal parts and, between them, the expression each
  placeholder formats (f-strings, ``str.format``, ``%``, ``+``, and a message assigned to a local name first);
- the fields its condition reads (``if``/``assert`` tests: ``x.attr`` -> ``attr``, ``getattr(x, "attr")`` ->
  ``attr``), the locals it reads and what they were computed from in the same function, and the fields the message
  formats;
- the locals the condition reads that are one setting under another name (``l``: ``infer_tp`` for
  ``self.config.rollout.tensor_model_parallel_size``, ``vp_size`` for
  ``get_virtual_pipeline_model_parallel_world_size()``, ``reset_bucket_group_order`` for ``getattr(args,
  "reset_bucket_group_order", False)``), so a value printed for the local binds the setting, and a value tried for
  the setting is the local's in the condition;
- for the checks that read Megatron-LM's parsed arguments (its own and MindSpeed's), an argument ``validate_args``
  copies from another as it stands (``transformer_pipeline_model_parallel_size``) is that other setting, an alias;
- the tests of the ``if``s around it in its function (``e``, with the chains they read and the function does not
  assign itself before it, ``ea``): the feature's switch a check sits under (``if args.use_fused_rmsnorm: if
  args.normalization != "RMSNorm": raise ...``), where every release has the same;
- the condition itself (``k``) and whether it raises when the condition is false (``w``: an ``assert``, or an
  ``else`` branch) or true (an ``if``), so that values read off a message can be put back into it.

Beside the sites (``features``): MindSpeed's features, the switch each turns on, by the file its class is in and the
modules its methods import (``tools/_features.py``).

Beside the sites (``caught``): each call a function makes inside a ``try`` whose handlers keep a named exception type,
with those handlers in order (``h``: types, and what each keeps), the releases that do so (``r``) and the releases
that make the call with other handlers or none (``n``; ``tools/_caught.py``), so that a failure a newer release stops
there is told apart.

Sources: MindSpeed's release archives and Megatron-LM's ``megatron/training`` (``--upstream``), Megatron-Bridge's
archives there; megatron-core 0.12.1, 0.15.3, 0.16.1 and 0.18.2, Megatron-Bridge 0.4.1, mbridge 0.15.1, verl 0.5.0,
0.6.1, 0.7.1, 0.8.0, 0.9.0 and 0.9.1, Hydra and OmegaConf as PyPI wheels (``pip download``, once, cached under
``~/.cache/verl-mindspeed``).
``--check`` rebuilds in memory and exits 1 when the shipped index differs; ``tests/conformance/test_raise_index.py``
rebuilds the archives' part, which needs no download, and compares it with the shipped index.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import io
import json
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Iterable, Iterator, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
from verl_mindspeed.doctor._sites import keywords  # noqa: E402 - the doctor's lookup word, written once here

sys.path.insert(0, str(ROOT / "tools"))
import _features  # noqa: E402
from _caught import caught_in, caught_of  # noqa: E402

OUT = ROOT / "src" / "verl_mindspeed" / "catalog" / "data" / "raise_sites.json.gz"
CACHE = Path.home() / ".cache" / "verl-mindspeed" / "wheels"

#: (package, version, the import roots kept from its wheel)
WHEELS = [
    ("megatron-core", "0.12.1", ("megatron/core/",)),
    ("megatron-core", "0.16.1", ("megatron/core/",)),
    ("megatron-core", "0.15.3", ("megatron/core/",)),
    ("megatron-core", "0.18.2", ("megatron/core/",)),
    ("megatron-bridge", "0.4.1", ("megatron/bridge/",)),
    ("mbridge", "0.15.1", ("mbridge/",)),
    *[("verl", v, ("verl/",)) for v in ("0.5.0", "0.6.1", "0.7.1", "0.8.0", "0.9.0", "0.9.1")],
    ("hydra-core", "1.3.2", ("hydra/",)),
    ("omegaconf", "2.3.0", ("omegaconf/",)),
]
#: Releases published for Python 3.12 and later only.
NEEDS_312 = {("megatron-core", "0.18.2"), ("megatron-bridge", "0.4.1")}
SKIP = re.compile(r"(^|/)(tests?|test_[^/]*|examples?|docs?)(/|$)")


def wheel(package: str, version: str) -> Path:
    """The wheel of ``package==version``, downloaded once into the cache."""
    CACHE.mkdir(parents=True, exist_ok=True)
    norm = package.replace("-", "_")
    found = sorted(CACHE.glob(f"{norm}-{version}-*.whl"))
    if not found:
        python = ["--python-version", "3.12"] if (package, version) in NEEDS_312 else []
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", *python,
                        "-d", str(CACHE), f"{package}=={version}"], check=True, stderr=subprocess.DEVNULL)
        found = sorted(CACHE.glob(f"{norm}-{version}-*.whl"))
    if not found:
        raise SystemExit(f"no wheel for {package}=={version}")
    return found[0]


def wheel_files(path: Path, roots: tuple[str, ...]) -> Iterator[tuple[str, str]]:
    with zipfile.ZipFile(path) as zf:
        for name in sorted(zf.namelist()):
            if name.endswith(".py") and name.startswith(roots) and not SKIP.search(name):
                yield name, zf.read(name).decode("utf-8", errors="replace")


def archive_files(path: Path, marker: str) -> Iterator[tuple[str, str]]:
    """Python files of a source archive, relative to the folder that holds ``marker`` (``mindspeed/``...)."""
    with tarfile.open(path) as tf:
        for member in tf.getmembers():
            name = member.name
            at = name.find(marker)
            if at < 0 or not name.endswith(".py") or not member.isfile():
                continue
            rel = name[at:]
            if SKIP.search(rel):
                continue
            handle = tf.extractfile(member)
            if handle is not None:
                yield rel, handle.read().decode("utf-8", errors="replace")


def release_of_archive(path: Path) -> str:
    name = path.name.removesuffix(".tar.gz")
    for prefix in ("mindspeed-", "megatron-lm-training-", "megatron-bridge-v"):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def sources(upstream: Path, wheels: bool = True) -> Iterator[tuple[str, str, Iterable[tuple[str, str]]]]:
    for path in sorted(upstream.glob("mindspeed-*.tar.gz")):
        yield "mindspeed", release_of_archive(path), archive_files(path, "mindspeed/")
    for path in sorted(upstream.glob("megatron-lm-training-*.tar.gz")):
        yield "megatron-training", release_of_archive(path), archive_files(path, "megatron/training/")
    for path in sorted(upstream.glob("megatron-bridge-v*.tar.gz")):
        yield "megatron-bridge", release_of_archive(path), archive_files(path, "megatron/bridge/")
    for package, version, roots in WHEELS if wheels else ():
        yield package, version, wheel_files(wheel(package, version), roots)


# --- reading one file -----------------------------------------------------------------------------------------
class _Sites(ast.NodeVisitor):
    def __init__(self, text: str):
        self.text = text
        self.found: list[dict] = []
        self.stack: list[str] = []
        self.tests: list[ast.expr] = []
        self.assigned: list[dict[str, ast.expr]] = [{}]
        self.flows: list[dict[str, ast.expr]] = [{}]
        """Per function, what each local name was last assigned (one level of dataflow for the fields)."""
        self.changed: list[set[str]] = [set()]
        """Per function, the locals assigned more than once or changed in place (``x -= 1``): no alias."""
        self.starts: list[int] = [0]
        """Per function, how many of ``tests`` enclose the function itself (not its own)."""
        self.set_attrs: list[set[str]] = [set()]
        """Per function, the attributes it has assigned so far (``self.moe_router_padding_for_quantization = True``):
        a switch the code sets itself is no setting a line can turn off."""

    def visit_FunctionDef(self, node: ast.AST) -> None:  # noqa: N802 - ast's names
        self.stack.append(node.name)
        self.assigned.append({})
        self.flows.append({})
        self.changed.append(set())
        self.starts.append(len(self.tests))
        self.set_attrs.append(set())
        self.generic_visit(node)
        self.set_attrs.pop()
        self.starts.pop()
        self.changed.pop()
        self.flows.pop()
        self.assigned.pop()
        self.stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815

    def visit_ClassDef(self, node: ast.ClassDef) -> None:  # noqa: N802
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    def visit_If(self, node: ast.If) -> None:  # noqa: N802
        self.visit(node.test)
        self.tests.append(node.test)
        for child in node.body:
            self.visit(child)
        self.tests.pop()
        negated = ast.UnaryOp(op=ast.Not(), operand=node.test)
        self.tests.append(negated)
        for child in node.orelse:
            self.visit(child)
        self.tests.pop()

    def visit_Assign(self, node: ast.Assign) -> None:  # noqa: N802
        self.set_attrs[-1].update(ast.unparse(t) for t in _targets(node) if isinstance(t, ast.Attribute))
        for target in node.targets:
            if isinstance(target, ast.Name):
                if _stringish(node.value):
                    self.assigned[-1][target.id] = node.value
                if target.id in self.flows[-1]:
                    self.changed[-1].add(target.id)
                self.flows[-1][target.id] = node.value
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:  # noqa: N802
        if isinstance(node.target, ast.Name):
            self.changed[-1].add(node.target.id)
        elif isinstance(node.target, ast.Attribute):
            self.set_attrs[-1].add(ast.unparse(node.target))
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:  # noqa: N802
        if isinstance(node.target, ast.Attribute) and node.value is not None:
            self.set_attrs[-1].add(ast.unparse(node.target))
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:  # noqa: N802
        exc = node.exc
        if isinstance(exc, ast.Call):
            name = _name(exc.func)
            message = exc.args[0] if exc.args else next((k.value for k in exc.keywords if k.arg in ("msg", "message")),
                                                        None)
            self._add(node, name, message, self._own(), self._outer(1))
        elif exc is not None:
            self._add(node, _name(exc), None, self._own(), self._outer(1))

    def visit_Assert(self, node: ast.Assert) -> None:  # noqa: N802
        self._add(node, "AssertionError", node.msg, node.test, self._outer(0))

    def _own(self) -> Optional[ast.expr]:
        return self.tests[-1] if len(self.tests) > self.starts[-1] else None

    def _outer(self, own: int) -> list[ast.expr]:
        """The tests of the function's ``if``s around a raise, outermost first, without the raise's own."""
        return self.tests[self.starts[-1]:len(self.tests) - own]

    def _add(self, node: ast.stmt, exc: Optional[str], message: Optional[ast.expr], test: Optional[ast.expr],
             outer: Optional[list[ast.expr]] = None) -> None:
        if not exc:
            return
        if isinstance(message, ast.Name) and message.id in self.assigned[-1]:
            message = self.assigned[-1][message.id]
        parts, exprs = template(message) if message is not None else ([], [])
        read = set(_fields(test)) | {f for e in exprs for f in _fields_of_text(e)}
        todo, seen = list(_names(test)), set()
        while todo and len(seen) < 24:  # a local the condition reads: what it was computed from, two levels back
            name = todo.pop(0)
            if name in seen:
                continue
            seen.add(name)
            read.add(name)
            if name in self.flows[-1] and len(seen) < 12:
                read |= set(_fields(self.flows[-1][name]))
                todo += list(_names(self.flows[-1][name]))
        fields = sorted(read)
        chains = {c for c in _chains(test)} | {c for name in seen if name in self.flows[-1]
                                               for c in _chains(self.flows[-1][name])}
        entry = {"fn": ".".join(self.stack), "x": exc, "t": parts, "v": exprs, "c": fields, "line": node.lineno}
        aliases = {name: field for name in sorted(seen) if name in self.flows[-1] and name not in self.changed[-1]
                   for field in [_alias(self.flows[-1][name])] if field}
        if aliases:  # a local that is one setting under another name (infer_tp = config.tensor_model_parallel_size)
            entry["l"] = aliases
        if chains:  # which object a field is read from (rollout_config.tensor_model_parallel_size): its section
            entry["a"] = sorted(chains)[:12]
        if test is not None:  # what raises: an if's test when true (negated for its else), an assert's when false
            negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and not hasattr(test, "lineno")
            condition = test.operand if negated else test
            entry["k"] = ast.unparse(condition)[:400]
            entry["w"] = isinstance(node, ast.Assert) or negated
        enclosing = ast.unparse(ast.BoolOp(op=ast.And(), values=outer) if len(outer or ()) > 1 else outer[0]) \
            if outer else None
        if enclosing and len(enclosing) <= 400:  # the switch a check sits under: ``if args.use_fused_rmsnorm:``
            entry["e"] = enclosing
            entry["ea"] = sorted(set(_chains(ast.parse(enclosing, mode="eval").body)) - self.set_attrs[-1])[:12]
        self.found.append(entry)


#: Objects a setting is read from: a config, its sections, the parsed arguments (not a value such as a layout
#: object, whose ``layout.virtual_pipeline_model_parallel_size`` is derived, not the setting).
_HOLDERS = re.compile(r"(?:self|cls|args|cfg|config|\w+_config|\w+_cfg|\w+_args|rollout|actor|ref|critic|model|"
                      r"megatron|engine|trainer|data|algorithm)$")


def _alias(node: ast.expr) -> Optional[str]:
    """The setting an expression is, as it stands: ``self.config.rollout.tensor_model_parallel_size`` or
    ``parallel_state.get_virtual_pipeline_model_parallel_world_size()``; ``@arg_name`` for ``getattr(args,
    arg_name)``, the setting the variable names (the message prints its name); None for anything computed."""
    if isinstance(node, ast.Attribute):
        holders = ast.unparse(node.value).split(".")
        return node.attr if all(_HOLDERS.match(h) for h in holders) else None
    if isinstance(node, ast.Call) and _name(node.func) == "getattr" and len(node.args) >= 2 and \
            all(_HOLDERS.match(h) for h in ast.unparse(node.args[0]).split(".")):
        if isinstance(node.args[1], ast.Name):
            return "@" + node.args[1].id  # getattr(args, arg_name): the setting whose name the variable holds
        if isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            return node.args[1].value  # getattr(args, "reset_bucket_group_order", False): that setting
    return _getter(node)


def _stringish(node: ast.expr) -> bool:
    return (isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))
            or (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format")
            or (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod))
                and (_stringish(node.left) or _stringish(node.right))))


def _name(node: ast.expr) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _name(node.func)
    return None


def template(node: ast.expr) -> tuple[list[str], list[str]]:
    """(literal parts, placeholder expressions): ``len(parts) == len(exprs) + 1``."""
    parts, exprs = [""], []

    def lit(text: str) -> None:
        parts[-1] += text

    def hole(expr: str) -> None:
        exprs.append(expr)
        parts.append("")

    def walk(n: ast.expr) -> None:
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            lit(n.value)
        elif isinstance(n, ast.JoinedStr):
            for value in n.values:
                if isinstance(value, ast.Constant):
                    lit(str(value.value))
                elif isinstance(value, ast.FormattedValue):
                    hole(ast.unparse(value.value))
        elif isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add):
            walk(n.left)
            walk(n.right)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "format" and \
                isinstance(n.func.value, ast.Constant) and isinstance(n.func.value.value, str):
            args = [ast.unparse(a) for a in n.args]
            kwargs = {k.arg: ast.unparse(k.value) for k in n.keywords if k.arg}
            position = 0
            for text, field, _spec, _conv in _formatter_parse(n.func.value.value):
                lit(text)
                if field is None:
                    continue
                if field == "" or field.isdigit():
                    index = position if field == "" else int(field)
                    position += field == ""
                    hole(args[index] if index < len(args) else "?")
                else:
                    hole(kwargs.get(field.split(".")[0].split("[")[0], field))
        elif isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) and isinstance(n.left, ast.Constant) and \
                isinstance(n.left.value, str):
            values = n.right.elts if isinstance(n.right, ast.Tuple) else [n.right]
            pieces = re.split(r"%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[sdrfgixXeEc]", n.left.value)
            for k, piece in enumerate(pieces):
                lit(piece.replace("%%", "%"))
                if k < len(pieces) - 1:
                    hole(ast.unparse(values[k]) if k < len(values) else "?")
        else:
            hole(ast.unparse(n))

    walk(node)
    return parts, exprs


def _formatter_parse(text: str):
    import string

    try:
        return list(string.Formatter().parse(text))
    except ValueError:
        return [(text, None, None, None)]


#: ``parallel_state.get_tensor_model_parallel_world_size()`` reads the setting ``tensor_model_parallel_size``.
_GETTER = re.compile(r"get_(?P<size>\w+_parallel)_world_size$")


def _getter(node: ast.expr) -> Optional[str]:
    hit = _GETTER.match(_name(node.func) or "") if isinstance(node, ast.Call) else None
    return f"{hit.group('size')}_size" if hit else None


def _fields(node: Optional[ast.expr]) -> Iterator[str]:
    if node is None:
        return
    called = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}  # a method, not a field: x.split(",")
    for n in ast.walk(node):
        size = _getter(n)
        if size:
            yield size
        if isinstance(n, ast.Attribute) and id(n) not in called:
            yield n.attr
        elif isinstance(n, ast.Call) and _name(n.func) in ("getattr", "hasattr") and len(n.args) >= 2 and \
                isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str):
            yield n.args[1].value
        elif isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str):
            yield n.slice.value


def _chains(node: Optional[ast.expr]) -> Iterator[str]:
    """The attribute chains an expression reads, outermost (``self.config.rollout.tensor_model_parallel_size``)."""
    if node is None:
        return
    inner = {id(n.value) for n in ast.walk(node) if isinstance(n, ast.Attribute)}
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and id(n) not in inner:
            text = ast.unparse(n)
            if text.count(".") >= 1 and len(text) < 120:
                yield text


def _names(node: Optional[ast.expr]) -> Iterator[str]:
    """The plain names an expression reads (locals and parameters), not calls' function names."""
    if node is None:
        return
    called = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and id(n) not in called and n.id not in ("self", "cls", "args", "config",
                                                                            "None", "True", "False"):
            yield n.id


def _fields_of_text(expr: str) -> Iterator[str]:
    try:
        yield from _fields(ast.parse(expr, mode="eval").body)
    except SyntaxError:
        return


def sites_of(text: str, tree: Optional[ast.AST] = None) -> list[dict]:
    """The raise sites of a source text (``tree``: the text already parsed)."""
    if tree is None:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return []
    reader = _Sites(text)
    reader.visit(tree)
    return reader.found


# --- the index ------------------------------------------------------------------------------------------------
def build(upstream: Path, wheels: bool = True) -> dict:
    """The index of every source (``wheels=False``: the archives in ``upstream`` alone, nothing downloaded)."""
    merged: dict[tuple, dict] = {}
    caught: dict[tuple, dict] = {}
    built_from = []
    copies: dict[str, set[str]] = {}
    features: dict[str, dict[str, set[str]]] = {"files": {}, "modules": {}}
    for package, release, files in sources(upstream, wheels):
        count = 0
        for rel, text in files:
            try:  # one parse serves the sites and the calls kept
                tree = ast.parse(text)
            except (SyntaxError, ValueError):
                continue
            if package == "mindspeed":
                _features.add(features, rel, tree)
            if package in _ARGS_READERS:
                for copy, setting in args_copies(tree).items():
                    copies.setdefault(copy, set()).add(setting)
            for call in _kept(caught_in(tree)):
                handlers = json.dumps(call["handlers"])
                entry = caught.setdefault((package, rel, call["fn"], call["call"], handlers), {
                    "p": package, "f": rel, "fn": call["fn"], "call": call["call"], "h": call["handlers"], "r": {},
                    "n": []})
                entry["r"].setdefault(release, call["line"])
            for site in sites_of(text, tree):
                key = (package, rel, site["fn"], site["x"], tuple(site["t"]), tuple(site["v"]))
                entry = merged.setdefault(key, {"p": package, "f": rel, "fn": site["fn"], "x": site["x"],
                                                "t": site["t"], "v": site["v"], "c": site["c"], "r": {}})
                if "k" in site:
                    entry.setdefault("k", site["k"])
                    entry.setdefault("w", site["w"])
                if "a" in site:
                    entry.setdefault("a", site["a"])
                if "l" in site:
                    entry.setdefault("l", site["l"])
                switches = (site.get("e"), site.get("ea"))
                if entry["r"] and (entry.get("e"), entry.get("ea")) != switches:  # releases differ on them
                    entry["e"], entry["ea"] = None, []
                elif "e" in site:
                    entry.setdefault("e", site["e"])
                    entry.setdefault("ea", site["ea"])
                entry["r"].setdefault(release, site["line"])
                count += 1
        built_from.append({"package": package, "release": release, "sites": count})
        print(f"{package} {release}: {count} raise sites", file=sys.stderr)
    _copied(merged.values(), copies)
    for entry in merged.values():  # the switches around it, where every release has the same
        if not entry.get("e"):
            entry.pop("e", None)
            entry.pop("ea", None)
    sites = sorted(merged.values(), key=lambda e: (e["p"], e["f"], min(e["r"].values()), e["x"]))
    for site, keyword in zip(sites, keywords([s["t"] for s in sites])):
        if keyword:  # the word a message is looked up by (the doctor's own rule: verl_mindspeed.doctor._sites)
            site["kw"] = keyword
    _unkept(caught, upstream, wheels)
    calls = sorted(caught.values(), key=lambda e: (e["p"], e["f"], e["fn"], e["call"], json.dumps(e["h"])))
    return {"format": 1, "built_from": built_from, "sites": sites, "caught": calls,
            "features": _features.written(features)}


#: The packages whose checks read Megatron-LM's parsed arguments after its ``validate_args`` (MindSpeed patches it and
#: runs it first): a copy that function makes is read by both.
_ARGS_READERS = ("megatron-training", "mindspeed")


def args_copies(tree: ast.AST) -> dict[str, str]:
    """The arguments ``validate_args`` sets, in its own body and nowhere else in it, to another argument as it stands
    (``args.transformer_pipeline_model_parallel_size = args.pipeline_model_parallel_size``): copy -> setting. A copy
    assigned under a condition, or more than once, is a derived value, not the setting."""
    out = {}
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef) or not function.name.startswith("validate_args"):
            continue
        written: dict[str, int] = {}
        for node in ast.walk(function):
            for target in _targets(node):
                if isinstance(target, ast.Attribute):
                    written[target.attr] = written.get(target.attr, 0) + 1
        for node in function.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                    isinstance(target := node.targets[0], ast.Attribute) and isinstance(node.value, ast.Attribute) \
                    and ast.unparse(target.value) == ast.unparse(node.value.value) == "args" \
                    and target.attr != node.value.attr and written[target.attr] == 1:
                out[target.attr] = node.value.attr
    return out


def _targets(node: ast.AST) -> list[ast.expr]:
    """What a statement assigns (``x = ...``, ``x += ...``, ``x: T = ...``)."""
    if isinstance(node, ast.Assign):
        return list(node.targets)
    return [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []


def _copied(sites: Iterable[dict], copies: dict[str, set[str]]) -> None:
    """Each check of a package that reads the parsed arguments, on a copy every release makes of one setting: that
    setting among its fields, the copy its alias (a value printed for the copy binds the setting). The YAML form of
    the arguments (``args.model_parallel.transformer_pipeline_model_parallel_size``) holds the same setting (less
    one under a standalone embedding stage; none of its checks prints it)."""
    for site in sites:
        if site["p"] not in _ARGS_READERS:
            continue
        for chain in site.get("a", ()):
            holder, _, copy = chain.rpartition(".")
            settings = copies.get(copy, ())
            if holder.split(".")[0] == "args" and len(settings) == 1:
                setting = next(iter(settings))
                site["c"] = sorted({*site["c"], setting})
                site["l"] = dict(sorted({**site.get("l", {}), copy: setting}.items()))


def _kept(calls: list[dict]) -> list[dict]:
    """The calls a handler keeps something around, in functions whose own name is that of no other function of the
    file (a traceback's frame gives the name alone: two ``__init__`` of one file cannot be told apart)."""
    names: dict[str, set[str]] = {}
    for call in calls:
        names.setdefault(call["fn"].rsplit(".", 1)[-1], set()).add(call["fn"])
    return [c for c in calls if c["handlers"] and len(names[c["fn"].rsplit(".", 1)[-1]]) == 1]


def _unkept(caught: dict[tuple, dict], upstream: Path, wheels: bool) -> None:
    """A second pass over the files that keep a call somewhere: each entry's ``n``, the releases that make that call
    with other handlers or none (the doctor reads which side is newer)."""
    by_call: dict[tuple, list[dict]] = {}
    for (package, rel, fn, call, _handlers), entry in caught.items():
        by_call.setdefault((package, rel, fn, call), []).append(entry)
    files = {(package, rel) for package, rel, _fn, _call in by_call}
    for package, release, sources_ in sources(upstream, wheels):
        for rel, text in sources_:
            if (package, rel) not in files:
                continue
            for call in caught_of(text):
                for entry in by_call.get((package, rel, call["fn"], call["call"]), ()):
                    if release not in entry["r"] and release not in entry["n"]:
                        entry["n"].append(release)


def dump(index: dict) -> bytes:
    text = json.dumps(index, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, compresslevel=9) as gz:
        gz.write(text.encode("utf-8"))
    return buffer.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", type=Path, default=ROOT.parent / "shared" / "upstream")
    parser.add_argument("--check", action="store_true", help="exit 1 when the shipped index differs")
    ns = parser.parse_args()
    if not ns.upstream.is_dir():
        raise SystemExit(f"the upstream archives are not at {ns.upstream}")
    data = dump(build(ns.upstream))
    if ns.check:
        same = OUT.is_file() and OUT.read_bytes() == data
        print("the raise-site index is up to date" if same else "the raise-site index differs: rebuild it")
        return 0 if same else 1
    OUT.write_bytes(data)
    print(f"{OUT.relative_to(ROOT)}: {len(data) // 1024} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
