"""The differential matrix: the project's verdict against the oracle's, configuration by configuration.

Configurations come from Hypothesis (derandomized: the same seed gives the same list) over the space users
write: the catalogue's flags; every other argument MindSpeed registers (:data:`ARGS_RELEASE`); the megatron
fields verl's engine also sets, repeated in the dict (:data:`DICT_FIELDS`); parallel sizes, device counts
(``trainer.nnodes`` x ``trainer.n_gpus_per_node``), roles and the fixture models; and the three config paths
verl offers (Megatron-Bridge, the default; mbridge with ``vanilla_mbridge=True``; the converter with
``use_mbridge=False``, which verl 0.9.1's engine refuses); a majority (seven in ten) under a
``+mindspeed=<preset>``, judged as injected; a quarter given to one of verl's other Megatron entries
(:data:`ENTRIES`: the experimental fully-async and one-step-off-policy trainers, each with its own config tree),
the rest to ``verl.trainer.main_ppo``. One in :data:`TYPO_EVERY` also comes back with a typo (:func:`typos`: a
MindSpeed key, a key of verl's megatron section, or a choice value misspelt). Also the repo's ``examples/*.args``
and the corpus of real launch lines. Each is composed once, then judged for every MindSpeed release by:

- the project: ``verl_mindspeed.launch.resolve_launch`` (errors / warnings; notes do not count);
- the oracle: verl 0.9.1's own code for the inputs (``verl_side``), MindSpeed + megatron-core for the verdict.

Classes: ``agree``; ``stricter-documented`` (the project errors only through a rule in :data:`DELIBERATE`);
``project-stricter`` (project error, upstream passes); ``project-missed`` (upstream error, project passes);
``severity-mismatch`` (one warns where the other is silent); ``noted-uncovered`` (upstream error on a MindSpeed
switch outside the feature guide that no rule covers, which the project reports as a ``no-hand-rule`` note);
``oracle-environment`` (MindSpeed imported a module the oracle's venv lacks, e.g. pandas for CoC's training
helpers: no verdict on the configuration, counted apart).
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import sources
import verl_side

from helpers import BASIC, deep_copy  # the micro batch sizes every test launch carries (one definition)
from verl_mindspeed.rules import beyond

A = "actor_rollout_ref.actor.megatron"
#: Checks the project makes on purpose although MindSpeed and megatron-core accept the configuration, and the
#: warnings it gives that the oracle cannot see: the project's one list, with each reason
#: (``verl_mindspeed.rules.beyond``, which ``check --upstream`` also reads).
DELIBERATE = beyond.ERRORS
DOCUMENTED_WARNINGS = beyond.WARNINGS
#: Deliberate errors saying a role runs at other parallel sizes than its config is built for (another role's
#: process groups, or a dict's size copied over the engine's). The project judges that role's other rules at the
#: sizes the run really uses; the oracle builds each config at the sizes verl hands it, where those checks may not
#: fire: the other errors of such a launch are consequences of the documented one, not stricter rules.
SIZES_RULES = {"role-sizes-agree", "dict-sizes-agree"}
CLASSES = ("agree", "stricter-documented", "noted-uncovered", "oracle-environment", "project-stricter",
           "project-missed", "severity-mismatch")
#: Dict-carried megatron fields verl's engine also sets, which users repeat in the dict (values to draw from).
DICT_FIELDS = {
    "tensor_model_parallel_size": [1, 2, 4], "pipeline_model_parallel_size": [1, 2],
    "virtual_pipeline_model_parallel_size": [None, 2], "context_parallel_size": [1, 2],
    "expert_model_parallel_size": [1, 2, 4], "expert_tensor_parallel_size": [1, 2],
    "sequence_parallel": [True, False], "seq_length": [1024, 4095, 4096],
    "moe_token_dispatcher_type": ["alltoall", "allgather", "alltoall_seq", "flex"],
    "variable_seq_lengths": [True, False],
}
#: The release whose registered arguments the generator draws non-catalogue switches from.
ARGS_RELEASE = "26.1.0_core_r0.12.1"
#: Launch-line model names -> fixture model (the corpus and examples name models by path).
MODEL_HINTS = {"qwen3-8b": "Qwen3-8B", "30b": "Qwen3-30B-A3B", "moonlight": "Moonlight-16B-A3B-Instruct",
               "deepseek": "DeepSeek-V3", "0.6b": "Qwen3-0.6B", "0_6b": "Qwen3-0.6B", "06b": "Qwen3-0.6B",
               "2.5-7b": "Qwen2.5-7B-Instruct"}


@dataclass
class Config:
    name: str
    settings: dict[str, Any] = field(default_factory=dict)
    model: Optional[str] = None
    argv: Optional[list[str]] = None
    """A whole launch line (examples, corpus) instead of settings over the base."""
    preset: Optional[str] = None
    """``+mindspeed=<preset>`` on the base, under the settings: a launch through verl-mindspeed (injected)."""
    entry: Optional[str] = None
    """The verl entry module the launch is given to (``None``: ``verl.trainer.main_ppo``), see :data:`ENTRIES`."""


#: verl's other Megatron trainer entries -> the Megatron config their launches name (verl 0.9.1).
ENTRIES = {
    "verl.experimental.fully_async_policy.fully_async_main": "fully_async_ppo_megatron_trainer",
    "verl.experimental.one_step_off_policy.main_ppo": "one_step_off_ppo_megatron_trainer",
}


@dataclass
class Row:
    config: Config
    release: str
    project: str
    project_rules: list[str]
    oracle: str
    oracle_detail: dict
    klass: str
    with_upstream: Optional[str] = None
    """The project's verdict under ``check --upstream`` (hand rules plus the project's own upstream run)."""
    upstream_run: Optional[dict] = None
    """What the project's own upstream run said (its verdict, stage, exception), built from its simulation."""


