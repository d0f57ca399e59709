"""The catalogue covers every row of the feature guide, and everything generated from it is in sync."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from helpers import BASIC, ROOT
from verl_mindspeed import catalog
from verl_mindspeed.cli import main
from verl_mindspeed.docs_gen import features_markdown, generated_files
from verl_mindspeed.i18n import render


def test_counts_and_kinds():
    kinds = [f.kind for f in catalog.FEATURES if f.source == "seed"]
    assert kinds.count("feature") == 12 and kinds.count("fused_op") == 6
    extra = [f for f in catalog.FEATURES if f.source != "seed"]
    assert {"fused_rope", "mbridge", "cp_algo"} <= {f.id for f in extra}  # the rows MindSpeed's verl guide adds


def test_ids_unique_and_both_languages():
    ids = [f.id for f in catalog.FEATURES]
    assert len(ids) == len(set(ids))
    for f in catalog.FEATURES:
        assert f.name and render(f.name, "zh") and f.description
        assert re.search(r"[\u4e00-\u9fff]", render(f.description, "zh")), f"{f.id}: description has no Chinese"
        for fl in f.flags:
            assert fl.help and fl.feeds, fl.name
            assert re.search(r"[\u4e00-\u9fff]", render(fl.help, "zh")), f"{fl.name}: help has no Chinese"


def test_seed_permute_name_is_an_alias_of_the_real_flags():
    aliases = catalog.aliases()
    assert aliases["fused_permute_and_unpermute"] == "use_fused_moe_token_permute_and_unpermute"
    assert aliases["fused_permute_unpermute"] == "use_fused_moe_token_permute_and_unpermute"


def test_rules_named_by_features_exist():
    from verl_mindspeed.rules import RULES

    ids = {r.id for r in RULES}
    for f in catalog.FEATURES:
        assert set(f.rules) <= ids, f"{f.id} names unknown rules {set(f.rules) - ids}"


def test_features_json(capsys):
    assert main(["features", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["features"]) == len(catalog.FEATURES)
    first = data["features"][0]
    assert {"id", "name", "name_zh", "kind", "status", "keys", "aliases"} <= set(first)
    permute = next(f for f in data["features"] if f["id"] == "fused_permute_unpermute")
    # the key check accepts is the real flag; the guide's own (wrong) spelling is kept as an alias note
    assert permute["keys"] == [
        "actor_rollout_ref.actor.megatron.override_transformer_config.use_fused_moe_token_permute_and_unpermute"]
    assert permute["guide_keys"] == [
        "actor_rollout_ref.actor.megatron.override_transformer_config.fused_permute_and_unpermute"]
    assert "fused_permute_unpermute" in permute["aliases"]


def test_features_table_shows_the_accepted_key(capsys):
    assert main(["features"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("fused_permute_unpermute"))
    assert "override_transformer_config.use_fused_moe_token_permute_and_unpermute" in row
    assert "the guide's fused_permute_and_unpermute is an alias" in row


@pytest.mark.parametrize("fmt, lang, needle", [
    ("table", "en", "Tensor parallelism (TP)"),
    ("table", "zh", "张量并行 (TP)"),
    ("markdown", "zh", "## 融合算子支持列表"),
    ("markdown", "en", "## Fused operators"),
])
def test_features_text_forms(capsys, fmt, lang, needle):
    assert main(["features", "--format", fmt, "--lang", lang]) == 0
    assert needle in capsys.readouterr().out


def test_generated_files_are_in_sync():
    for path, text in generated_files().items():
        assert path.read_text(encoding="utf-8") == text, f"{path} drifted: run python -m verl_mindspeed.docs_gen"


def test_docs_gen_check_command():
    proc = subprocess.run([sys.executable, "-m", "verl_mindspeed.docs_gen", "--check"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_feature_docs_list_every_key():
    en, zh = features_markdown("en"), features_markdown("zh")
    for f in catalog.FEATURES:
        for key, guide in f.keys:
            assert f"`{key}`" in en and f"`{key}`" in zh
            assert guide is None or (f"`{guide}`" in en and f"`{guide}`" in zh)


def test_injections_are_catalogue_data_read_by_one_vocabulary():
    """What a launch through verl-mindspeed writes lives in the catalogue; the resolver only reads the sources and
    decides the conditions it names, with the same names; every switch that calls for one is a key MindSpeed or
    megatron reads."""
    from verl_mindspeed.catalog import universe
    from verl_mindspeed.resolver import _finalize

    assert set(_finalize.SOURCES) == set(catalog.SOURCES) and set(_finalize.CONDITIONS) == set(catalog.CONDITIONS)
    used = {inj.value.source for inj in catalog.injections() if isinstance(inj.value, catalog.From)}
    assert used == set(catalog.SOURCES)  # no source without an injection reading it
    assert {c for inj in catalog.injections() for c in inj.requires} == set(catalog.CONDITIONS)
    known = universe.known_otc_keys()
    assert [s for inj in catalog.injections() for s in inj.when if s not in known] == []
    with pytest.raises(ValueError, match="unknown source or condition"):
        catalog.Injection(key="x", value=catalog.From("engine.nope"), why="-")


def test_the_feature_table_reads_only_catalogue_data():
    """The report has no case per feature id: where a feature's state is read besides its primary flag is the
    catalogue's ``shown_otherwise``, one of three forms the report knows."""
    import inspect

    from verl_mindspeed import report

    source = inspect.getsource(report.feature_state)
    assert not [f.id for f in catalog.FEATURES if f'"{f.id}"' in source]
    assert {f.shown_otherwise.partition(".")[0] for f in catalog.FEATURES if f.shown_otherwise} <= {"megatron",
                                                                                                    "engine", "dict"}


def test_a_row_shows_its_state_from_another_key_of_the_dict(base_cfg, capsys):
    """The MoE alltoall row reads the dispatcher when the async-comm switch is unset: a launch that sets
    moe_token_dispatcher_type=alltoall shows it, not '-'."""
    main(["check", "--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo", *BASIC,
          "+actor_rollout_ref.actor.megatron.override_transformer_config.moe_token_dispatcher_type=alltoall"])
    row = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("MoE alltoall dispatcher"))
    states = row.split()[3:]
    assert states and set(states) == {"alltoall"}
