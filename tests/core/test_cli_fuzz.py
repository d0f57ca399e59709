"""Never a traceback: a seeded mutation fuzzer over the project's own launch lines (examples/*.args).

Each case takes an example, applies 1 to 5 mutations (keys, values, ``+``/``++``/``~`` prefixes, Hydra
and check flags, ``--args-file`` contents, model configs, locale and environment variables) and runs
``verl_mindspeed.cli.main(["check", ...])`` in-process. Every case must end with exit status 0, 1 or 2,
print no traceback and no "internal error", finish within a minute, and with ``--json`` (or
``--format json|sarif``) print exactly one JSON object on stdout.

``VERL_MINDSPEED_FUZZ_SEED`` and ``VERL_MINDSPEED_FUZZ_CASES`` change the run (default: a fixed
seed, 150 cases of 1 to 5 mutations each, about two minutes on an idle two-core machine).
"""

from __future__ import annotations

import json
import math
import os
import random
import signal
import time
from collections import Counter
from pathlib import Path

from helpers import FIXTURES, ROOT
from verl_mindspeed import catalog
from verl_mindspeed.catalog import universe
from verl_mindspeed.cli import _output, main
from verl_mindspeed.launch import read_args_file

SEED = int(os.environ.get("VERL_MINDSPEED_FUZZ_SEED", "1729"))
CASES = int(os.environ.get("VERL_MINDSPEED_FUZZ_CASES", "150"))
EXAMPLES = sorted((ROOT / "examples").glob("*.args"))
MODELS = sorted(p for p in (FIXTURES / "models").iterdir() if (p / "config.json").is_file())
UNSET = "VERL_MINDSPEED_FUZZ_UNSET"
CASE_SECONDS = 60  # a case that runs longer hangs: the checks must not walk a huge model config

VALUES = ["", "null", "None", "2", "0", "-1", "'2'", "[2]", "[1", "]", "${nope}", f"${{oc.env:{UNSET}}}",
          "${oc.env:VERL_MINDSPEED_FUZZ_SET}", "True", "yes", "1e400", "nan", "inf", "'\"0,7\"'", "{a:1}", "a,b",
          "x" * 3000, "张量", "\\", "'", "=", "==", "${actor_rollout_ref.actor.megatron.tensor_model_parallel_size}",
          "[]", "{}", "0,7", "[0,7]", "1.5", "-0", "full", "selective", "alltoall", "RMSNorm", "megatron_cp_algo",
          "${oc.select:nope,3}", "${}", "$", "%", "\t", "a b"]
FLAGS = [["--cfg", "job"], ["--cfg"], ["-m"], ["--resolve"], ["--info"], ["--info", "plugins"], ["--confg-path=x"],
         ["--config-name=nope"], ["--config-name"], ["--config-path=" + "a" * 3000], ["-cp", "/"],
         ["-cn", "ppo_trainer"],
         ["--"], ["--json"], ["--json"], ["--strict"], ["--lang", "zh"], ["--lang", "xx"], ["--lang"],
         ["--fail-on", "warning"], ["--fail-on=nope"], ["--format", "sarif"], ["--format", "github"],
         ["--format", "json"], ["--format=xml"], ["--mindspeed-release", "bad"], ["--mindspeed-release", "2.2.0"],
         ["--verl-config-dir", "/nonexistent"], ["--verl-config-dir", "/"], ["--model-config", "/nonexistent"],
         ["--args-file", "/nonexistent.args"], ["-x"], ["--hydra-help"], ["--version"], ["-h"], ["--reslove"],
         ["--package", "x"], ["-c", "all"], ["--experimental-rerun"], ["--shell-completion"], ["--launcher"],
         ["--device-memory-gib", "0"], ["--device-memory-gib", "1e400"], ["--device-memory-gib", "24"],
         ["--entry", "no.such.module"], ["--entry", "verl.trainer.main_ppo"], ["--mindspeed-release", "2.3"]]
KEYS = ([f.path(p) for f in catalog.flags("otc") + catalog.flags("megatron") for p in catalog.ROLE_PREFIXES.values()]
        + ["mindspeed", "hydra.run.dir", "actor_rollout_ref.model.path", "trainer.n_gpus_per_node", "trainer.nnodes",
           "algorithm.adv_estimator", "model_engine", "actor_rollout_ref.actor.strategy", "critic.strategy",
           "actor_rollout_ref.ref.megatron.override_transformer_config", "a", "", "."])
