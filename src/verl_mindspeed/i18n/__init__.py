"""Messages in two languages: English in the code, every other language in a gettext catalogue.

Every sentence a user reads is written once, in English, as a ``str.format`` template::

    tr("{switch}=True requires {need}=True", switch="use_ascend_mc2", need="sequence_parallel")
    trn("{n} error", "{n} errors", n, n=n)              # plural forms (ngettext)
    trp("column", "step")                               # a short label with its context (pgettext)

Each returns a :class:`Msg`: a ``str`` holding the English text (so it prints, compares and serializes like any
string) that also remembers its template and parameters, so that ``msg.render("zh")`` fills the translated
template. The translations live in ``locale/<lang>/LC_MESSAGES/verl_mindspeed.po`` (compiled beside it to ``.mo``,
read with the standard library's :mod:`gettext`); the catalogue's texts (feature names, descriptions, flag help)
and the presets' descriptions go through the same catalogue. ``python tools/i18n.py update`` extracts the
templates with Babel and merges them into the ``.po``; ``python tools/i18n.py compile`` writes the ``.mo``.
``tests/core/test_i18n.py`` fails when a template has no translation, a translation's placeholders differ, an
entry is stale or fuzzy, or the ``.mo`` is older than the ``.po``.

The language comes from ``--lang``, else from the locale variables as gettext reads them: ``LANGUAGE`` (unless
the locale is ``C``), ``LC_ALL``, ``LC_MESSAGES``, ``LANG`` (``zh_*`` -> ``zh``).
"""

from __future__ import annotations

import gettext
import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

LANGS = ("en", "zh")
DOMAIN = "verl_mindspeed"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"


class Msg(str):
    """English text that knows how to say itself in another language."""

    template: str
    params: Mapping[str, Any]
    plural: Optional[str]
    n: Optional[int]
    context: Optional[str]

    def __new__(cls, template: str, params: Mapping[str, Any], plural: Optional[str] = None,
                n: Optional[int] = None, context: Optional[str] = None) -> "Msg":
        english = template if plural is None or n == 1 else plural
        self = super().__new__(cls, _fill(english, params, "en"))
        self.template, self.params, self.plural, self.n, self.context = template, dict(params), plural, n, context
        return self

    def render(self, lang: str = "en") -> str:
        if lang == "en":
            return str.__str__(self)
        t = translations(lang)
        if self.plural is not None:
            text = (t.npgettext(self.context, self.template, self.plural, self.n) if self.context
                    else t.ngettext(self.template, self.plural, self.n))
        else:
            text = t.pgettext(self.context, self.template) if self.context else t.gettext(self.template)
        return _fill(text, self.params, lang)

    def __reduce__(self):  # pickle / deepcopy keep the template
        return (Msg, (self.template, self.params, self.plural, self.n, self.context))


def tr(template: str, /, **params: Any) -> Msg:
    """A message: ``template`` is English ``str.format`` text with named placeholders."""
    return Msg(template, params)


def trn(singular: str, plural: str, n: int, /, **params: Any) -> Msg:
    """A message whose form depends on the count ``n`` (``ngettext``); pass ``n`` again as a parameter to show it."""
    return Msg(singular, params, plural=plural, n=n)


def trp(context: str, template: str, /, **params: Any) -> Msg:
    """A short text whose meaning needs a ``context`` to translate (``pgettext``): a column title, a label."""
    return Msg(template, params, context=context)


def text(english: str) -> Msg:
    """A text that comes from data (a catalogue row, a preset), not from a ``tr`` call: a message without
    parameters, which ``tools/i18n.py`` extracts from the data itself."""
    return Msg(english, {})


def joined(parts: Sequence[Any], sep: str = ";") -> Any:
    """Non-empty ``parts`` one after the other, each in the reader's language: ``a; b; c`` (or ``a, b, c`` with
    ``sep=","``, as each language writes a list)."""
    out = parts[0]
    for part in parts[1:]:
        out = tr("{a}; {b}", a=out, b=part) if sep == ";" else tr("{a}, {b}", a=out, b=part)
    return out


def render(text: Any, lang: str = "en") -> str:
    """``text`` in ``lang``: a :class:`Msg` renders itself; a plain string (catalogue text) is looked up as is."""
    if isinstance(text, Msg):
        return text.render(lang)
    if text is None:
        return ""
    text = str(text)
    return text if lang == "en" or not text else translations(lang).gettext(text)


def default_lang(environ: Mapping[str, str] = os.environ) -> str:
    """``zh`` when the locale variables ask for Chinese, else ``en``, in gettext's order: ``LANGUAGE`` (a list such
    as ``zh_CN:en``; ignored when the locale is ``C``), then ``LC_ALL``, ``LC_MESSAGES``, ``LANG``."""
    locale = next((environ[v] for v in ("LC_ALL", "LC_MESSAGES", "LANG") if environ.get(v)), "")
    if locale.split(".")[0] not in ("C", "POSIX"):
        for entry in environ.get("LANGUAGE", "").split(":"):
            lang = _lang_of(entry)
            if lang:
                return lang
    return _lang_of(locale) or "en"


def _lang_of(value: str) -> Optional[str]:
    value = value.strip().lower()
    return next((lang for lang in LANGS if value.startswith(lang)), None)


@lru_cache(maxsize=None)
def translations(lang: str) -> gettext.NullTranslations:
    """The compiled catalogue of ``lang`` (no translation for English, or a language without a catalogue)."""
    return gettext.translation(DOMAIN, localedir=str(LOCALE_DIR), languages=[lang], fallback=True)


def _fill(template: str, params: Mapping[str, Any], lang: str) -> str:
    if not params:
        return template
    values = {k: (v.render(lang) if isinstance(v, Msg) else v) for k, v in params.items()}
    return template.format(**values)


__all__ = ["LANGS", "Msg", "default_lang", "joined", "render", "text", "tr", "trn", "trp", "translations"]
