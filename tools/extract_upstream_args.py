"""Extract the command-line arguments a MindSpeed release or Megatron-LM ``megatron/training`` registers, from sources.

Reads every ``add_argument`` call of an archive (or a source folder) without importing it, the way
``../shared/reference/mindspeed_args.json`` lists them: one entry per destination with its flag, file, type,
default, choices, action and help. Used for the release branches the reference catalogue lacks (MindSpeed
core_r0.17.0 and core_r0.18.0, whose import needs ``megatron_adaptor``, a package published nowhere this project
installs from), and checked against the reference on the branches it has (``tests/conformance/test_stack_facts.py``).

    python tools/extract_upstream_args.py ../shared/upstream/mindspeed-core_r0.18.0.tar.gz --root mindspeed
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import sys
import tarfile
from pathlib import Path
from typing import Any, Iterator, Optional


def _sources(path: Path, root: str) -> Iterator[tuple[str, str]]:
    """(path inside the package, text) of every Python file under ``root`` in an archive or a folder."""
    if path.is_dir():
        for file in sorted((path / root).rglob("*.py")):
            yield file.relative_to(path).as_posix(), file.read_text(encoding="utf-8", errors="replace")
        return
    with tarfile.open(path) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            name = member.name.split("/", 1)[1] if member.name.count("/") and not member.name.startswith(root) \
                else member.name
            if member.isfile() and name.endswith(".py") and name.startswith(root + "/"):
                data = tar.extractfile(member)
                if data is not None:
                    yield name, io.TextIOWrapper(data, encoding="utf-8", errors="replace").read()


def _literal(node: Optional[ast.AST]) -> Any:
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return ast.unparse(node)


def _entry(call: ast.Call, file: str) -> Optional[tuple[str, dict]]:
    flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    longs = [f for f in flags if f.startswith("--")]
    if not longs:
        return None
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    dest = _literal(kw["dest"]) if "dest" in kw else longs[0][2:].replace("-", "_")
    if not isinstance(dest, str):
        return None
    spec: dict[str, Any] = {"flag": longs[0], "file": file}
    if "type" in kw:
        spec["type"] = ast.unparse(kw["type"])
    if "default" in kw:
        spec["default"] = _literal(kw["default"])
    if "choices" in kw:
        spec["choices"] = _literal(kw["choices"])
    if "action" in kw:
        spec["action"] = _literal(kw["action"])
    if "nargs" in kw:
        spec["nargs"] = _literal(kw["nargs"])
    if "help" in kw:
        help_text = _literal(kw["help"])
        spec["help"] = help_text if isinstance(help_text, str) else str(help_text)
    return dest, spec


def extract(path: Path, root: str) -> dict[str, dict]:
    """Every argument registered under ``root`` (``mindspeed`` or ``megatron``), by destination; the first
    registration of a destination wins, the features' own modules first."""
    out: dict[str, dict] = {}
    # a destination registered twice: the feature's own registration (features_manager) is the one that holds
    for file, text in sorted(_sources(path, root), key=lambda ft: ("/features_manager/" not in ft[0], ft[0])):
        if "add_argument" not in text:
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if "/tests/" in file:
                break
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "add_argument":
                found = _entry(node, file)
                if found and found[0] not in out:
                    out[found[0]] = found[1]
    return dict(sorted(out.items()))


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="an upstream archive (.tar.gz) or source folder")
    parser.add_argument("--root", default="mindspeed", help="the package folder to read (mindspeed or megatron)")
    ns = parser.parse_args(argv)
    json.dump(extract(ns.source, ns.root), sys.stdout, indent=1, ensure_ascii=False, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
