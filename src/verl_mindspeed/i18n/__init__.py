"""Messages in two languages: English text in the code, Chinese in a keyed catalogue.

Every sentence a user reads is written once, in English, as a template::

    tr("{switch}=True requires {need}=True", switch="use_ascend_mc2", need="sequence_parallel")

``tr`` returns a :class:`Msg`: a ``str`` holding the English text (so it prints, compares and
serializes like any string) that also remembers its template and parameters, so that
``msg.render("zh")`` can fill the Chinese template of :data:`.zh.MESSAGES`. A test keeps the
catalogue complete: every literal template passed to ``tr`` has a Chinese text with the same
placeholders, and the catalogue holds nothing the code no longer says.

The language comes from ``--lang``, else from ``LC_ALL`` / ``LC_MESSAGES`` / ``LANG`` (``zh_*`` -> ``zh``).
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

LANGS = ("en", "zh")


class Msg(str):
    """English text that knows how to say itself in another language."""

    template: str
    params: Mapping[str, Any]

    def __new__(cls, template: str, params: Mapping[str, Any]) -> "Msg":
        self = super().__new__(cls, _fill(template, params, "en"))
        self.template = template
        self.params = dict(params)
        return self

    def render(self, lang: str = "en") -> str:
        if lang == "en":
            return str.__str__(self)
        return _fill(_catalogue(lang).get(self.template, self.template), self.params, lang)

    def __reduce__(self):  # pickle / deepcopy keep the template
        return (Msg, (self.template, self.params))


def tr(template: str, /, **params: Any) -> Msg:
    """A message: ``template`` is English ``str.format`` text with named placeholders."""
    return Msg(template, params)


def joined(parts: Sequence[Any], sep: str = ";") -> Any:
    """Non-empty ``parts`` one after the other, each in the reader's language: ``a; b; c`` (or ``a, b, c`` with
    ``sep=","``, as each language writes a list)."""
    out = parts[0]
    for part in parts[1:]:
        out = tr("{a}; {b}", a=out, b=part) if sep == ";" else tr("{a}, {b}", a=out, b=part)
    return out


def render(text: Any, lang: str = "en") -> str:
    """``text`` in ``lang``: a :class:`Msg` renders itself; a plain string is looked up as a template."""
    if isinstance(text, Msg):
        return text.render(lang)
    if text is None:
        return ""
    text = str(text)
    return text if lang == "en" else _catalogue(lang).get(text, text)


def default_lang(environ: Mapping[str, str] = os.environ) -> str:
    """``zh`` when the locale variables ask for Chinese, else ``en`` (``LC_ALL`` wins over ``LANG``)."""
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = environ.get(var)
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def _fill(template: str, params: Mapping[str, Any], lang: str) -> str:
    if not params:
        return template
    values = {k: (v.render(lang) if isinstance(v, Msg) else v) for k, v in params.items()}
    return template.format(**values)


def _catalogue(lang: str) -> Mapping[str, str]:
    if lang == "zh":
        from .zh import MESSAGES

        return MESSAGES
    return {}


__all__ = ["LANGS", "Msg", "default_lang", "joined", "render", "tr"]
