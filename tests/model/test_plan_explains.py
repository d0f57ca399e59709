"""``plan``'s text report explains every row: each has its largest step-time term, the launch's own layout gets the
breakdown and reasons the ranked rows get, and the table lines up by display width in Chinese too."""

from __future__ import annotations

import json
import re

import pytest

from helpers import FIXTURES
from verl_mindspeed.cli import main
from verl_mindspeed.report import width

LAUNCH = FIXTURES / "plan" / "qwen3_30b_a3b_sp_mc2_2x16.args"
MODEL = str(FIXTURES / "models" / "Qwen3-30B-A3B")
TERM = {"en": r"(compute|recompute|bubble|TP|CP|EP|PP|DP) \d+%", "zh": r"(计算|重计算|气泡|TP|CP|EP|PP|DP) \d+%"}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_row_and_the_launchs_own_layout_explain_their_step_time(capsys, lang):
    main(["plan", "--args-file", str(LAUNCH), "--model", MODEL, "--top", "5", "--lang", lang])
    lines = capsys.readouterr().out.splitlines()
    own = next(i for i, line in enumerate(lines) if "TP4 PP1 CP1 EP8" in line)
    # under the launch's line: the same breakdown and reasons a ranked layout's block has
    assert lines[own + 1].startswith("#   ") and "EP 8" in lines[own + 2] and "%" in lines[own + 1]
    head = next(i for i, line in enumerate(lines) if line.startswith("#  TP"))
    rows = lines[head:head + 6]
    assert all(re.search(TERM[lang], row) for row in rows[1:])
    # columns right-aligned: every cell of a column ends at the same display column
    ends = [[width(m.string[:m.end()]) for m in re.finditer(r"\S+(?=\s|$)", row)][:12] for row in rows]
    assert all(e == ends[1] for e in ends[1:]), ends


def test_the_largest_term_is_the_rows_largest_share(capsys):
    args = ["plan", "--model", MODEL, "--nnodes", "2", "--n-gpus-per-node", "16", "--top", "4"]
    main(args + ["--json"])
    layouts = json.loads(capsys.readouterr().out)["layouts"]
    main(args)
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("#  TP"))
    for lay, row in zip(layouts, lines[head + 1:head + 5]):
        shares = lay["step_time_proxy"]["shares"]
        name = max(shares, key=shares.get)
        label = name.upper() if name in ("tp", "cp", "ep", "pp", "dp") else name
        assert re.search(rf"\b{label} {round(100 * shares[name])}%", row), (row, shares)
