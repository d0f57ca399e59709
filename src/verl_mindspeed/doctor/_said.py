"""What a message itself says, where no index site or code fact places it.

- A message that advises the override to set (``Please set `actor_rollout_ref.rollout.mode=async```) gives it.
- A file not found while verl reads its dataset names the data key whose file it is.
- A keyword argument verl's config converter gets twice is an override_transformer_config key it sets itself.
- A raise no index holds (vLLM's, a recipe's) that prints verl settings by name with their values names those keys;
  "``a (x) is smaller than b (y)``" moves ``a`` up to ``y``, the message's own advice. Sizes abbreviated in a
  printed product (``ETP * EP * PP (1 * 32 * 4 = 128)``) are the engine's.
"""

from __future__ import annotations

import re
from math import prod
from typing import Optional

from ..catalog import verl_keys
from ..i18n import tr
from ._blame import ACTOR, MODEL_FIELDS, Cause, Verdict
from ._log import Raised
from ._paths import verl_leaves, verl_sections
from ._replay import Replay, launch_value
from ._sites import Match
from ._solve import int_of
from ._values import bucket_fix, unlimited
from ._verl import engine_arguments, releases_with

_ADVISED = re.compile(r"\b(?:[Ss]et|[Uu]se|[Pp]ass|[Aa]dd|[Tt]ry|[Ss]pecify)\s+(?:the\s+)?[`'\"]"
                      r"(?P<line>\+{0,2}(?P<key>[a-z_][\w]*(?:\.[\w]+)+)=(?P<value>[^\s`'\"]+))[`'\"]")


def advised(raised: Raised, site: Optional[Match], launch: Optional[Replay]) -> Optional[Verdict]:
    """A message that quotes the override to set ("Please set `actor_rollout_ref.rollout.mode=async`"): the raise's
    own advice, when the key is one of verl's."""
    for hit in _ADVISED.finditer(raised.message):
        key = hit.group("key")
        if key in verl_keys._data()["keys"] and launch_value(launch, key) != hit.group("value"):
            what = tr("{type}: the message itself gives the line to set ({line})", type=raised.type,
                      line=hit.group("line"))
            return Verdict("override", what, [Cause(key, hit.group("line"))], (key.rsplit(".", 1)[-1],), "likely")
    return None


_UNFOUND = re.compile(r"(?:Unable to find|No such file or directory:?|does not exist:?|not found:?)\s*"
                      r"'(?P<path>[^']+)'")
#: verl's functions that read the dataset files ``data.train_files`` / ``data.val_files`` name.
_DATA_READERS = ("create_rl_dataset", "_read_files_and_tokenize", "_create_dataloader")


def data_file(raised: Raised, site: Optional[Match], launch: Optional[Replay]) -> Optional[Verdict]:
    """A file not found while verl reads its dataset: the data key that names it (the one whose value is that path,
    else ``val_files`` for a test or validation file and ``train_files`` for the rest). No line: the file has to
    exist where the workers run (verl's ``examples/data_preprocess`` scripts write them)."""
    hit = _UNFOUND.search(raised.message)
    if raised.type != "FileNotFoundError" or hit is None or not any(fn in _DATA_READERS
                                                                    for _p, _l, fn in raised.frames):
        return None
    path = hit.group("path")
    keys = [k for k in ("data.train_files", "data.val_files") if path in (launch_value(launch, k) or "")]
    key = keys[0] if keys else ("data.val_files" if re.search(r"(?:^|[/_.-])(?:test|val\w*)[/_.-]", path)
                                else "data.train_files")
    what = tr("{type}: the dataset file {path} is not where the workers read it: {key} names it; write it there "
              "(verl's examples/data_preprocess scripts) or point {key} at it", type=raised.type, path=path, key=key)
    return Verdict("override", what, [Cause(key)], (key.rsplit(".", 1)[-1],), "likely")


_TWICE = re.compile(r"got multiple values for (?:keyword )?argument '(?P<name>\w+)'(?: and '(?P<name2>\w+)')?")
_OTC_PATH = ACTOR + "override_transformer_config."


