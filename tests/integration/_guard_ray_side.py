"""Code that runs inside Ray workers for ``test_guard_ray.py`` (importable there through PYTHONPATH)."""

from __future__ import annotations

import os


def worker_side() -> tuple:
    """The switch as the worker sees it, whether ``import verl`` installed the guard, the worker group's own mark."""
    import sys

    import verl  # noqa: F401 - loads the verl.plugins entry points

    g = sys.modules.get("verl_mindspeed.integrations.guard")
    return os.environ.get("VERL_MINDSPEED_GUARD"), g is not None and g.installed(), os.environ.get("WG_MARK")


class Runner:
    """Like verl's TaskRunner: a worker group's actors get their own ``runtime_env`` env_vars."""

    def run(self) -> tuple:
        import ray

        worker = ray.remote(num_cpus=0)(worker_side).options(runtime_env={"env_vars": {"WG_MARK": "1"}})
        return ray.get(worker.remote())
