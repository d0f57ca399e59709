"""The index of raise sites (``catalog/data/raise_sites.json.gz``, built by ``tools/build_raise_index.py`` from the
sources of every release here): each ``raise``/``assert`` with its message template, the expressions its
placeholders format, the fields and chains its condition reads, the switches it sits under, and its line in each
release. :mod:`._match` finds a log's raise among them.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Optional

INDEX = Path(__file__).resolve().parents[1] / "catalog" / "data" / "raise_sites.json.gz"
#: The least literal text a template needs to be matched without a frame (``{msg}`` alone matches anything).
LEAST_LITERAL = 12
#: A value a message prints is at most this long, and a message is read up to ``MESSAGE_CHARS``: a log's line of a
#: megabyte (a tensor printed whole) costs the matcher no more than a message does.
VALUE_CHARS, MESSAGE_CHARS = 600, 6000


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
    """The attribute chains those tests read that the function does not assign itself before the raise."""

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
def site_at(i: int) -> Site:
    """The index's entry ``i``, built once, when a lookup reaches it: a start builds the few a log's frames and
    words lead to, not ten thousand."""
    s = _raw()[i]
    # the index is written with sorted keys: its release and alias maps come in order
    return Site(s["p"], s["f"], s["fn"], s["x"], tuple(s["t"]), tuple(s["v"]), tuple(s["c"]), tuple(s["r"].items()),
                s.get("k"), bool(s.get("w", False)), tuple(s.get("a", ())),
                tuple(s["l"].items()) if "l" in s else (), s.get("kw"), s.get("e"), tuple(s.get("ea", ())))


def sites() -> tuple[Site, ...]:
    """Every site of the index (each built once)."""
    return tuple(site_at(i) for i in range(len(_raw())))


@lru_cache(maxsize=1)
def positions() -> tuple[dict[str, list[int]], dict[str, list[int]], frozenset[str]]:
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
    return [site_at(i) for i in positions()[0].get(file, ())]


@lru_cache(maxsize=None)
def same_message(site: Site) -> list[Site]:
    """The sites of every file and release whose message is ``site``'s, word for word (a check moved to another
    module is still there)."""
    return [other for i in positions()[1].get(site.keyword or "", ()) for other in [site_at(i)]
            if other.package == site.package and other.parts == site.parts]


@lru_cache(maxsize=None)
def releases_of(package: str) -> tuple[str, ...]:
    """The releases of ``package`` the index was built from, oldest first."""
    seen = {r for s in _raw() if s["p"] == package for r in s["r"]}
    return tuple(sorted(seen, key=lambda r: tuple(int(x) for x in re.findall(r"\d+", r))))


@lru_cache(maxsize=4096)
def pattern_of(site: Site) -> Optional[re.Pattern]:
    if not site.parts:
        return None
    pieces = []
    for k, part in enumerate(site.parts):
        # a sentence's end may meet the next with no space in the source and a line break in the log
        words = [w for word in " ".join(part.split()).split(" ") for w in re.split(r"(?<=[.;:!?])(?=[A-Za-z])", word)]
        pieces.append(r"\s*".join(re.escape(w) for w in words) if any(words) else "")
        if k < len(site.exprs):
            pieces.append(r"\s*(.{0,%d}?)\s*" % VALUE_CHARS)
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


WORD = re.compile(r"[A-Za-z_]{4,}")


def words_of(parts: Iterable[str]) -> frozenset[str]:
    """The words (four letters at least) of a template's longest literal part: all of them must be in a message
    for the site to match it alone."""
    longest = max(parts, key=len, default="")
    return frozenset(WORD.findall(longest))


def keywords(templates: list[list[str]]) -> list[Optional[str]]:
    """For each template (its literal parts), the rarest of its words over all of them (ties by the word): the
    index's builder writes it, so a start does not count the words of ten thousand sites."""
    words = [words_of(parts) for parts in templates]
    counts: dict[str, int] = {}
    for group in words:
        for word in group:
            counts[word] = counts.get(word, 0) + 1
    return [min(group, key=lambda w: (counts[w], w)) if group else None for group in words]


__all__ = ["INDEX", "LEAST_LITERAL", "MESSAGE_CHARS", "WORD", "Match", "Site", "in_file", "keywords", "named",
           "pattern_of", "positions", "relative", "releases_of", "same_message", "site_at", "sites", "words_of"]