def passed_twice(raised: Raised, site: Optional[Match], launch: Optional[Replay]) -> Optional[Verdict]:
    """verl's config converter passes some TransformerConfig fields itself and the override_transformer_config dict
    as keyword arguments: a key of that dict it already passes fails with "got multiple values for keyword argument"
    (verl#1996). The override goes; the converter's value stands. A name cut short in the message is the written key
    it begins."""
    hit = _TWICE.search(raised.message)
    where = raised.message + " ".join(path for path, _line, _fn in raised.frames)
    if raised.type != "TypeError" or hit is None or "config_converter" not in where:
        return None
    written = [key for key in (launch.keys() if launch is not None else ()) if key.startswith(_OTC_PATH)]
    causes = []
    for name in filter(None, (hit.group("name"), hit.group("name2"))):
        key = next((k for k in written if k[len(_OTC_PATH):] == name), None) or \
            next((k for k in written if k[len(_OTC_PATH):].startswith(name)), _OTC_PATH + name)
        causes.append(Cause(key, delete=True))
    what = tr("{type}: verl's config converter sets {names} itself and passes override_transformer_config on top: "
              "the same keyword twice; delete the override", type=raised.type,
              names=", ".join(c.key.rsplit(".", 1)[-1] for c in causes))
    return Verdict("override", what, causes, tuple(c.key.rsplit(".", 1)[-1] for c in causes), "likely")


_VALUED = re.compile(r"\b(?P<leaf>[a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?:\s*\(|=|:\s*| )(?P<value>-?\d+(?:\.\d+)?)\b\)?")
_SMALLER = re.compile(r"\b(?P<a>[a-z_]+) \((?P<x>\d+)\) is (?:smaller|less) than (?P<b>[a-z_]+) \((?P<y>\d+)\)")


#: How messages abbreviate the engine's sizes ("world size must be divisible by ETP * EP * PP").
_SIZES = {"TP": "tensor_model_parallel_size", "PP": "pipeline_model_parallel_size", "CP": "context_parallel_size",
          "EP": "expert_model_parallel_size", "ETP": "expert_tensor_parallel_size",
          "VPP": "virtual_pipeline_model_parallel_size"}


def _reached(message: str, leaf: str) -> bool:
    """The message says a count reached the limit ``leaf`` (``num_gen_batches=10 >= max_num_gen_batches=10``,
    ``max_num_gen_batches (10) reached``, ``exceeded max_num_gen_batches``): ``leaf`` is the limit side."""
    name = re.escape(leaf)
    return bool(re.search(rf"(?<![-=])>=?\s*{name}\b|\b{name}\b\s*(?:[=:(]\s*\d+\)?\s*)?(?:(?:was|has been|is) )?"
                          rf"(?i:reached|exceeded)\b|\b(?i:reached|exceed(?:s|ed)?)\s+(?:the\s+)?{name}\b", message))


_PRODUCT = re.compile(r"\b(?P<names>(?:[A-Z]{2,3} ?\* ?){1,5}[A-Z]{2,3}) ?\( ?(?P<values>\d+(?: ?\* ?\d+){1,5})")
#: The same product with each size's value after its name: ``PP(2)*CP(4)*TP(2) = 16``.
_EACH = re.compile(r"\b(?:[A-Z]{2,3} ?\( ?\d+ ?\) ?\* ?){1,5}[A-Z]{2,3} ?\( ?\d+ ?\)")
_WORLD = re.compile(r"\b(?P<n>\d+) (?:GPUs|NPUs|devices|ranks)\b(?! (?:per|on each|each|in each)\b)|"
                    r"\bworld[ _]size (?:\(|=|of |is )?(?P<n2>\d+)", re.I)


def _products(message: str) -> list[tuple[list[str], list[int]]]:
    """Each product of abbreviated sizes the message prints, as (names, values), in either form."""
    out = []
    for hit in _PRODUCT.finditer(message[:20000]):
        out.append(([x.strip() for x in hit.group("names").split("*")],
                    [int(v) for v in hit.group("values").split("*")]))
    for hit in _EACH.finditer(message[:20000]):
        pairs = re.findall(r"([A-Z]{2,3}) ?\( ?(\d+) ?\)", hit.group())
        out.append(([n for n, _v in pairs], [int(v) for _n, v in pairs]))
    return out


def _printed_sizes(message: str) -> list[str]:
    """The abbreviated sizes a product in the message prints (``ETP * EP * PP (1 * 32 * 4 = 128)``): the engine's,
    which a bare ``TP=4`` may not be (a rollout's)."""
    named = [n for names, _values in _products(message) for n in names]
    return [n for n in dict.fromkeys(named) if n in _SIZES]


def _failing(message: str) -> Optional[tuple[list[str], list[int], int]]:
    """(names, values, world size) of the one product of sizes the one world size the message prints is not a
    multiple of (``TP(2)*PP(4)*CP(4) = 32`` on 16, not ``EP(8)*ETP(1) = 8``); None where the world size is not
    printed, printed twice (8 per node, 16 in all), or not one product fails."""
    worlds = {int(w.group("n") or w.group("n2")) for w in _WORLD.finditer(message)}
    if len(worlds) != 1:
        return None
    (n,) = worlds
    failing = {(tuple(names), tuple(values)) for names, values in _products(message) if len(names) == len(values)
               and 0 < n <= 1 << 20 and all(0 < v <= 1 << 16 for v in values) and n % prod(values)}
    if len(failing) != 1:  # the same product printed twice (in both forms) is one
        return None
    (names, values), = failing
    return list(names), list(values), n


