"""Composing at C speed changes nothing: every YAML file verl ships reads the same through libyaml under
OmegaConf's loader, a duplicate key is still refused, and a launch composes to the same config."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from verl_mindspeed.compose import _fast, _trees, compose_argv
from verl_mindspeed.compose._hydra_run import compose

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML without libyaml: nothing is swapped")


def _yaml_files() -> list[Path]:
    roots = [ROOT / "src" / "verl_mindspeed"]
    installed = _trees.installed_tree()
    if installed is not None:
        roots.append(installed[0] / "verl")
    if _trees.cache_root().is_dir():
        roots += [tree / "verl" for tree in sorted(_trees.cache_root().iterdir()) if (tree / "verl").is_dir()]
    unique: dict[bytes, Path] = {}  # releases share most files: each distinct text once
    for path in sorted(p for r in roots for p in r.rglob("*.yaml")):
        unique.setdefault(path.read_bytes(), path)
    return sorted(unique.values())


def _read(path: Path) -> str:
    """What OmegaConf makes of a file, with the Python type of every value (``repr`` tells 1 from True and
    ``'1e-5'`` from ``1e-05``)."""
    return repr(OmegaConf.to_container(OmegaConf.load(path), resolve=False))


def test_every_yaml_file_reads_the_same_through_libyaml():
    files = _yaml_files()
    assert len(files) > 20, files  # at least our presets and one verl tree
    plain = {p: _read(p) for p in files}
    with _fast.accelerated():
        fast = {p: _read(p) for p in files}
    assert [p for p in files if plain[p] != fast[p]] == []
    # read_yaml (the engine YAML read for its keys, never composed) gives the same data without OmegaConf's nodes
    assert [p for p in files if repr(_fast.read_yaml(p)) != plain[p]] == []


def test_the_fast_loader_is_in_use_only_inside_and_keeps_omegaconfs_rules(tmp_path):
    import omegaconf._utils as utils

    data = tmp_path / "x.yaml"
    data.write_text("lr: 1e-5\nwhen: 2001-12-14\nflag: yes\n", encoding="utf-8")
    outside = utils.get_yaml_loader()
    with _fast.accelerated():
        inside = utils.get_yaml_loader()
        value = OmegaConf.to_container(OmegaConf.load(data))
    assert inside is _fast.libyaml_loader() and outside is not inside
    assert utils.get_yaml_loader() is not inside  # restored
    # OmegaConf's float resolver (1e-5 is a float, not YAML 1.1's string) and no timestamps; yes is YAML 1.1 True
    assert value == {"lr": 1e-05, "when": "2001-12-14", "flag": True}
    data.write_text("a: 1\na: 2\n", encoding="utf-8")
    with _fast.accelerated(), pytest.raises(yaml.constructor.ConstructorError, match="duplicate key a"):
        OmegaConf.load(data)


def test_each_override_is_parsed_once_and_hydra_gets_the_same_objects():
    from hydra.core.override_parser.overrides_parser import OverridesParser

    calls = []
    plain = OverridesParser.parse_overrides

    def counting(self, overrides):
        calls.extend(overrides)
        return plain(self, overrides)

    OverridesParser.parse_overrides = counting
    try:
        with _fast.accelerated():
            parser = OverridesParser.create()
            first = parser.parse_overrides(["a.b=1", "+c=[1,2]"])
            again = parser.parse_overrides(["+c=[1,2]", "a.b=1"])
    finally:
        OverridesParser.parse_overrides = plain
    assert calls == ["a.b=1", "+c=[1,2]"]
    assert again == first[::-1] and again[0] is first[1]
    assert OverridesParser.parse_overrides is plain


@pytest.mark.parametrize("example", sorted((ROOT / "examples").glob("*.args")), ids=lambda p: p.stem)
def test_a_launch_composes_to_the_same_config(example):
    from verl_mindspeed.launch import read_args_file

    comp = compose_argv(read_args_file(str(example)))
    plain = compose(comp.tree.config_dir, comp.config_name, comp.overrides)
    assert OmegaConf.to_yaml(comp.cfg) == OmegaConf.to_yaml(plain)


def _launches() -> list[Path]:
    """Every launch the project ships or is given: examples, script fixtures, the real-script corpus if here."""
    from helpers import FIXTURES

    corpus = ROOT.parent / "shared" / "corpus" / "real-scripts"
    return sorted([*(ROOT / "examples").glob("*.args"), *(FIXTURES / "scripts").glob("*.sh"),
                   *(corpus.glob("*.args") if corpus.is_dir() else [])])


def test_the_suites_compositions_are_hydras(_compose_each_launch_once):
    """The suite composes the top-level part of a launch once and applies the dotted overrides with Hydra's own
    code (``verl_mindspeed.compose._memo``): over every launch, what it hands out is what Hydra composes, struct flag
    included, and each copy is a test's own."""
    from verl_mindspeed import compose as package
    from verl_mindspeed.launch import read_args_file

    checked = 0
    for launch in _launches():
        try:
            comp = compose_argv(read_args_file(str(launch)))
        except Exception:  # noqa: BLE001 - a launch that does not compose here (another entry, a missing tree)
            continue
        args = (comp.tree.config_dir, comp.config_name, comp.overrides)
        fresh = _compose_each_launch_once(*args)  # Hydra's own compose
        for made in (comp.cfg, package.compose(*args)):
            assert OmegaConf.to_yaml(made) == OmegaConf.to_yaml(fresh), launch.name
            assert OmegaConf.is_struct(made) == OmegaConf.is_struct(fresh)
        checked += 1
    assert checked >= 5  # the examples and script fixtures; the real-script corpus too when it is beside the repo
    tp = "actor_rollout_ref.actor.megatron.tensor_model_parallel_size"
    first = compose_argv(["--config-name=ppo_megatron_trainer", f"{tp}=2"])
    args = (first.tree.config_dir, first.config_name, first.overrides)
    first.cfg.actor_rollout_ref.actor.megatron.tensor_model_parallel_size = 4
    assert OmegaConf.select(package.compose(*args), tp) == 2