# --------------------------------------------------------------------------- generation

def strategies():
    """A Hypothesis strategy of :class:`Config` over the catalogue's flags, sizes, roles and models."""
    from hypothesis import strategies as st

    from verl_mindspeed import catalog
    from verl_mindspeed.catalog import universe

    def flag_values(f):
        if f.type == "bool":
            return st.booleans()
        if f.type == "int":
            return st.sampled_from([1, 2, 3, 4, 8])
        if f.type == "str":
            return st.sampled_from(list(f.choices) or ["x"])
        if f.type == "layers":
            return st.sampled_from(["0", "0,3", "1,2", "0,47"])
        if f.type == "str_list":
            return st.lists(st.sampled_from(list(f.choices)), min_size=1, max_size=2, unique=True)
        return st.none()

    otc = [f for f in catalog.flags("otc")]
    otc_items = st.sampled_from(otc).flatmap(lambda f: st.tuples(st.just(f.name), flag_values(f)))
    # every argument MindSpeed registers outside the catalogue: its switches on, its choices, small integers
    extra = []
    for name, spec in sorted(universe.mindspeed_args(ARGS_RELEASE).items()):
        if catalog.flag(name, "otc") is not None or name in DICT_FIELDS:
            continue
        if spec.get("action") == "store_true":
            extra.append((name, st.just(True)))
        elif isinstance(spec.get("choices"), list) and spec["choices"]:
            extra.append((name, st.sampled_from(spec["choices"])))
        elif spec.get("type") == "int":
            extra.append((name, st.sampled_from([1, 2, 4])))
    extra_items = st.sampled_from(extra).flatmap(lambda e: st.tuples(st.just(e[0]), e[1]))
    dict_items = st.sampled_from(sorted(DICT_FIELDS)).flatmap(
        lambda k: st.tuples(st.just(k), st.sampled_from(DICT_FIELDS[k])))
    sizes = st.fixed_dictionaries({
        "tensor_model_parallel_size": st.sampled_from([1, 1, 2, 4]),
        "pipeline_model_parallel_size": st.sampled_from([1, 1, 2]),
        "virtual_pipeline_model_parallel_size": st.sampled_from([None, None, None, 1, 2]),
        "context_parallel_size": st.sampled_from([1, 1, 2, 4]),
        "expert_model_parallel_size": st.sampled_from([1, 1, 2, 4]),
        "expert_tensor_parallel_size": st.sampled_from([None, None, 1, 2]),
    })
    models = st.sampled_from(sorted(verl_side.fixture_models()))
    from verl_mindspeed import presets as preset_group

    preset_names = st.sampled_from([None, None, None, *preset_group.names()])
    entries = st.sampled_from([None] * (3 * len(ENTRIES)) + sorted(ENTRIES))

    @st.composite
    def config(draw):
        chosen = draw(sizes)
        settings = {f"{A}.{k}": v for k, v in chosen.items() if v is not None}
        for name, value in draw(st.lists(otc_items, max_size=5, unique_by=lambda t: t[0])):
            settings[f"{A}.override_transformer_config.{name}"] = value
        if draw(st.integers(0, 3)) == 0:  # a MindSpeed argument the catalogue does not know
            name, value = draw(extra_items)
            settings[f"{A}.override_transformer_config.{name}"] = value
        if draw(st.integers(0, 3)) == 0:  # a megatron field the engine also sets, repeated in the dict
            name, value = draw(dict_items)
            if value is not None:
                settings[f"{A}.override_transformer_config.{name}"] = value
        path = draw(st.sampled_from(["megatron-bridge", "megatron-bridge", "mbridge", "converter"]))
        if path == "mbridge":
            settings[f"{A}.vanilla_mbridge"] = True
        elif path == "converter":
            settings[f"{A}.use_mbridge"] = False
        if draw(st.integers(0, 9)) == 0:
            settings["actor_rollout_ref.actor.use_kl_loss"] = True
        if draw(st.integers(0, 19)) == 0:
            settings["algorithm.adv_estimator"] = "gae"
        devices = draw(st.sampled_from([None] * 4 + [(1, 2), (1, 4), (1, 16), (2, 8), (2, 16)]))
        if devices is not None:  # the device count: verl's default is one node of 8
            settings["trainer.nnodes"], settings["trainer.n_gpus_per_node"] = devices
        return Config("", settings, draw(models), preset=draw(preset_names), entry=draw(entries))

    return config()