def _product_fix(message: str) -> dict[str, int]:
    """A printed product of sizes the world size must be a multiple of (``ETP * EP * PP (1 * 64 * 4 = 256)``), with
    the world size the message also prints (``requested 128 GPUs``): each size's largest divisor of its value that
    makes the product divide the world size (PP 4 gives 2). Nothing without the world size."""
    found = _failing(message)
    if found is None:
        return {}
    names, values, n = found
    product, out = prod(values), {}
    for name, value in zip(names, values):
        rest = product // value
        fit = next((d for d in range(value - 1, 0, -1) if value % d == 0 and n % (rest * d) == 0), None)
        if name in _SIZES and fit:
            out[name] = fit
    return out


def _path(leaf: str) -> Optional[str]:
    """The one verl key a printed name is: its only path, else the rollout's or the actor's."""
    paths = verl_leaves().get(leaf, ())
    mine = [p for p in paths if p.startswith("actor_rollout_ref.")]
    return paths[0] if len(paths) == 1 else (mine[0] if len(mine) == 1 else None)


#: A name the message prints in words, with its value ("tensor parallel size (8)"): an engine argument's words.
_WORDED = re.compile(r"\b(?P<words>[A-Za-z]+(?: [A-Za-z]+){1,4}) \(?(?P<value>\d+(?:\.\d+)?)\b\)?")
_QUOTED = re.compile(r"`(?P<leaf>[a-z][a-z0-9]*(?:_[a-z0-9]+)+)`")
_DIVIDES = re.compile(r"(?P<x>\d+)\)?\.? (?:must|should|has to) be (?:divisible by|a multiple of) |"
                      r"(?P<x2>\d+)\)? is not (?:divisible by|a multiple of) ")


#: Where a raise is the rollout engine's: its frames (a message alone may be, too).
_ENGINES = ("/vllm/", "/sglang/", "/tensorrt_llm/", "/verl/workers/rollout/")


def _printed_keys(message: str, engine_side: bool = True,
                  verl_version: Optional[str] = None) -> dict[str, tuple[str, Optional[int], int]]:
    """leaf (as printed) -> (verl key, the value printed with it or None, where it is printed): verl settings by
    name (two underscores at least, no model fact), the engine arguments verl passes its rollout settings as (when
    ``engine_side``), in snake case or in words, and engine arguments a message quotes without a value (vLLM's
    "increasing `gpu_memory_utilization`")."""
    # a release's cached tree keeps only its config classes: then the installed verl's servers say it
    passed = (engine_arguments(verl_version) or engine_arguments()) if engine_side else {}
    engine = {name: key for name, key in passed.items() if name.count("_") >= 2}
    out: dict[str, tuple[str, Optional[int], int]] = {}
    def key_of(leaf: str) -> Optional[str]:  # an engine's argument, else a setting verl names so
        return engine.get(leaf) or (_path(leaf) if leaf.count("_") >= 2 and leaf not in MODEL_FIELDS else None)

    for m in _VALUED.finditer(message):
        key = key_of(m.group("leaf"))
        if key:
            out.setdefault(m.group("leaf"), (key, int_of(m.group("value")), m.start()))
    for m in _WORDED.finditer(message):
        spans = [(w.start(), w.group().lower()) for w in re.finditer(r"[A-Za-z]+", m.group("words"))]
        n = next((n for n in range(len(spans) - 1) if "_".join(w for _a, w in spans[n:]) in engine), None)
        if n is not None:
            leaf = "_".join(w for _a, w in spans[n:])
            out.setdefault(leaf, (engine[leaf], int_of(m.group("value")), m.start() + spans[n][0]))
    for m in _QUOTED.finditer(message):
        key = key_of(m.group("leaf"))
        if key:
            out.setdefault(m.group("leaf"), (key, None, m.start()))
    return out


def _divisor_fix(message: str, printed: dict[str, tuple[str, Optional[int], int]]) -> dict[str, int]:
    """"x must be divisible by b (y)", b a setting: b set to gcd(x, y), the largest value that divides x and still
    divides whatever y divided (a world size, a batch): the nearest value that clears this without breaking those."""
    from math import gcd

    out: dict[str, int] = {}
    for hit in _DIVIDES.finditer(message):
        x = int(hit.group("x") or hit.group("x2"))
        after = sorted((at, leaf) for leaf, (_k, value, at) in printed.items() if at >= hit.end() - 1 and value)
        if after and after[0][0] - hit.end() < 40:
            leaf = after[0][1]
            y = printed[leaf][1]
            if x > 0 and gcd(x, y) < y:
                out[leaf] = gcd(x, y)
    return out


