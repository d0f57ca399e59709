"""An exception of the log -> the raise site that produced it, and the values its message formats.

The index (``catalog/data/raise_sites.json.gz``, built by ``tools/build_raise_index.py`` from the sources of
every release here) holds each ``raise``/``assert`` with its message template. A raise is matched by the file and
line of its traceback's last frame where the log has one (which also tells the release), else by its message
against every template of that exception type. Each placeholder's expression is bound to the text the message
holds in its place: ``num_attention_heads ({self.num_attention_heads}) must be a multiple of ...`` read against
``num_attention_heads (32) must be ...`` gives ``self.num_attention_heads = 32``.
"""

from __future__ import annotations

import ast
import gzip
import json
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Optional

from ._log import Raised

INDEX = Path(__file__).resolve().parents[1] / "catalog" / "data" / "raise_sites.json.gz"
#: The least literal text a template needs to be matched without a frame (``{msg}`` alone matches anything).
_LEAST_LITERAL = 12


@dataclass(eq=False, slots=True)
class Site:
    """One raise or assert of the index. Read-only by use; each is one object, compared and hashed by identity (ten
    thousand of them are built at every start: a frozen dataclass's field-by-field init and hash cost more than
    the doctor's own work on a short log)."""

    package: str
    file: str
    function: str
    exception: str
    parts: tuple[str, ...]
    exprs: tuple[str, ...]
    fields: tuple[str, ...]
    releases: tuple[tuple[str, int], ...]
    condition: Optional[str] = None
    raises_when_false: bool = False
    chains: tuple[str, ...] = ()
    """The attribute chains the condition reads (``rollout_config.tensor_model_parallel_size``): which section a
    field is read from."""
    aliases: tuple[tuple[str, str], ...] = ()
    """Locals the condition reads that are one setting under another name: (``infer_tp``,
    ``tensor_model_parallel_size``), (``vp_size``, ``virtual_pipeline_model_parallel_size``); (``args_value``,
    ``@arg_name``) for ``args_value = getattr(args, arg_name)``, the setting the message names in ``arg_name``."""
    keyword: Optional[str] = None
    """The rarest word of the longest literal part among all sites (written by the index's builder): the key a
    message's words find this site under."""
    enclosing: Optional[str] = None
    """The tests of the ``if``s around the raise in its function, joined by ``and`` (the feature's switch a check
    sits under: ``args.use_fused_rmsnorm``); None at the function's top level."""
    enclosing_chains: tuple[str, ...] = ()

    def names(self, leaf: str) -> tuple[str, ...]:
        """What the condition and the message may call the setting ``leaf``: itself, and its aliases."""
        return (leaf, *(local for local, field in self.aliases if field == leaf))

    @property
    def literal(self) -> int:
        return sum(len(p.strip()) for p in self.parts)

    def template(self) -> str:
        return "{}".join(self.parts) if self.exprs else (self.parts[0] if self.parts else "")


def named(site: Site, bound: dict[str, str]) -> Site:
    """``site`` with the settings its message names in a variable (``getattr(args, arg_name)`` printed as
    ``tensor_model_parallel_size value from checkpoint (1) is not equal to ... (2)``) among its fields and aliases."""
    dynamic = {local: bound.get(field[1:], "").strip() for local, field in site.aliases if field.startswith("@")}
    if not dynamic:
        return site
    names = {local: name for local, name in dynamic.items() if name.isidentifier()}
    return replace(site, fields=tuple(dict.fromkeys((*site.fields, *names.values()))),
                   aliases=tuple(sorted((*((k, v) for k, v in site.aliases if not v.startswith("@")), *names.items()))))


@dataclass
class Match:
    site: Site
    bound: dict[str, str] = field(default_factory=dict)
    """Each placeholder's expression -> the text the message holds in its place."""
    releases: tuple[str, ...] = ()
    """The releases whose line equals the frame's (all the site's releases when matched by message alone)."""
    by_frame: bool = False
    score: float = 0.0


@lru_cache(maxsize=1)
def index() -> dict:
    """The index as written: ``sites``, and ``caught`` (the calls each release makes inside a try that keeps a
    named exception type)."""
    return json.loads(gzip.decompress(INDEX.read_bytes()).decode("utf-8"))


def _raw() -> list[dict]:
    return index()["sites"]


@lru_cache(maxsize=None)
def _site(i: int) -> Site:
    """The index's entry ``i``, built once, when a lookup reaches it: a start builds the few a log's frames and
    words lead to, not ten thousand."""
    s = _raw()[i]
    # the index is written with sorted keys: its release and alias maps come in order
    return Site(s["p"], s["f"], s["fn"], s["x"], tuple(s["t"]), tuple(s["v"]), tuple(s["c"]), tuple(s["r"].items()),
                s.get("k"), bool(s.get("w", False)), tuple(s.get("a", ())),
                tuple(s["l"].items()) if "l" in s else (), s.get("kw"), s.get("e"), tuple(s.get("ea", ())))


def sites() -> tuple[Site, ...]:
    """Every site of the index (each built once)."""
    return tuple(_site(i) for i in range(len(_raw())))


@lru_cache(maxsize=1)
def _positions() -> tuple[dict[str, list[int]], dict[str, list[int]], frozenset[str]]:
    """The index's entries by file, by keyword, and the exception types its sites raise: one pass over it."""
    files: dict[str, list[int]] = {}
    words: dict[str, list[int]] = {}
    for i, s in enumerate(_raw()):
        files.setdefault(s["f"], []).append(i)
        if "kw" in s:
            words.setdefault(s["kw"], []).append(i)
    return files, words, frozenset(s["x"] for s in _raw())


