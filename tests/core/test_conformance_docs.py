"""docs/conformance.md (en and zh) names every check the conformance judge accepts as deliberately stricter than
MindSpeed, so a reader sees each exception the agreement table allows, with its reason."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _exceptions() -> set[str]:
    tree = ast.parse((ROOT / "tests" / "conformance" / "differential.py").read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and node.targets[0].id in ("DELIBERATE", "DOCUMENTED_WARNINGS"):
            names |= {k.value for k in node.value.keys}
    return names


@pytest.mark.parametrize("doc", ["docs/conformance.md", "docs/zh/conformance.md"])
def test_every_deliberate_exception_is_documented(doc):
    names = _exceptions()
    assert len(names) > 10
    text = (ROOT / doc).read_text()
    assert sorted(n for n in names if f"`{n}`" not in text) == []