_DOTTED = re.compile(r"(?<![\w.])(?P<path>[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+)(?![\w])")


def pointed(raised: Raised, site: Optional[Match]) -> Optional[Verdict]:
    """A site whose own message names a verl setting by its path (``Please increase
    rollout.update_weights_bucket_megabytes``), where its condition reads no launch key (``self.bucket_size``, a
    value verl derives from it): that setting, the upstream code's own pointer. The path names the one key ending
    with it in the releases that raise there; where those releases keep the setting elsewhere (verl 0.7.1 moved it
    under ``rollout.checkpoint_engine``, the message kept the old name), the one key of that name they have. No
    line, unless the message prints the tensor a size in megabytes must hold (:func:`._values.bucket_fix`)."""
    if site is None or site.site.package != "verl":
        return None  # another package's dotted words are its code (megatron's "tensor.data"), not verl's settings
    raising = set(site.releases)
    found = []
    for hit in _DOTTED.finditer(" ".join(site.site.parts)):
        path = hit.group("path")
        have = [k for k in verl_leaves().get(path.rsplit(".", 1)[-1], ())
                if k not in verl_sections() and raising & set(releases_with(k))]  # the settings of that name they have
        ends = [k for k in have if k == path or k.endswith("." + path)] or have
        if len(ends) == 1 and ends[0] not in found:
            found.append(ends[0])
    if not found:
        return None
    what = tr("{type}: {message} (the message names the setting: {keys})", type=raised.type,
              message=raised.first_line[:160], keys=", ".join(found))
    causes = [Cause(k, bucket_fix(k, raised.message)) for k in found]  # a size to hold the tensor it prints
    return Verdict("override", what, causes, tuple(k.rsplit(".", 1)[-1] for k in found), "possible")


def named(raised: Raised, site: Optional[Match], verl_version: Optional[str] = None) -> Optional[Verdict]:
    """A raise no index holds (vLLM's, a recipe's) whose message prints verl settings by name, or the engine
    arguments verl passes them as (``max_num_batched_tokens (8192) is smaller than max_model_len (9216)``,
    ``tensor parallel size (8)``): those keys, possible causes. Where the message says one is smaller than the
    other, the first moved up to the second is its own advice; where a printed number must be divisible by a setting,
    the setting's largest value that divides both; a limit reached, the value verl documents as no limit. Only names
    specific enough to be verl's (two underscores at least: not ``num_workers`` or ``max_length``, which torch and
    others print too, or an argument verl's rollout passes), and no model fact."""
    if site is not None:
        return None
    message = raised.message[:20000]
    # an engine's argument names (``tensor parallel size``) are the rollout's only where the raise is the engine's
    engine_side = not raised.frames or any(e in f.replace("\\", "/") for f, _l, _fn in raised.frames for e in _ENGINES)
    printed = _printed_keys(message, engine_side, verl_version)
    keys = {leaf: key for leaf, (key, _v, _a) in printed.items()}
    product = _product_fix(message)  # with the world size printed: only the failing product's sizes that can move
    failing = _failing(message)
    keys.update({short: ACTOR + _SIZES[short] for short in _printed_sizes(message)
                 if (not product or short in product) and (failing is None or short in failing[0])})
    if not keys:
        return None
    smaller = _SMALLER.search(message)
    divisor = {**_divisor_fix(message, printed), **product}
    causes = []
    for leaf, key in keys.items():
        fix = f"{key}={smaller.group('y')}" if smaller and smaller.group("a") == leaf and \
            smaller.group("b") in keys else (f"{key}={divisor[leaf]}" if leaf in divisor else None)
        lifted = unlimited(key, verl_version) if fix is None and (printed.get(leaf, ("", None))[1] or 0) > 0 \
            and _reached(message, leaf) else None
        fix = fix or (f"{key}={lifted}" if lifted is not None else None)  # a limit reached: verl's "no limit" value
        if all(c.key != key for c in causes):
            causes.append(Cause(key, fix))
    what = tr("{type}: {message} (raised by code no index here holds; the message prints {keys})", type=raised.type,
              message=raised.first_line[:160], keys=", ".join(keys))
    return Verdict("override", what, causes, tuple(keys), "likely" if any(c.fix for c in causes) else "possible")


__all__ = ["advised", "data_file", "named", "passed_twice", "pointed"]