def generate(n: int, seed: int = 0) -> list[Config]:
    """``n`` distinct configurations, the same ones for the same ``n`` and ``seed``."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed

    out: list[Config] = []
    seen: set[str] = set()

    @hseed(seed)
    @settings(max_examples=n * 3, database=None, derandomize=False, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategies())
    def collect(cfg):
        key = json.dumps([cfg.settings, cfg.model, cfg.preset, cfg.entry], sort_keys=True, default=str)
        if key not in seen and len(out) < n:
            seen.add(key)
            cfg.name = f"gen-{len(out):04d}"
            out.append(cfg)

    collect()
    return out


#: One generated configuration in this many also comes back with a typo, as users write them (see :func:`typos`).
TYPO_EVERY = 10


def typos(configs: list[Config]) -> list[Config]:
    """Typo variants of every :data:`TYPO_EVERY`-th configuration, in turn: a MindSpeed key of the dict misspelt
    (MindSpeed keeps it and never reads it), a key of verl's megatron section misspelt (verl's dataclass refuses
    it), a choice value misspelt. The letter dropped is the middle one; a variant whose typo happens to be a real
    key or value is left out. Derived from ``configs``, so the generated ones keep their verdicts."""
    from verl_mindspeed.catalog import universe

    known = universe.known_otc_keys()
    otc = f"{A}.override_transformer_config."
    out = []
    for n, cfg in enumerate(configs[TYPO_EVERY // 2::TYPO_EVERY]):
        kind = ("otc-key", "megatron-key", "value")[n % 3]
        if kind == "otc-key":
            keys = sorted(k for k in cfg.settings if k.startswith(otc))
        elif kind == "megatron-key":
            keys = sorted(k for k in cfg.settings if k.startswith(A + ".") and "." not in k[len(A) + 1:])
        else:
            keys = sorted(k for k, v in cfg.settings.items() if k.startswith(otc) and isinstance(v, str)
                          and len(v) > 3)
        if not keys:
            continue
        key = keys[n % len(keys)]
        settings = dict(cfg.settings)
        if kind == "value":
            settings[key] = _misspell(settings[key])
        else:
            head, _, leaf = key.rpartition(".")
            typo = _misspell(leaf)
            if typo in known:
                continue
            settings[f"{head}.{typo}"] = settings.pop(key)
        out.append(Config(f"{cfg.name}-typo-{kind}", settings, cfg.model, preset=cfg.preset, entry=cfg.entry))
    return out


def _misspell(text: str) -> str:
    """``text`` with its middle letter dropped: the typo the generator writes."""
    return text[:len(text) // 2] + text[len(text) // 2 + 1:]


def refused_typos(configs: list[Config]) -> list[Config]:
    """Whole launch lines in which an argument without ``+`` misspells a key verl's config has (the micro batch
    sizes, the estimator): Hydra refuses such an argument as written, so its fix replaces it. Every
    :data:`TYPO_EVERY`-th configuration, offset from :func:`typos`, as a plain launch (its preset left out). For
    the fix-point test: the differential's oracle starts after composition, where such a launch never gets."""
    out = []
    for n, cfg in enumerate(configs[TYPO_EVERY // 2 + 1::TYPO_EVERY]):
        argv = plain_argv(cfg)  # a plain launch, as the test judges
        plain = [i for i, a in enumerate(argv) if not a.startswith(("-", "+", "~")) and "." in a.partition("=")[0]]
        i = plain[n % len(plain)]
        key, _, value = argv[i].partition("=")
        head, _, leaf = key.rpartition(".")
        argv[i] = f"{head}.{_misspell(leaf)}={value}"
        out.append(Config(f"{cfg.name}-typo-refused", {}, cfg.model, argv=argv, entry=cfg.entry))
    return out


def corpus(n: int, refused: bool = False) -> list[Config]:
    """What the differential, the fix-point test and the report judge: ``n`` generated configurations, their
    :func:`typos`, the repo's examples and the real launch lines; with ``refused`` (the fix-point test) also the
    :func:`refused_typos`."""
    generated = generate(n)
    return generated + typos(generated) + launch_files() + (refused_typos(generated) if refused else [])


def launch_files() -> list[Config]:
    """The repo's examples and the corpus's real launch lines, each with the fixture model its path names."""
    from verl_mindspeed.launch import read_args_file

    files = sorted((sources.ROOT / "examples").glob("*.args"))
    corpus = sources.corpus_dir()
    if corpus is not None:
        files += sorted(corpus.glob("*.args"))
    out = []
    for path in files:
        argv = read_args_file(str(path))
        text = " ".join(argv).lower()
        model = next((m for hint, m in MODEL_HINTS.items() if hint in text), None)
        out.append(Config(path.name, {}, model, argv))
    return out


def public_launches() -> list[Config]:
    """The public launches others wrote (``tests/fixtures/public``) and the script fixtures, as a user reads them:
    each script's module is its entry and a variable the environment would give is a placeholder (a path)."""
    from verl_mindspeed.launch import read_launch_file

    files = sorted((sources.ROOT / "tests" / "fixtures" / "public").glob("*.sh"))
    files += sorted((sources.ROOT / "tests" / "fixtures" / "scripts").glob("*"))
    out = []
    for path in files:
        environ = {"HOME": "/home/user"}
        for issue in read_launch_file(str(path), environ).issues:
            if issue.rule == "unset-variable":
                environ[issue.message.params["name"]] = "/data/placeholder"
        launch = read_launch_file(str(path), environ)
        text = " ".join(launch.argv).lower()
        model = next((m for hint, m in MODEL_HINTS.items() if hint in text), None)
        out.append(Config(path.name, {}, model, launch.argv, entry=launch.entry))
    return out


# --------------------------------------------------------------------------- judging

class Judge:
    """Judges configurations as plain verl launches, or (``injected``) as launches through verl-mindspeed: the
    oracle then runs verl's code on the config after the project's injection."""

    def __init__(self, pool, releases=None, injected: bool = False, upstream: bool = False,
                 upstream_limit: Optional[int] = None, progress=None):
        from verl_mindspeed.compose import compose_argv

        self.progress = progress or (lambda text: None)
        """Called with a line of text as the long phases advance (``tools/conformance_report.py`` prints it)."""

        self.injected = injected
        self.upstream = upstream
        self.upstream_limit = upstream_limit
        """Judge only the first this many generated configurations (and every launch file) as --upstream would."""
        self.pool = pool
        self.releases = list(releases or sources.RELEASES)
        self.base_argv = ["--config-name=ppo_megatron_trainer", "algorithm.adv_estimator=grpo", *BASIC]
        self.base = compose_argv(self.base_argv)
        self.bases = {(None, None): self.base}
        self.compose_argv = compose_argv
        self.timings: dict[str, float] = {"project": 0.0, "verl_side": 0.0, "oracle": 0.0}

    def _composed(self, cfg: Config):
        from omegaconf import OmegaConf

        if cfg.argv is not None:
            comp = self.compose_argv(cfg.argv, entry=cfg.entry)
            return comp.cfg, cfg.argv, comp.tree, comp.issues
        base_argv = base_of(cfg)
        if (cfg.preset, cfg.entry) not in self.bases:
            self.bases[(cfg.preset, cfg.entry)] = self.compose_argv(base_argv, entry=cfg.entry)
        base = self.bases[(cfg.preset, cfg.entry)]
        composed = deep_copy(base.cfg)
        for key, value in cfg.settings.items():
            OmegaConf.update(composed, key, value, force_add=True)
        return composed, [*base_argv, *settings_args(cfg.settings)], base.tree, []

    @staticmethod
    def _inject(composed, argv, tree, model_dir):
        """The config after the project's injection (forced when it has errors, to see that upstream fails too)."""
        from verl_mindspeed.launch import resolve_launch
        from verl_mindspeed.resolver import inject

        given = deep_copy(composed)
        inject(given, resolve_launch(given, argv, tree, "conformance", model_config=model_dir), force=True)
        return given

    def judge(self, configs: list[Config]) -> list[Row]:
        from verl_mindspeed.launch import resolve_launch

        prepared = []
        started = time.monotonic()
        for n, cfg in enumerate(configs, 1):
            if n % 100 == 0 or n == len(configs):
                self.progress(f"composed and judged by the project: {n}/{len(configs)} "
                              f"({time.monotonic() - started:.0f} s)")
            composed, argv, tree, issues = self._composed(cfg)
            model_dir = str(verl_side.fixture_models()[cfg.model]) if cfg.model else None
            injected = self.injected or cfg.preset is not None  # a preset installs the injecting callback
            given = self._inject(composed, argv, tree, model_dir) if injected else composed
            t = time.perf_counter()
            up = verl_side.upstream_of(given, model_dir, tree.otc_defaults, validates=_validates(tree))
            self.timings["verl_side"] += time.perf_counter() - t
            t = time.perf_counter()
            project = {}
            for release in self.releases:
                # the oracle runs verl's own code on the launch as written (plain) or as injected
                res = resolve_launch(composed, argv, tree, "conformance", issues=issues, release=release,
                                     model_config=model_dir, injected=injected)
                project[release] = res
            self.timings["project"] += time.perf_counter() - t
            prepared.append((cfg, up, project))
        t = time.perf_counter()
        batches = {r: [up.case() for _, up, _ in prepared if up.verl_error is None] for r in self.releases}
        self.progress(f"oracle: {sum(map(len, batches.values()))} cases on {len(batches)} release(s), "
                      "verdicts cached by their inputs")
        verdicts = self.pool.run_many(batches)
        self.timings["oracle"] += time.perf_counter() - t
        rows = []
        cursor = {r: iter(v) for r, v in verdicts.items()}
        for cfg, up, project in prepared:
            for release in self.releases:
                if up.verl_error is not None:
                    oracle = {"verdict": "error", **up.verl_error}
                else:
                    oracle = next(cursor[release])
                rows.append(classify(cfg, release, project[release], oracle))
        if self.upstream:
            chosen = [i for i, (cfg, _, _) in enumerate(prepared)
                      if cfg.argv is not None or self.upstream_limit is None or i < self.upstream_limit]
            width = len(self.releases)
            self._with_upstream([rows[i * width + j] for i in chosen for j in range(width)],
                                [prepared[i][2] for i in chosen])
        return rows

    def _with_upstream(self, rows: list[Row], projects: list[dict]) -> None:
        """Each row's verdict under ``check --upstream``: the project's case for each launch runs on the same
        workers (batched, both cores), then ``verl_mindspeed.upstream.judge`` (the CLI's code) reads it back."""
        import pool as oracle_pool

        from verl_mindspeed import upstream

        t = time.perf_counter()
        quiet = lambda text: None  # noqa: E731
        models = [str(d) for d in verl_side.fixture_models().values()]
        for line in {oracle_pool.release_sources(r).line for r in self.releases}:
            upstream.warm(line, models, quiet)  # every fixture model through the line's bridge, one process
        batches = {r: [upstream.launch_case(p[r], oracle_pool.release_sources(r).line, quiet)[0] for p in projects
                       if p[r].simulation is not None and p[r].simulation.order] for r in self.releases}
        self.pool.run_many(batches)
        for row, res in zip(rows, (p[r] for p in projects for r in self.releases)):
            judged = copy.copy(res)
            upstream.judge(judged, sources=oracle_pool.release_sources(row.release), pool=self.pool.pool,
                           python=str(oracle_pool.python(row.release)), progress=lambda text: None)
            row.with_upstream = "error" if judged.errors else ("warning" if judged.warnings else "ok")
            row.upstream_run = {"verdict": judged.upstream.get("verdict"), **judged.upstream.get("detail", {})}
        self.timings["upstream"] = time.perf_counter() - t


def classify(cfg: Config, release: str, res, oracle: dict) -> Row:
    errors = sorted({i.rule for i in res.errors})
    project = "error" if errors else ("warning" if res.warnings else "ok")
    upstream = oracle["verdict"] if oracle["verdict"] in ("error", "warning", "ok") else "error"
    if upstream == "error" and oracle.get("exc_type") == "ModuleNotFoundError" and project != "error":
        klass = "oracle-environment"  # a module MindSpeed imports is not installed in the oracle: no verdict
    elif project == upstream:
        klass = "agree"
    elif project == "error" and upstream != "error":
        documented = all(r in DELIBERATE for r in errors) or bool(SIZES_RULES & set(errors))
        klass = "stricter-documented" if documented else "project-stricter"
    elif upstream == "error" and project != "error" and any(i.rule == "no-hand-rule" for i in res.notes):
        klass = "noted-uncovered"
    elif upstream == "error":
        klass = "project-missed"
    elif project == "warning" and upstream == "ok" and \
            all(i.rule in DOCUMENTED_WARNINGS or _warned_upstream(i.rule, oracle) for i in res.warnings):
        # a warning megatron's or MindSpeed's own code also gives (recorded by the oracle, from the file the rule
        # cites) agrees; the others are the documented ones
        agreed = all(_warned_upstream(i.rule, oracle) for i in res.warnings)
        klass = "agree" if agreed else "stricter-documented"
    else:
        klass = "severity-mismatch"
    rules = errors or sorted({i.rule for i in res.warnings})
    return Row(cfg, release, project, rules, upstream, oracle, klass)


def _warned_upstream(rule_id: str, oracle: dict) -> bool:
    """Whether the oracle recorded a warning from upstream code the rule cites (``upstream_warnings``)."""
    from verl_mindspeed.rules import RULES

    cites = next((r.cites for r in RULES if r.id == rule_id), "")
    return any(w.split(":", 1)[0] in cites for w in oracle.get("upstream_warnings", ()))


def table(rows: list[Row]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for row in rows:
        counts = out.setdefault(row.release, {"cases": 0, **{k: 0 for k in CLASSES}})
        counts["cases"] += 1
        counts[row.klass] += 1
    return out


def render(counts: dict[str, dict[str, int]]) -> str:
    head = ["release", "cases", *CLASSES]
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for release, c in counts.items():
        lines.append(" | ".join([release, *(str(c[k]) for k in head[1:])]))
    return "\n".join(lines)


#: The micro batch sizes every real launch sets (verl's driver requires them without dynamic batching).
def base_of(cfg: Config, preset: bool = True) -> list[str]:
    """The launch line a generated configuration's settings go on: its entry's Megatron config, the micro batch
    sizes a real launch sets, its preset (unless ``preset`` is false)."""
    name = ENTRIES.get(cfg.entry or "", "ppo_megatron_trainer")
    return [f"--config-name={name}", "algorithm.adv_estimator=grpo", *BASIC,
            *([f"+mindspeed={cfg.preset}"] if cfg.preset and preset else [])]


def settings_args(settings: dict[str, Any]) -> list[str]:
    """Generated settings as the ``++key=value`` arguments of a launch line (lists and strings as JSON)."""
    return [f"++{k}={json.dumps(v) if isinstance(v, (list, str)) else v}" for k, v in settings.items()]


def plain_argv(cfg: Config) -> list[str]:
    """The whole launch line of ``cfg`` as a plain verl launch: its own line, or its settings over
    :func:`base_of` with the preset left out."""
    return list(cfg.argv) if cfg.argv is not None else [*base_of(cfg, preset=False), *settings_args(cfg.settings)]


def _validates(tree) -> bool:
    """Whether the launch's entry runs verl's validate_config (read from the entry module, as check does)."""
    return tree is None or tree.entry is None or tree.entry.validates


def repro(row: Row) -> dict:
    cfg = row.config
    o = row.oracle_detail
    argv = cfg.argv or [*base_of(cfg), *(f"++{k}={v}" for k, v in cfg.settings.items())]
    return {
        "class": row.klass, "release": row.release, "config": cfg.name, "model": cfg.model, "argv": argv,
        "entry": cfg.entry,
        "oracle": {k: o.get(k) for k in ("verdict", "stage", "role", "exc_type", "message", "where", "unapplied")
                   if o.get(k) is not None},
        "project": {"verdict": row.project, "rules": row.project_rules, "with_upstream": row.with_upstream,
                    "upstream_run": row.upstream_run},
    }


def signature(row: Row) -> tuple:
    """What makes two disagreements the same finding: class, upstream failure point, project rules."""
    o = row.oracle_detail
    return (row.klass, o.get("stage"), o.get("exc_type"), (o.get("where") or "").split(":")[0],
            tuple(sorted(o.get("unapplied") or ())), tuple(row.project_rules))


def findings(rows: list[Row]) -> list[dict]:
    """One minimal repro per distinct disagreement (the configuration with the fewest settings)."""
    best: dict[tuple, Row] = {}
    counts: dict[tuple, int] = {}
    for row in rows:
        if row.klass in ("agree", "stricter-documented", "noted-uncovered", "oracle-environment"):
            continue
        sig = signature(row)
        counts[sig] = counts.get(sig, 0) + 1
        size = len(row.config.settings) if row.config.argv is None else 1000
        if sig not in best or size < (len(best[sig].config.settings) if best[sig].config.argv is None else 1000):
            best[sig] = row
    out = [{**repro(r), "occurrences": counts[s]} for s, r in best.items()]
    return sorted(out, key=lambda d: (d["class"], -d["occurrences"]))


def write(rows: list[Row], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"table": table(rows), "findings": findings(rows)}, indent=1, default=str))