def test_interpolations_parsed_once_resolve_as_omegaconf_does():
    """The conformance layer's verl side resolves each launch's whole config as verl's ``main_ppo`` does, with
    each interpolation text parsed once (``helpers.interpolations_parsed_once``): the same values come out, and
    OmegaConf's own parser is back in place after."""
    import omegaconf.base

    from helpers import deep_copy, interpolations_parsed_once
    from verl_mindspeed.launch import read_args_file

    plain_parse = omegaconf.base.parse
    for example in sorted((ROOT / "examples").glob("*.args")):
        cfg = compose_argv(read_args_file(str(example))).cfg
        plain = deep_copy(cfg)
        OmegaConf.resolve(plain)
        assert OmegaConf.to_yaml(plain) != OmegaConf.to_yaml(cfg)  # there were interpolations to resolve
        for _ in range(2):  # the second time from the kept parse trees
            again = deep_copy(cfg)
            with interpolations_parsed_once():
                OmegaConf.resolve(again)
            assert OmegaConf.to_yaml(again) == OmegaConf.to_yaml(plain), example.name
        assert omegaconf.base.parse is plain_parse


def test_check_files_composes_the_tree_once_and_judges_each_file_as_check_does(tmp_path, capsys, monkeypatch):
    """``check-files`` composes verl's tree once per config and set of top-level overrides
    (``verl_mindspeed.compose._memo.composed_once``): three launches of one config cost one composition, and each
    file's verdict is the one ``check`` gives it alone."""
    import json

    from verl_mindspeed.cli import main
    from verl_mindspeed.compose import _hydra_run, _memo

    monkeypatch.setenv("VERL_MINDSPEED_NO_COMPOSE_CACHE", "1")  # this process's memo alone: no base from disk
    calls = []
    plain = _hydra_run.compose

    def counting(*args):
        calls.append(args[1:2])
        return plain(*args)

    tp = "actor_rollout_ref.actor.megatron.tensor_model_parallel_size"
    files = []
    for n, size in enumerate((1, 2, 3)):
        path = tmp_path / f"launch{n}.args"
        path.write_text(f"--config-name=ppo_megatron_trainer\n{tp}={size}\nalgorithm.adv_estimator=grpo\n")
        files.append(str(path))
    _hydra_run.compose = counting
    try:
        with _memo.composed_once():
            cfgs = [compose_argv(["--config-name=ppo_megatron_trainer", f"{tp}={s}"]).cfg for s in (1, 2, 3)]
    finally:
        _hydra_run.compose = plain
    assert len(calls) == 1 and [OmegaConf.select(c, tp) for c in cfgs] == [1, 2, 3]
    assert main(["check-files", *files, "--json"]) in (0, 1)
    together = {f["path"]: sorted((i["rule"], i["key"]) for i in f["errors"]) for f in
                json.loads(capsys.readouterr().out)["files"]}
    for path in files:
        main(["check", "--args-file", path, "--json"])
        alone = json.loads(capsys.readouterr().out)
        assert together[path] == sorted((i["rule"], i["key"]) for i in alone["errors"]), path


def test_a_base_config_kept_on_disk_is_hydras_and_follows_its_files(tmp_path):
    """check keeps each base config on disk between processes (``ComposeMemo(disk=...)``): a second process reads
    it instead of composing, gets what Hydra composes, and a changed YAML file makes it compose again."""
    import shutil

    from verl_mindspeed.compose import _memo, _trees

    installed = _trees.installed_tree()
    if installed is None:
        pytest.skip("no verl installed")
    tree = tmp_path / "config"
    shutil.copytree(installed[0] / "verl" / "trainer" / "config", tree)
    calls = []

    def plain(*args):
        calls.append(args[2])
        return compose(*args)

    overrides = ["actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2", "algorithm.adv_estimator=grpo"]
    cache = tmp_path / "cache"
    first = _memo.ComposeMemo(plain, strict=True, disk=cache)(tree, "ppo_megatron_trainer", overrides)
    second = _memo.ComposeMemo(plain, strict=True, disk=cache)(tree, "ppo_megatron_trainer", overrides)
    assert len(calls) == 1 and len(list(cache.glob("*.pkl"))) == 1
    fresh = compose(tree, "ppo_megatron_trainer", overrides)
    assert OmegaConf.to_yaml(first) == OmegaConf.to_yaml(second) == OmegaConf.to_yaml(fresh)
    yaml_file = tree / "ppo_megatron_trainer.yaml"
    yaml_file.write_text(yaml_file.read_text() + "\n# changed\n")
    _memo.ComposeMemo(plain, strict=True, disk=cache)(tree, "ppo_megatron_trainer", overrides)
    assert len(calls) == 2
