"""A raise of the log -> its site in the index (:mod:`._sites`): by its traceback's frames first (the deepest
frame the index knows, at its line, or the ``assert`` the frame prints), then by its message among the sites that
raise its type, each placeholder's expression bound to the text the message holds in its place.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from typing import Optional

from ._log import Raised
from ._sites import (
    LEAST_LITERAL,
    MESSAGE_CHARS,
    WORD,
    Match,
    Site,
    in_file,
    named,
    pattern_of,
    positions,
    relative,
    site_at,
    words_of,
)


@lru_cache(maxsize=8)
def _plain(message: str) -> str:
    """The message on one line, its spaces evened out (a log wraps values and sentences), bounded: read once for
    every site it is tried against."""
    return " ".join(message[:4 * MESSAGE_CHARS].split())[:MESSAGE_CHARS]


def _found(site: Site, message: str) -> Optional[tuple[dict[str, str], bool]]:
    """(the values the message prints in the site's placeholders, whether the template fills the message whole);
    None when the message is not the site's. A message with no placeholder may follow a tag (``Exception: ``, a
    list's ``- ``, a logger's ``ERROR train.py:88: ``), not the words of another sentence
    (``FSDPEngineConfig.__init__() got an unexpected keyword argument ...`` is Python's, not Megatron-Bridge's ``got
    an unexpected keyword argument``). A template of three placeholders or more is read on the first 1,500
    characters, whole or in part: a line that repeats its words would make the search try every split."""
    pattern = pattern_of(site)
    if pattern is None:
        return None
    text = _plain(message)[:MESSAGE_CHARS if len(site.exprs) < 3 else 1500]
    whole = pattern.fullmatch(text)
    found = whole or (pattern.search(text) if site.exprs else _tagged(pattern, text))
    if found is None:
        return None
    return {expr: value for expr, value in zip(site.exprs, found.groups())}, whole is not None


def _bind(site: Site, message: str) -> Optional[dict[str, str]]:
    """The values the message prints in the site's placeholders (:func:`_found`); None when it is not the site's."""
    found = _found(site, message)
    return found[0] if found is not None else None


def _tagged(pattern: re.Pattern, text: str) -> Optional[re.Match]:
    """The fixed message where it opens the text, or follows a tag's end (``:``, ``-``, ``]``, ``>``, ``|``, ``*``,
    ``#``)."""
    for found in pattern.finditer(text):
        before = text[:found.start()].rstrip()
        if not before or before[-1] in ":-]>|*#":
            return found
    return None


def match(raised: Raised) -> Optional[Match]:
    """The raise site of ``raised``: by its traceback's frames first (deepest frame that the index knows), then by
    its message among the sites that raise its type."""
    best: Optional[Match] = None
    asserted = _asserted(raised) if raised.frames else None
    raised_here = (raised.code or "").startswith(("assert ", "raise "))  # the innermost frame raised it
    for depth, (path, line, _fn) in enumerate(reversed(raised.frames)):
        if depth and raised_here:
            break  # an outer frame's line is a call: a site there is another raise
        rel = relative(path)
        if rel is None or rel not in positions()[0]:
            continue
        for site in in_file(rel):
            if site.exception != raised.type:
                continue
            if depth == 0 and asserted is not None and _same_condition(site.condition) != asserted:
                continue  # the frame prints the assert that failed, and it is not this one
            at_line = tuple(r for r, n in site.releases if n == line)
            bound = _bind(site, raised.message) if site.exprs or site.parts else \
                (None if raised.message.strip() else {})  # a site that prints nothing printed no message
            if not at_line and bound is None and not (depth == 0 and raised.cut and _same_statement(raised, site)):
                continue
            # a message of its own words bound beats a line number, which another release may give another raise
            score = 3.0 * (bound is not None and site.literal >= LEAST_LITERAL) + 2.0 * bool(at_line) + \
                (1.0 if bound is not None else 0.0) + site.literal / 1000
            if best is None or score > best.score:
                best = Match(named(site, bound or {}), bound or {}, at_line or tuple(r for r, _ in site.releases), True,
                             score)
        if best is not None:
            return best
    return _by_message(raised)


def _same_statement(raised: Raised, site: Site) -> bool:
    """A log cut at the frame that raised, in a release whose lines the index lacks: the site is the ``assert`` of
    that very condition, or the one ``raise`` of that class in that function of the file."""
    if _asserted(raised) is not None:
        return _same_condition(site.condition) == _asserted(raised)
    fn = raised.frames[-1][2]
    same = [s for s in in_file(site.file) if s.exception == raised.type and s.function.rsplit(".", 1)[-1] == fn]
    return same == [site]


