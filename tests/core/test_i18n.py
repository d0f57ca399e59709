"""The message catalogue stays complete: every English text has a Chinese text with the same placeholders.

The English texts are extracted with Babel (``tools/i18n.py``, the same code ``update`` runs): ``tr``/``trn``/``trp``
calls, the feature catalogue's texts and the presets' descriptions. The ``.po`` is the one place Chinese lives.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from verl_mindspeed import catalog, presets
from verl_mindspeed.i18n import Msg, default_lang, render, tr, translations, trn, trp

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "verl_mindspeed"

pytest.importorskip("babel", reason="Babel extracts the texts (pip install -e .[test])")


def _tool():
    spec = importlib.util.spec_from_file_location("i18n_tool", ROOT / "tools" / "i18n.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_chinese_catalogue_is_complete_and_compiled():
    """Nothing missing, stale, fuzzy or untranslated; placeholders equal; the .mo is the compiled .po."""
    assert _tool().problems("zh") == []


def test_every_translatable_call_is_seen_by_the_extractor():
    """A ``tr`` call Babel cannot read (a template that is not a literal, a call inside an f-string) is a text
    that silently stays English: every call's template must be a literal that the extracted catalogue holds."""
    tool = _tool()
    extracted = {m.id if isinstance(m.id, str) else m.id[0] for m in tool.template() if m.id}
    unseen = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("tr", "trn", "trp"):
                index = 1 if node.func.id == "trp" else 0
                arg = node.args[index] if len(node.args) > index else None
                where = f"{path.relative_to(SRC)}:{node.lineno}"
                if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                    unseen.append(f"{where}: template is not a literal")
                elif arg.value not in extracted:
                    unseen.append(f"{where}: {arg.value!r} not extracted (inside an f-string?)")
    assert unseen == []


def test_catalogue_and_presets_read_the_same_catalogue():
    """The feature catalogue and the presets carry English only; their Chinese comes from the .po."""
    tp, sp = (catalog.feature(name) for name in ("tp", "sp"))
    assert not [f for f in dir(tp) + dir(tp.flags[0]) if f.endswith("_zh")]
    assert render(tp.name, "zh") == "张量并行 (TP)"
    assert "需要 TP > 1" in render(sp.flags[0].help, "zh")
    mc2 = presets.description("mc2", "zh")
    assert "A3" in mc2 and "MoE" in mc2 and mc2 != presets.description("mc2")


def test_msg_is_a_string_that_renders_in_both_languages():
    inner = tr("{a}; {b}", a="x", b="y")
    outer = Msg("{a}; {b}", {"a": inner, "b": 2})
    assert outer == "x; y; 2" and isinstance(outer, str)
    assert outer.render("zh") == "x；y；2"
    assert pickle.loads(pickle.dumps(outer)).render("zh") == outer.render("zh")
    assert render("plain text no catalogue has", "zh") == "plain text no catalogue has"


def test_plural_and_context_forms():
    one, many = (trn("{n} MindSpeed configuration error:", "{n} MindSpeed configuration errors:", n, n=n)
                 for n in (1, 3))
    assert (one, many) == ("1 MindSpeed configuration error:", "3 MindSpeed configuration errors:")
    assert many.render("zh") == "3 个 MindSpeed 配置错误："
    label = trp("column", "step")
    assert label == "step" and label.render("zh") == "步时"
    assert pickle.loads(pickle.dumps(many)).render("zh") == many.render("zh")
    assert translations("en").gettext("step") == "step"


@pytest.mark.parametrize("env, lang", [
    ({}, "en"), ({"LANG": "zh_CN.UTF-8"}, "zh"), ({"LANG": "zh_CN.UTF-8", "LC_ALL": "C"}, "en"),
    ({"LC_ALL": "zh_TW"}, "zh"), ({"LANG": "en_US.UTF-8"}, "en"),
    ({"LANGUAGE": "zh_CN:en", "LANG": "en_US.UTF-8"}, "zh"), ({"LANGUAGE": "fr:zh", "LANG": "en_US.UTF-8"}, "zh"),
    ({"LANGUAGE": "zh_CN", "LANG": "C"}, "en"), ({"LANGUAGE": "en", "LANG": "zh_CN.UTF-8"}, "en"),
])
def test_default_language_follows_the_locale(env, lang):
    assert default_lang(env) == lang


def test_language_variable_reaches_the_cli():
    """``LANGUAGE=zh_CN`` alone turns the command's output Chinese, as gettext programs do."""
    env = {k: v for k, v in os.environ.items() if k not in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")}
    env.update(LANGUAGE="zh_CN", LANG="en_US.UTF-8")
    out = subprocess.run([sys.executable, "-m", "verl_mindspeed", "presets"], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert "MC2" in out and any("\u4e00" <= ch <= "\u9fff" for ch in out)


#: One Chinese term per concept, in the messages and the Chinese docs: the term used, and the synonyms refused.
GLOSSARY = {"the runtime guard": ("守卫", ("守护",))}


@pytest.mark.parametrize("concept", sorted(GLOSSARY))
def test_one_chinese_term_per_concept(concept):
    po = _tool().load("zh")
    texts = {"verl_mindspeed.po": "\n".join(m.string if isinstance(m.string, str) else " ".join(m.string)
                                            for m in po if m.id),
             "README.zh.md": (ROOT / "README.zh.md").read_text(encoding="utf-8")}
    texts.update({p.name: p.read_text(encoding="utf-8") for p in (ROOT / "docs" / "zh").glob("*.md")})
    term, refused = GLOSSARY[concept]
    assert any(term in t for t in texts.values())
    assert [(name, word) for name, t in texts.items() for word in refused if word in t] == []
