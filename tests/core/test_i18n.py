"""The message catalogue stays complete: every English template has a Chinese text with the same placeholders."""

from __future__ import annotations

import ast
import pickle
import string
from pathlib import Path

import pytest

from verl_mindspeed.i18n import Msg, default_lang, render, tr
from verl_mindspeed.i18n.zh import MESSAGES

SRC = Path(__file__).resolve().parents[2] / "src" / "verl_mindspeed"


def _templates() -> dict[str, list[str]]:
    """Every literal template passed to ``tr`` in the package -> where it is used."""
    found: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "tr":
                first = node.args[0] if node.args else None
                where = f"{path.relative_to(SRC)}:{node.lineno}"
                assert isinstance(first, ast.Constant) and isinstance(first.value, str), \
                    f"{where}: tr() needs a literal template (no f-string), so the catalogue can hold it"
                found.setdefault(first.value, []).append(where)
    return found


def _fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def test_every_template_has_chinese():
    missing = {t: w for t, w in _templates().items() if t not in MESSAGES}
    assert not missing, "templates without a Chinese text:\n" + "\n".join(f"{w[0]}: {t!r}" for t, w in missing.items())


def test_placeholders_match():
    wrong = {t: z for t, z in MESSAGES.items() if _fields(t) != _fields(z)}
    assert not wrong, f"Chinese texts whose placeholders differ from the English: {wrong}"


def test_no_stale_entries():
    stale = sorted(set(MESSAGES) - set(_templates()))
    assert not stale, f"catalogue entries no code uses any more: {stale}"


def test_msg_is_a_string_that_renders_in_both_languages(monkeypatch):
    monkeypatch.setitem(MESSAGES, "{a} needs {b}", "{a} 需要 {b}")
    inner = tr("{a} needs {b}", a="x", b="y")
    outer = Msg("{a} needs {b}", {"a": inner, "b": 2})
    assert outer == "x needs y needs 2" and isinstance(outer, str)
    assert outer.render("zh") == "x 需要 y 需要 2"
    assert pickle.loads(pickle.dumps(outer)).render("zh") == outer.render("zh")
    assert render("plain", "zh") == "plain"


@pytest.mark.parametrize("env, lang", [
    ({}, "en"), ({"LANG": "zh_CN.UTF-8"}, "zh"), ({"LANG": "zh_CN.UTF-8", "LC_ALL": "C"}, "en"),
    ({"LC_ALL": "zh_TW"}, "zh"), ({"LANG": "en_US.UTF-8"}, "en"),
])
def test_default_language_follows_the_locale(env, lang):
    assert default_lang(env) == lang


#: One Chinese term per concept, in the messages and the Chinese docs: the term used, and the synonyms refused.
GLOSSARY = {"the runtime guard": ("守卫", ("守护",))}


@pytest.mark.parametrize("concept", sorted(GLOSSARY))
def test_one_chinese_term_per_concept(concept):
    from verl_mindspeed.i18n.zh import MESSAGES

    root = Path(__file__).resolve().parents[2]
    texts = {"zh.py": "\n".join(MESSAGES.values()), "README.zh.md": (root / "README.zh.md").read_text(encoding="utf-8")}
    texts.update({p.name: p.read_text(encoding="utf-8") for p in (root / "docs" / "zh").glob("*.md")})
    term, refused = GLOSSARY[concept]
    assert any(term in t for t in texts.values())
    assert [(name, word) for name, t in texts.items() for word in refused if word in t] == []