def _asserted(raised: Raised) -> Optional[str]:
    """The condition of the ``assert`` the innermost frame prints, as Python writes it back (quotes, parentheses and
    spaces evened out); None for another line, or one that is not a whole statement (``assert (`` of a multi-line
    assert, a line ending in ``\\``)."""
    code = (raised.code or "").strip().rstrip("\\").rstrip().rstrip(",")  # "assert x, \\": the message follows
    if raised.type != "AssertionError" or not code.startswith("assert "):
        return None
    try:
        statement = ast.parse(code).body[0]
    except (SyntaxError, IndexError, ValueError):
        return None
    return ast.unparse(statement.test) if isinstance(statement, ast.Assert) else None


@lru_cache(maxsize=4096)
def _same_condition(condition: Optional[str]) -> Optional[str]:
    """A site's condition written back the way :func:`_asserted` writes a frame's (None when it has none)."""
    try:
        return ast.unparse(ast.parse(condition, mode="eval").body) if condition else None
    except (SyntaxError, ValueError):
        return condition


def _by_message(raised: Raised, any_type: bool = False) -> Optional[Match]:
    """The site whose template the message fills, best by its literal text."""
    best: Optional[Match] = None
    words = set(WORD.findall(raised.message))
    allowed = None if any_type else _candidates(raised.type)
    for site in _by_word_candidates(words):
        if (allowed is not None and site.exception not in allowed) or site.literal < LEAST_LITERAL:
            continue
        if not _words(site) <= words:
            continue
        found = _found(site, raised.message)
        if found is None:
            continue
        bound, whole = found
        if not _own_module(site, bound):
            continue
        score = site.literal / 1000 + (0.5 if whole else 0)
        if best is None or score > best.score:
            best = Match(named(site, bound), bound, tuple(r for r, _ in site.releases), False, score)
    return best


def _own_module(site: Site, bound: dict[str, str]) -> bool:
    """A site whose fixed words are Python's own "has no attribute" message (a module's or a class's ``__getattr__``
    printing ``module '{__name__}' has no attribute '{name}'``, ``'{cls.__name__}' has no attribute '{name}'``) is
    the raise, by the message alone, only of one that names the site's own module: Python prints the same words for
    every object. Sites in words of their own (``HybridModelConfig has no attribute``) are not held to it."""
    words = "".join(site.parts).replace("'", " ").replace('"', " ").split()
    if "attribute" not in words or not set(words) <= _PYTHON_WORDS:
        return True
    module = site.file[:-len(".py")].replace("/", ".").removesuffix(".__init__")
    return bound.get("__name__", "").strip("'\"") == module


#: The words of Python's own ``AttributeError`` messages.
_PYTHON_WORDS = frozenset({"module", "type", "object", "has", "no", "attribute"})


def generic(found: Match) -> bool:
    """Matched by the message alone, a short message in plain words that prints its own arguments (megatron-core's
    ``{} is not divisible by {}`` for ``numerator % denominator``), on a condition that reads no attribute: any
    package prints those words, and whose values they are, only a frame says. Such a match is never "upstream
    code, no launch key"."""
    site = found.site
    return not found.by_frame and bool(site.exprs) and not site.chains and not site.aliases and site.literal < 32 \
        and all(re.fullmatch(r"[A-Z]?[a-z]+", word) for part in site.parts for word in re.findall(r"[\w-]+", part))


def by_line(line: str) -> Optional[Match]:
    """A log line that is a known message without its exception type (a cut log, a test's summary)."""
    found = _by_message(Raised("?", line.strip()), any_type=True)
    return found if found is not None and found.site.literal >= 2 * LEAST_LITERAL else None


@lru_cache(maxsize=None)
def _words(site: Site) -> frozenset[str]:
    return words_of(site.parts)


def _by_word_candidates(words: set[str]) -> list[Site]:
    index = positions()[1]
    return [site_at(i) for word in words for i in index.get(word, ())]


@lru_cache(maxsize=64)
def _candidates(kind: str) -> frozenset[str]:
    """The exception types a raise of ``kind`` can come from: that type, else (a type no site raises) the common
    ones."""
    if kind in positions()[2]:
        return frozenset({kind})
    return frozenset({"RuntimeError", "ValueError", "AssertionError", "ConfigCompositionException", "ConfigKeyError"})


__all__ = ["by_line", "generic", "match"]
