"""``doctor --upstream``: the launch replayed with MindSpeed's own code as well as the hand rules. A raise no index
holds (a release no hand rule has seen) is placed when the replay raises the log's own message."""

from __future__ import annotations

import json

import sources
from test_upstream_check import EXAMPLE, MODEL, OTC, RELEASE, synthetic  # noqa: F401 - the fixture is used

LOG = """(WorkerDict pid=88) Traceback (most recent call last):
(WorkerDict pid=88)   File "/usr/lib/python3.11/site-packages/mindspeed/features_manager/synthetic_release_check.py", \
line 11, in register_patches
(WorkerDict pid=88) AssertionError: synthetic release: fused RoPE is refused by this release
"""


def test_a_raise_of_an_unseen_release_is_confirmed_by_the_upstream_replay(capsys, synthetic, tmp_path):  # noqa: F811
    from verl_mindspeed.cli import main

    log = tmp_path / "run.log"
    log.write_text(LOG)
    argv = ["--args-file", EXAMPLE, "--model-config", MODEL, f"+{OTC}.use_fused_rotary_pos_emb=True"]
    assert main(["doctor", str(log), "--json", *argv[:2], *argv[2:4]]) == 1  # no site, no replay: not placed
    capsys.readouterr()
    _, megatron = sources.release_sources(RELEASE)
    code = main(["doctor", str(log), "--json", "--upstream", "--mindspeed-src", synthetic, "--megatron-src",
                 str(megatron), *argv])
    data = json.loads(capsys.readouterr().out)
    assert code == 0, data
    # MindSpeed's run names the dict it was handed (the ref's, built first on verl 0.9), not a key of it
    assert [c["key"] for c in data["causes"]] == [OTC.replace(".actor.", ".ref.")]
    assert data["failures"][0]["certainty"] == "confirmed"
