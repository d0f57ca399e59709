"""The message catalogues, kept with Babel: extract every English text, merge it into the .po, compile the .mo.

    python tools/i18n.py update     # extract; add new texts (untranslated), drop texts no code says any more
    python tools/i18n.py compile    # write the .mo the package reads (after translating in the .po)
    python tools/i18n.py check      # what tests/core/test_i18n.py asserts, as a list

The English texts come from three places, all in one catalogue:
- the code: the literal first arguments of ``tr``, ``trn`` (singular, plural) and ``trp`` (context, text);
- the feature catalogue: each feature's name, description and notes, each flag's help, each injection's reason,
  and what each injection source and condition means;
- the presets: each ``conf/mindspeed/*.yaml`` header (its description).
"""

from __future__ import annotations

import io
import string
import sys
from pathlib import Path
from typing import Iterator

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "verl_mindspeed"
LOCALES = {"zh": "zh_CN"}
KEYWORDS = {"tr": None, "trn": (1, 2), "trp": ((1, "c"), 2)}


def po_path(lang: str) -> Path:
    return PACKAGE / "i18n" / "locale" / lang / "LC_MESSAGES" / "verl_mindspeed.po"


def _code() -> Iterator[tuple[object, str, int, str | None]]:
    for filename, lineno, message, _comments, context in extract_from_dir(
            str(PACKAGE), method_map=[("**.py", "python")], keywords=KEYWORDS):
        yield message, f"src/verl_mindspeed/{filename}", lineno, context


def _catalogue() -> Iterator[tuple[object, str, int, str | None]]:
    if str(ROOT / "src") not in sys.path:
        sys.path.insert(0, str(ROOT / "src"))
    from verl_mindspeed import catalog, presets

    for f in catalog.FEATURES:
        where = f"catalog:{f.id}"
        yield from ((text, where, 0, None) for text in (f.name, f.description, *f.notes))
        yield from ((fl.help, f"{where}.{fl.name}", 0, None) for fl in f.flags)
        yield from ((inj.why, f"{where}.injects", 0, None) for inj in f.injects)
    for glossary, where in ((catalog.SOURCES, "catalog:SOURCES"), (catalog.CONDITIONS, "catalog:CONDITIONS")):
        yield from ((meaning, where, 0, None) for meaning in glossary.values())
    for name in presets.names():
        yield presets.description(name), f"conf/mindspeed/{name}.yaml", 1, None


def template() -> Catalog:
    """Every English text the project shows, with where it comes from."""
    out = Catalog(domain="verl_mindspeed", project="verl-mindspeed", charset="utf-8")
    for message, where, lineno, context in (*_code(), *_catalogue()):
        if message:
            out.add(message, locations=[(where, lineno)], context=context)
    return out


def load(lang: str) -> Catalog:
    with po_path(lang).open("rb") as fh:
        return read_po(fh, locale=LOCALES[lang])


def save(lang: str, catalog: Catalog) -> None:
    buf = io.BytesIO()
    write_po(buf, catalog, width=120, ignore_obsolete=True, include_previous=False)
    po_path(lang).write_bytes(buf.getvalue())


def compiled(catalog: Catalog) -> bytes:
    buf = io.BytesIO()
    write_mo(buf, catalog)
    return buf.getvalue()


def fields(text: str) -> set[str]:
    """The ``str.format`` placeholders of one text."""
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def _translated(message) -> bool:
    strings = message.string if isinstance(message.string, tuple) else (message.string,)
    return bool(strings) and all(strings)


def problems(lang: str) -> list[str]:
    """Everything wrong with one language's catalogue against the code, the feature catalogue and its ``.mo``."""
    po, want = load(lang), template()
    key = lambda m: (m.id, m.context)  # noqa: E731
    have = {key(m): m for m in po if m.id}
    out = [f"not in the .po: {k[0]!r} ({m.locations[0][0]})" for k, m in ((key(m), m) for m in want if m.id)
           if k not in have]
    out += [f"stale (no code says it): {k[0]!r}" for k in set(have) - {key(m) for m in want if m.id}]
    for m in have.values():
        ids = m.id if isinstance(m.id, tuple) else (m.id,)
        strings = m.string if isinstance(m.string, tuple) else (m.string,)
        if m.fuzzy:
            out.append(f"fuzzy: {ids[0]!r}")
        if not _translated(m):
            out.append(f"untranslated: {ids[0]!r}")
        elif any(fields(s) != fields(ids[0]) for s in strings):
            out.append(f"placeholders differ: {ids[0]!r} -> {strings!r}")
    mo = po_path(lang).with_suffix(".mo")
    if not mo.exists() or mo.read_bytes() != compiled(po):
        out.append(f"{mo.relative_to(ROOT)} is not the compiled .po: run python tools/i18n.py compile")
    return out


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "check"
    for lang in LOCALES:
        if command == "update":
            po = load(lang)
            po.update(template(), no_fuzzy_matching=True, update_header_comment=False)
            save(lang, po)
            todo = [m.id for m in po if m.id and not _translated(m)]
            print(f"{po_path(lang).relative_to(ROOT)}: {len(po)} texts, {len(todo)} to translate")
        elif command == "compile":
            po_path(lang).with_suffix(".mo").write_bytes(compiled(load(lang)))
        elif command == "check":
            found = problems(lang)
            print("\n".join(found) or f"{lang}: complete")
            if found:
                return 1
        else:
            print(__doc__)
            return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
