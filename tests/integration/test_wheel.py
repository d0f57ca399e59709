"""The built wheel, installed into a fresh venv: every preset YAML and the plugin ship, and Hydra finds them.

The fresh venv sees the test venv's packages (verl, hydra, pydantic...) through a ``.pth`` line, which
does not run that venv's own ``.pth`` files: the editable install of verl-mindspeed stays invisible, so
everything verl-mindspeed below comes from the wheel.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from _preset_cases import ROOT, require

from helpers import BASIC


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
                    str(ROOT)], check=True, timeout=300)
    (built,) = out.glob("verl_mindspeed-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    env = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120)
    python = env / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "test_venv_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)],
                   check=True, timeout=300)
    return env


def test_the_wheel_holds_every_preset_and_the_plugin(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for path in (ROOT / "conf" / "mindspeed").glob("*.yaml"):
        assert f"verl_mindspeed/conf/mindspeed/{path.name}" in names
    assert "verl_mindspeed/conf/__init__.py" in names
    assert "hydra_plugins/verl_mindspeed/verl_mindspeed_searchpath.py" in names
    assert "hydra_plugins/__init__.py" not in names  # a namespace package shared with every Hydra plugin
    assert "verl_mindspeed/catalog/data/known_keys.json" in names
    assert "verl_mindspeed/i18n/locale/zh/LC_MESSAGES/verl_mindspeed.mo" in names  # the Chinese the package reads
    sources = {str(p.relative_to(ROOT / "src")) for p in (ROOT / "src").rglob("*.py")}
    assert sources <= names


def test_the_installed_wheel_is_what_runs_and_hydra_discovers_it(venv):
    code = ("import verl_mindspeed, sys\n"
            "from hydra.core.plugins import Plugins\n"
            "from hydra.plugins.search_path_plugin import SearchPathPlugin\n"
            "print(verl_mindspeed.__file__)\n"
            "print([c.__name__ for c in Plugins.instance().discover(SearchPathPlugin)])\n")
    proc = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, check=True)
    where, plugins = proc.stdout.splitlines()
    assert where.startswith(str(venv)) and str(ROOT) not in where
    assert "VerlMindSpeedSearchPathPlugin" in plugins


def test_check_with_a_preset_from_the_installed_wheel(venv, tmp_path):
    require("verl")
    proc = subprocess.run([str(venv / "bin" / "verl-mindspeed"), "check", "--config-name=ppo_megatron_trainer",
                           "+mindspeed=dense", *BASIC], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Fused RMSNorm" in proc.stdout and "OK: 0 errors" in proc.stdout
    rmsnorm = next(line for line in proc.stdout.splitlines() if line.startswith("Fused RMSNorm"))
    assert rmsnorm.split()[2] == "on"
    listing = subprocess.run([str(venv / "bin" / "verl-mindspeed"), "presets"], capture_output=True, text=True,
                             cwd=tmp_path, check=True).stdout
    assert all(name in listing for name in ("validate", "dense", "moe", "long_context", "memory_saving", "mla_moe",
                                            "mc2"))
    chinese = subprocess.run([str(venv / "bin" / "verl-mindspeed"), "check", "--lang", "zh",
                              "--config-name=ppo_megatron_trainer", "+mindspeed=dense", *BASIC], capture_output=True,
                             text=True, timeout=120, cwd=tmp_path).stdout
    assert "融合 RMSNorm" in chinese and "0 个错误" in chinese  # the compiled catalogue ships in the wheel


def test_verl_main_ppo_finds_the_presets_of_the_installed_wheel(venv, tmp_path):
    require("ray")
    proc = subprocess.run([str(venv / "bin" / "python"), "-m", "verl.trainer.main_ppo", "--config-path=config",
                           "--config-name=ppo_megatron_trainer", "+mindspeed=validate",
                           "+actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity=full"],
                          capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "stopping before Ray starts" in proc.stderr


def test_import_verl_loads_the_guard_from_the_installed_wheel(venv, tmp_path):
    """The wheel's ``verl.plugins`` entry point: ``import verl`` loads the guard, which installs itself only when asked."""  # noqa: E501  (a docstring: re-wrapping would change its value)
    require("verl")
    import os

    code = ("import sys, verl\n"
            "g = sys.modules.get('verl_mindspeed.integrations.guard')\n"
            "print(g is not None and g.__file__.startswith(sys.prefix), g is not None and g.installed())\n")
    base = {k: v for k, v in os.environ.items() if k not in ("VERL_MINDSPEED_GUARD", "VERL_USE_EXTERNAL_PLUGINS",
                                                             "PYTHONPATH")}
    for extra, expected in (({}, "True False"), ({"VERL_MINDSPEED_GUARD": "1"}, "True True")):
        proc = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, timeout=300,
                              cwd=tmp_path, env={**base, **extra})
        assert proc.stdout.strip() == expected, (proc.stdout, proc.stderr[-2000:])
