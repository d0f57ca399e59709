"""The doctor on logs no one wrote: the corpus's real logs cut, mixed, re-coloured and re-prefixed at random.

A log reaches the doctor as saved: cut anywhere, with Windows line ends, two workers' lines interleaved, control
characters, a line of 200,000 characters, bytes that are not UTF-8. None of that may make it fail, and what it
says in every format must still be printable. Ray's process prefixes and colours are taken off before reading, so
adding them to a log that had none does not change its verdict.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import FIXTURES
from verl_mindspeed.cli.doctor import payload, report
from verl_mindspeed.doctor import diagnose

LOGS = sorted((FIXTURES / "failures").glob("*/log.txt"))
TEXTS = {p.parent.name: p.read_text(encoding="utf-8", errors="replace") for p in LOGS}
NAMES = sorted(TEXTS)
#: More examples for a longer search: ``VERL_MINDSPEED_FUZZ_EXAMPLES=2000 pytest tests/core/test_doctor_property.py``.
SOME = settings(max_examples=int(os.environ.get("VERL_MINDSPEED_FUZZ_EXAMPLES", "40")), deadline=None,
                suppress_health_check=[HealthCheck.too_slow])

cuts = st.tuples(st.floats(0, 1), st.floats(0, 1))
noise = st.one_of(st.text(max_size=60), st.sampled_from([
    "\x1b[31m", "\x00\x01\xff", "\ufffd\ud7ff", "Traceback (most recent call last):", "  File \"x.py\", line 1, in f",
    "During handling of the above exception, another exception occurred:", "ValueError:", ": :", "[...]",
    "(WorkerDict pid=1)", "错误: ", "\r", "\t" * 40, "x" * 200_000]))


def _mutate(text: str, cut: tuple[float, float], inserts: list[tuple[float, str]], other: str, mix: bool) -> str:
    lo, hi = sorted(cut)
    text = text[int(lo * len(text)):int(hi * len(text)) + 1]
    lines = text.splitlines(keepends=True)
    for where, what in inserts:
        lines.insert(int(where * len(lines)), what + "\n")
    if mix:  # two processes' lines interleaved, as Ray prints them
        theirs = other.splitlines(keepends=True)
        lines = [line for pair in zip(lines, theirs) for line in pair] + lines[len(theirs):] + theirs[len(lines):]
    return "".join(lines)


def _verdict(found) -> list[tuple]:
    return [(f.verdict.kind, tuple((c.key, c.fix, c.delete) for c in f.verdict.causes)) for f in found.failures]


@SOME
@given(st.sampled_from(NAMES), cuts, st.lists(st.tuples(st.floats(0, 1), noise), max_size=4),
       st.sampled_from(NAMES), st.booleans(), st.booleans())
def test_no_log_makes_the_doctor_fail(name, cut, inserts, other, mix, crlf):
    text = _mutate(TEXTS[name], cut, inserts, TEXTS[other], mix)
    found = diagnose(text.replace("\n", "\r\n") if crlf else text)
    assert found.exit_code in (0, 1, 2)
    for lang in ("en", "zh"):
        out = json.loads(json.dumps(payload(found, lang), ensure_ascii=False))
        assert out["exit_code"] == found.exit_code
        assert all(isinstance(c["key"], str) and c["key"] for c in out["causes"])
        assert report(found, name, lang, 0.0).splitlines()[-1]


def _prefixed(text: str, pid: int) -> str:
    """Each line as a Ray worker prints it; a thread's Markdown quote ('> ') stays in front, where the quote put it."""
    quote = re.compile(r"^(?:> ?)*")
    return "".join(quote.sub(lambda m: f"{m.group(0)}\x1b[36m(WorkerDict pid={pid}, ip=10.0.0.2)\x1b[0m ", line, 1)
                   for line in text.splitlines(True))


PLAIN = [n for n in NAMES if "pid=" not in TEXTS[n] and "\x1b[" not in TEXTS[n]]


@SOME
@given(st.sampled_from(PLAIN), st.integers(1, 99999), st.booleans())
def test_ray_prefixes_colours_and_line_ends_do_not_change_the_verdict(name, pid, crlf):
    """A log with no prefix, read again as one Ray worker printed it (and saved with Windows line ends): the same
    failures, kinds, keys and fix lines."""
    text = _prefixed(TEXTS[name], pid)
    assert _verdict(diagnose(text.replace("\n", "\r\n") if crlf else text)) == _verdict(diagnose(TEXTS[name]))


def test_the_corpus_has_logs_of_both_shapes():
    """Each property above runs over real logs: the corpus holds logs with and without Ray's prefixes."""
    assert len(PLAIN) >= 50 and len(NAMES) - len(PLAIN) >= 50


@SOME
@given(name=st.sampled_from(NAMES), junk=st.binary(max_size=64), where=st.floats(0, 1))
def test_bytes_that_are_not_text_reach_the_command_and_it_answers(tmp_path_factory, name, junk, where):
    """The command reads the file as bytes: a log with bytes no UTF-8 decodes (a cut multi-byte character, a binary
    tail) still gets a report and one of the three exit codes, and its JSON is valid."""
    from verl_mindspeed.cli import main
    from verl_mindspeed.cli.doctor import _read

    raw = TEXTS[name].encode("utf-8")
    at = int(where * len(raw))
    log = tmp_path_factory.mktemp("log") / "run.log"
    log.write_bytes(raw[:at] + junk + b"\xff\xfe\xc3" + raw[at:])
    assert main(["doctor", str(log)]) in (0, 1, 2)
    found = diagnose(_read(str(log)))
    assert json.loads(json.dumps(payload(found, "en")))["exit_code"] == main(["doctor", str(log), "--json"])


@pytest.mark.parametrize("name", ["docs_chatlearn_vocab_parallel_embedding_size_mismatch",
                                  "docs_megatron_bridge_full_recompute_te_scoped_cuda_graph",
                                  "llamafactory_10505_mca_trainingargs_no_enable_torch_profiler"])
def test_a_line_of_200000_characters_after_the_exception_does_not_stall_the_matcher(name):
    """A random draw found these: the line continues the exception's message, and a template that opens with a value
    was searched across all of it (quadratic, minutes). Values and messages are read to a bounded length now; the
    exception read is the same."""
    lines = TEXTS[name].splitlines(True)
    at = max(i for i, line in enumerate(lines) if "Error" in line)
    long = "".join(lines[:at + 1]) + "x" * 200_000 + "\n" + "".join(lines[at + 1:])
    plain, stretched = diagnose(TEXTS[name]), diagnose(long)
    assert [f.raised.type for f in stretched.failures] == [f.raised.type for f in plain.failures]
    assert stretched.exit_code in (0, 1, 2)