PRESET_VALUES = ["dense", "moe", "mla_moe", "nope", "[moe,memory_saving]", "[]", "validate", "mc2", "long_context"]
MODEL_VALUES = ["28", None, 28.0, [1024], math.nan, -1, 0, 10 ** 30, True, {}, "x", math.inf]
ENVS = [("LANG", "zh_CN.UTF-8"), ("LC_ALL", "C"), ("LC_ALL", "zh_TW"), ("VERL_MINDSPEED_FUZZ_SET", "3"),
        ("LANG", ""), ("LC_MESSAGES", "zh")]


class Case:
    def __init__(self, rng: random.Random, tmp: Path, index: int):
        self.rng, self.tmp, self.index = rng, tmp, index
        self.argv = read_args_file(str(rng.choice(EXAMPLES)))
        self.env: dict[str, str] = {}
        self.mutations: list[str] = []

    def _override(self) -> int | None:
        spots = [i for i, a in enumerate(self.argv) if not a.startswith("-") and "=" in a]
        return self.rng.choice(spots) if spots else None

    def typo_key(self) -> None:
        i = self._override()
        if i is None:
            return
        arg = self.argv[i]
        key, _, value = arg.partition("=")
        j = self.rng.randrange(len(key) + 1)
        op = self.rng.choice(["insert", "delete", "swap", "replace"])
        c = self.rng.choice("abcdefghijklmnopqrstuvwxyz_.")
        key = {"insert": key[:j] + c + key[j:], "delete": key[:j] + key[j + 1:],
               "swap": key[:j] + key[j + 1:j + 2] + key[j:j + 1] + key[j + 2:],
               "replace": key[:j] + c + key[j + 1:]}[op]
        self.argv[i] = f"{key}={value}"

    def set_value(self) -> None:
        i = self._override()
        if i is not None:
            self.argv[i] = self.argv[i].split("=", 1)[0] + "=" + self.rng.choice(VALUES)

    def set_prefix(self) -> None:
        i = self._override()
        if i is not None:
            self.argv[i] = self.rng.choice(["", "+", "++", "~"]) + self.argv[i].lstrip("+~")

    def add_override(self) -> None:
        key = self.rng.choice(KEYS)
        value = self.rng.choice(PRESET_VALUES if key == "mindspeed" else VALUES)
        prefix = self.rng.choice(["", "+", "++", "~"])
        self.argv.insert(self.rng.randrange(len(self.argv) + 1), f"{prefix}{key}={value}" if prefix != "~" or
                         self.rng.random() < 0.5 else f"~{key}")

    def reshuffle(self) -> None:
        if len(self.argv) < 2:
            return
        i, j = self.rng.randrange(len(self.argv)), self.rng.randrange(len(self.argv))
        op = self.rng.choice(["delete", "duplicate", "swap"])
        if op == "delete":
            del self.argv[i]
        elif op == "duplicate":
            self.argv.insert(j, self.argv[i])
        else:
            self.argv[i], self.argv[j] = self.argv[j], self.argv[i]

    def add_flag(self) -> None:
        flag = list(self.rng.choice(FLAGS))
        if flag == ["--mindspeed-release", "2.2.0"]:
            flag[1] = self.rng.choice(universe.releases())
        at = self.rng.choice([0, len(self.argv), self.rng.randrange(len(self.argv) + 1)])
        self.argv[at:at] = flag

    def model_config(self) -> None:
        cfg = json.loads((self.rng.choice(MODELS) / "config.json").read_text())
        for _ in range(self.rng.randint(0, 2)):
            field = self.rng.choice(sorted(cfg) + ["architectures"])
            if self.rng.random() < 0.2:
                cfg.pop(field, None)
            else:
                cfg[field] = self.rng.choice(MODEL_VALUES + [["X"], "Qwen3ForCausalLM", [1]])
        folder = self.tmp / f"model{self.index}"
        folder.mkdir(exist_ok=True)
        (folder / "config.json").write_text(json.dumps(cfg) if self.rng.random() < 0.9 else "{broken")
        if self.rng.random() < 0.5:
            self.argv[0:0] = ["--model-config", str(folder if self.rng.random() < 0.5 else folder / "config.json")]
        else:
            self.argv.append(f"actor_rollout_ref.model.path={folder}")

    def args_file(self) -> None:
        lines = ["# a launch line", ""] + list(self.argv)
        path = self.tmp / f"case{self.index}.args"
        kind = self.rng.choice(["plain", "crlf", "bytes", "spaces"])
        text = "\n".join(lines) + "\n"
        if kind == "crlf":
            path.write_bytes(text.replace("\n", "\r\n").encode())
        elif kind == "bytes":
            path.write_bytes(text.encode() + b"\xff\xfe bad\n")
        else:
            path.write_text(text if kind == "plain" else "\n".join(f"  {ln}  " for ln in lines))
        self.argv = ["--args-file", str(path)]

    def shell_script(self) -> None:
        """The argv as a launch script: line continuations, a variable, quoting; sometimes no launch line."""
        self.env.setdefault("VERL_MINDSPEED_FUZZ_SET", "3")
        args = [a if self.rng.random() < 0.8 else f"'{a}'" for a in self.argv]
        if args and self.rng.random() < 0.3:
            args[-1] = args[-1].split("=", 1)[0] + "=$VERL_MINDSPEED_FUZZ_SET"
        head = self.rng.choice(["python3 -m verl.trainer.main_ppo", "python3 -m verl_mindspeed.main_ppo",
                                "echo no launch here", "python3 -m recipe.dapo.main_dapo"])
        path = self.tmp / f"case{self.index}.sh"
        path.write_text("#!/bin/bash\nset -x\nMODEL=/models/x\n" + " \\\n    ".join([head, *args]) + "\n")
        self.argv = ["--args-file", str(path)]

    def environment(self) -> None:
        name, value = self.rng.choice(ENVS)
        self.env[name] = value

    OPS = ("typo_key", "set_value", "set_prefix", "add_override", "reshuffle", "add_flag", "add_flag",
           "model_config", "args_file", "shell_script", "environment")

    def mutate(self) -> None:
        for _ in range(self.rng.randint(1, 5)):
            op = self.rng.choice(self.OPS)
            getattr(self, op)()
            self.mutations.append(op)
        if self.rng.random() < 0.4:
            self.argv.append("--json")


