"""The project's upstream workers (``verl_mindspeed.upstream``) addressed by the shared release names.

    pool = OraclePool()
    verdicts = pool.run("26.1.0_core_r0.12.1", [case, ...])   # one verdict dict per case, in order
    pool.close()

The conformance layer drives the very code ``check --upstream`` runs: the worker, its stand-ins, the verdict
cache. This file only maps a release branch to its sources (``sources.release_sources``) and to the
environment of its megatron-core line, and runs the releases' workers side by side.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path
from typing import Iterable

import sources

from verl_mindspeed import upstream


@lru_cache(maxsize=None)
def release_sources(release: str) -> upstream.Sources:
    mindspeed, megatron = sources.release_sources(release)
    return upstream.locate(str(mindspeed), str(megatron), sources.RELEASES[release])


def python(release: str) -> Path:
    line = sources.RELEASES[release]
    if not upstream.ready(line):
        raise FileNotFoundError(f"upstream environment for megatron-core {line} missing: run "
                                "verl-mindspeed upstream-env")
    return upstream.envs_dir() / f"mcore-{line}" / "bin" / "python"


class OraclePool:
    def __init__(self, *, full_scan: bool = False, cache: bool = True):
        self.pool = upstream.Pool(full_scan=full_scan, cache=cache)

    @property
    def hits(self) -> int:
        return self.pool.hits

    @property
    def misses(self) -> int:
        return self.pool.misses

    def worker(self, release: str) -> upstream.Worker:
        return self.pool.worker(release_sources(release), python(release))

    def run(self, release: str, cases: Iterable[dict]) -> list[dict]:
        return self.pool.run(release_sources(release), python(release), cases)

    def run_many(self, batches: dict[str, list[dict]]) -> dict[str, list[dict]]:
        """``{release: cases}`` -> ``{release: verdicts}``, the releases' workers running side by side."""
        results: dict[str, list[dict]] = {}
        errors: list[BaseException] = []

        def one(release):
            try:
                results[release] = self.run(release, batches[release])
            except BaseException as exc:  # noqa: BLE001 - re-raised below
                errors.append(exc)

        threads = [threading.Thread(target=one, args=(r,)) for r in batches]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        return results

    def close(self):
        self.pool.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