def in_file(file: str) -> list[Site]:
    """The sites of one source file (``megatron/core/parallel_state.py``), every release's."""
    return [_site(i) for i in _positions()[0].get(file, ())]


@lru_cache(maxsize=None)
def same_message(site: Site) -> list[Site]:
    """The sites of every file and release whose message is ``site``'s, word for word (a check moved to another
    module is still there)."""
    return [other for i in _positions()[1].get(site.keyword or "", ()) for other in [_site(i)]
            if other.package == site.package and other.parts == site.parts]


@lru_cache(maxsize=None)
def releases_of(package: str) -> tuple[str, ...]:
    """The releases of ``package`` the index was built from, oldest first."""
    seen = {r for s in _raw() if s["p"] == package for r in s["r"]}
    return tuple(sorted(seen, key=lambda r: tuple(int(x) for x in re.findall(r"\d+", r))))


@lru_cache(maxsize=4096)
def _pattern(site: Site) -> Optional[re.Pattern]:
    if not site.parts:
        return None
    pieces = []
    for k, part in enumerate(site.parts):
        # a sentence's end may meet the next with no space in the source and a line break in the log
        words = [w for word in " ".join(part.split()).split(" ") for w in re.split(r"(?<=[.;:!?])(?=[A-Za-z])", word)]
        pieces.append(r"\s*".join(re.escape(w) for w in words) if any(words) else "")
        if k < len(site.exprs):
            pieces.append(r"\s*(.{0,%d}?)\s*" % _VALUE_CHARS)
    try:
        return re.compile("".join(pieces), re.S)
    except re.error:
        return None


def relative(path: str) -> Optional[str]:
    """The index's file name for a frame's path: from the import root (``megatron/``, ``mindspeed/``...)."""
    path = path.replace("\\", "/")
    for root in ("megatron/", "mindspeed/", "verl/", "mbridge/", "hydra/", "omegaconf/"):
        at = path.rfind("/" + root)
        if at >= 0 or path.startswith(root):
            return path[at + 1:] if at >= 0 else path
    return None


#: A value a message prints is at most this long, and a message is read up to ``_MESSAGE_CHARS``: a log's line of a
#: megabyte (a tensor printed whole) costs the matcher no more than a message does.
_VALUE_CHARS, _MESSAGE_CHARS = 600, 6000


def _bind(site: Site, message: str) -> Optional[dict[str, str]]:
    pattern = _pattern(site)
    if pattern is None:
        return None
    text = " ".join(message[:4 * _MESSAGE_CHARS].split())[:_MESSAGE_CHARS]
    found = pattern.fullmatch(text) or pattern.search(text)
    if found is None:
        return None
    return {expr: value for expr, value in zip(site.exprs, found.groups())}


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
        if rel is None or rel not in _positions()[0]:
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
            score = 2.0 * bool(at_line) + (1.0 if bound is not None else 0.0) + site.literal / 1000
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
    best: Optional[Match] = None
    words = set(_WORD.findall(raised.message))
    allowed = None if any_type else _candidates(raised.type)
    for site in _by_word_candidates(words):
        if (allowed is not None and site.exception not in allowed) or site.literal < _LEAST_LITERAL:
            continue
        if not _words(site) <= words:
            continue
        bound = _bind(site, raised.message)
        if bound is None:
            continue
        whole = " ".join(raised.message[:4 * _MESSAGE_CHARS].split())[:_MESSAGE_CHARS]
        score = site.literal / 1000 + (0.5 if _pattern(site).fullmatch(whole) else 0)
        if best is None or score > best.score:
            best = Match(named(site, bound), bound, tuple(r for r, _ in site.releases), False, score)
    return best


def by_line(line: str) -> Optional[Match]:
    """A log line that is a known message without its exception type (a cut log, a test's summary)."""
    found = _by_message(Raised("?", line.strip()), any_type=True)
    return found if found is not None and found.site.literal >= 2 * _LEAST_LITERAL else None


_WORD = re.compile(r"[A-Za-z_]{4,}")


def words_of(parts: Iterable[str]) -> frozenset[str]:
    """The words (four letters at least) of a template's longest literal part: all of them must be in a message
    for the site to match it alone."""
    longest = max(parts, key=len, default="")
    return frozenset(_WORD.findall(longest))


def keywords(templates: list[list[str]]) -> list[Optional[str]]:
    """For each template (its literal parts), the rarest of its words over all of them (ties by the word): the
    index's builder writes it, so a start does not count the words of ten thousand sites."""
    words = [words_of(parts) for parts in templates]
    counts: dict[str, int] = {}
    for group in words:
        for word in group:
            counts[word] = counts.get(word, 0) + 1
    return [min(group, key=lambda w: (counts[w], w)) if group else None for group in words]


@lru_cache(maxsize=None)
def _words(site: Site) -> frozenset[str]:
    return words_of(site.parts)


def _by_word_candidates(words: set[str]) -> list[Site]:
    index = _positions()[1]
    return [_site(i) for word in words for i in index.get(word, ())]


@lru_cache(maxsize=64)
def _candidates(kind: str) -> frozenset[str]:
    """The exception types a raise of ``kind`` can come from: that type, else (a type no site raises) the common
    ones."""
    if kind in _positions()[2]:
        return frozenset({kind})
    return frozenset({"RuntimeError", "ValueError", "AssertionError", "ConfigCompositionException", "ConfigKeyError"})


__all__ = ["INDEX", "Match", "Site", "by_line", "in_file", "keywords", "match", "relative", "releases_of",
           "same_message", "sites", "words_of"]
