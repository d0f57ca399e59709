#!/usr/bin/env python3
"""Build ``src/verl_mindspeed/catalog/data/verl_choices.json``: the values verl's named choices accept, per release.

    python tools/build_verl_choices.py            # fetch each wheel (pip download, cached), rebuild, write
    python tools/build_verl_choices.py --check    # exit 1 when the shipped file differs from a rebuild

Read from each release's wheel with ``ast`` (verl is never imported), where verl looks the value up and fails on
any other:

* ``adv_estimator``: the string values of ``AdvantageEstimator`` and the names given to ``register_adv_est`` as
  text (``verl/trainer/ppo/core_algos.py``; ``get_adv_estimator_fn`` raises on any other);
* ``policy_loss``: the names given to ``register_policy_loss``, and the modes the actors compare ``loss_mode``
  with (``vanilla`` before it was registered);
* ``loss_agg_mode``: the modes ``agg_loss`` compares ``loss_agg_mode`` with (it raises on any other);
* ``kl_penalty``: the names ``kl_penalty`` / ``kl_penalty_forward`` compare ``kl_penalty`` with, except a branch
  that only raises (``full``), and whether a trailing ``+`` is read (``k3+``);
* ``resume_mode``: the modes the PPO trainer compares ``trainer.resume_mode`` with (another value resumes from the
  latest checkpoint found, as ``auto`` does, but fails where there is none);
* ``truncation``: the ways ``postprocess_data`` accepts (``verl/utils/torch_functional.py``; it asserts them);
* ``rollout``: the (name, mode) pairs of ``_ROLLOUT_REGISTRY`` (``verl/workers/rollout/base.py``;
  ``get_rollout_class`` asserts the pair). A release without the registry (before 0.6.0) has no entry.

Nothing in the output is hand-written.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src/verl_mindspeed/catalog/data/verl_choices.json"
RELEASES = ("0.4.1", "0.5.0", "0.6.0", "0.6.1", "0.7.0", "0.7.1", "0.8.0", "0.9.0", "0.9.1")
CORE = "verl/trainer/ppo/core_algos.py"
TRAINER = "verl/trainer/ppo/ray_trainer.py"
TORCH = "verl/utils/torch_functional.py"
ROLLOUT = "verl/workers/rollout/base.py"


def wheel(version: str) -> Path:
    cache = Path(os.environ.get("VERL_MINDSPEED_CACHE", Path.home() / ".cache" / "verl-mindspeed")) / "verl-wheels"
    found = sorted(cache.glob(f"verl-{version}-*.whl"))
    if not found:
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"verl=={version}", "-d",
                        str(cache)], check=True)
        found = sorted(cache.glob(f"verl-{version}-*.whl"))
    return found[0]


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for element in node.elts for s in _strings(element)]
    return []


def _names(node: ast.AST) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def compared(tree: ast.AST, name: str, *, skip_raising: bool = False) -> set[str]:
    """Strings ``name`` (a variable or an attribute) is compared with (``==``, ``in``); with ``skip_raising``, not
    those whose branch only raises."""
    out: set[str] = set()
    raising: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and _names(node.left) == name and \
                all(isinstance(op, (ast.Eq, ast.In)) for op in node.ops):
            out |= {s for c in node.comparators for s in _strings(c)}
        if skip_raising and isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and \
                _names(node.test.left) == name and all(isinstance(s, (ast.Raise, ast.Expr, ast.Pass))
                                                       for s in node.body) and isinstance(node.body[-1], ast.Raise):
            raising |= {s for c in node.test.comparators for s in _strings(c)}
    return out - raising


def function(tree: ast.AST, name: str) -> list[ast.AST]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name]


def registered(tree: ast.AST, decorator: str) -> set[str]:
    return {s for n in ast.walk(tree) if isinstance(n, ast.Call) and _names(n.func) == decorator
            for a in n.args[:1] for s in _strings(a)}


def enum_values(tree: ast.AST, cls: str) -> set[str]:
    return {s for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls
            for a in n.body if isinstance(a, ast.Assign) for s in _strings(a.value)}


def release_data(version: str) -> dict:
    with zipfile.ZipFile(wheel(version)) as archive:
        names = set(archive.namelist())
        read = lambda path: ast.parse(archive.read(path).decode("utf-8"))  # noqa: E731
        core = read(CORE)
        actors = [read(n) for n in sorted(names) if n.startswith("verl/workers/actor/") and n.endswith(".py")]
        rollout = read(ROLLOUT) if ROLLOUT in names else None
        trainer, torch_functional = read(TRAINER), read(TORCH)
    kl = set().union(*(compared(f, "kl_penalty", skip_raising=True)
                       for name in ("kl_penalty", "kl_penalty_forward") for f in function(core, name)))
    plus = any(isinstance(n, ast.Call) and _names(n.func) == "endswith" and _strings(n.args[0]) == ["+"]
               for f in function(core, "kl_penalty") for n in ast.walk(f))
    data = {
        "adv_estimator": sorted(enum_values(core, "AdvantageEstimator") | registered(core, "register_adv_est")),
        "policy_loss": sorted(registered(core, "register_policy_loss")
                              | set().union(*(compared(a, "loss_mode") for a in actors))),
        "loss_agg_mode": sorted(set().union(*(compared(f, "loss_agg_mode", skip_raising=True)
                                              for f in function(core, "agg_loss")))),
        "kl_penalty": sorted(kl), "kl_penalty_plus": plus,
        "resume_mode": sorted(compared(trainer, "resume_mode")),
        "truncation": sorted(set().union(*(compared(f, "truncation")
                                           for f in function(torch_functional, "postprocess_data")))),
    }
    if rollout is not None:
        registry = [n for n in ast.walk(rollout) if isinstance(n, ast.Assign) and
                    any(_names(t) == "_ROLLOUT_REGISTRY" for t in n.targets) and isinstance(n.value, ast.Dict)]
        if registry:
            data["rollout"] = sorted(_strings(k) for r in registry for k in r.value.keys if len(_strings(k)) == 2)
    return data


def build() -> dict:
    out = {"generated_by": "tools/build_verl_choices.py", "releases": list(RELEASES), "choices": {}}
    for version in RELEASES:
        print(f"verl {version}", file=sys.stderr)
        out["choices"][version] = release_data(version)
    return out


def render(data: dict) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main() -> int:
    from _pages import main as pages_main

    return pages_main(__doc__, {"data": OUT}, lambda _lang: render(build()), "tools/build_verl_choices.py")


if __name__ == "__main__":
    sys.exit(main())