def _too_slow(signum, frame):
    raise TimeoutError(f"a case took more than {CASE_SECONDS} s")


def _problem(code: int | str, out: str, err: str, argv: list[str]) -> str:
    if code not in (0, 1, 2):
        return code if isinstance(code, str) else f"exit status {code}"
    if "Traceback" in out + err:
        return "traceback"
    if "internal error" in err:
        return "internal error: " + err.strip().splitlines()[-1][:300]
    fmt = _output.format_of(argv)
    if fmt in ("json", "sarif") and not {"-h", "--help", "--version"} & set(argv[: argv.index("--")
                                                                             if "--" in argv else len(argv)]):
        try:
            data = json.loads(out)
        except ValueError:
            return f"--format {fmt}: stdout is not one JSON object: {out[:200]!r}"
        if not isinstance(data, dict):
            return f"--format {fmt}: stdout is not a JSON object"
    return ""


def test_mutated_launch_lines_never_crash(base_cfg, capsys, monkeypatch, tmp_path):
    rng = random.Random(SEED)
    failures, codes, ops = [], Counter(), Counter()
    monkeypatch.delenv(UNSET, raising=False)
    for name in ("LANG", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(name, raising=False)
    start = time.perf_counter()
    for index in range(CASES):
        case = Case(rng, tmp_path, index)
        case.mutate()
        with monkeypatch.context() as mp:
            for name, value in case.env.items():
                mp.setenv(name, value)
            signal.signal(signal.SIGALRM, _too_slow)
            signal.alarm(CASE_SECONDS)
            try:
                code = main(["check", *case.argv])
            except BaseException as exc:  # noqa: BLE001 - the failure this test looks for
                code = f"raised {exc!r}"[:300]
            finally:
                signal.alarm(0)
        out, err = capsys.readouterr()
        codes[code] += 1
        ops.update(case.mutations)
        problem = _problem(code, out, err, case.argv)
        if problem:
            failures.append(f"case {index} ({', '.join(case.mutations)}; env {case.env}): {problem}\n"
                            f"    argv: {[a if len(a) < 200 else a[:60] + '...' for a in case.argv]}")
    elapsed = time.perf_counter() - start
    with capsys.disabled():
        print(f"\nfuzz: seed {SEED}, {CASES} cases, {sum(ops.values())} mutations {dict(ops)}, "
              f"exit statuses {dict(codes)}, {elapsed:.0f} s")
    assert not failures, f"{len(failures)} of {CASES} cases failed:\n" + "\n".join(failures[:15])
    assert set(codes) == {0, 1, 2}, codes  # the mutations reach every outcome
