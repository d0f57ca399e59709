"""The oracle workers, seen from the project's venv: one process per MindSpeed release, JSON lines, a cache.

    pool = OraclePool()
    verdicts = pool.run("26.1.0_core_r0.12.1", [case, ...])   # one verdict dict per case, in order
    pool.close()

Verdicts are cached on disk keyed by the exact inputs: the case, the release, the sources' folders and the
text of the worker and stubs (so a change to either recomputes everything). Cases sent to one worker are
pipelined (a writer thread feeds stdin while the caller reads stdout), and workers of different releases run
side by side, so both cores work.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Iterable, Optional

import sources

HERE = Path(__file__).resolve().parent
WORKER = HERE / "oracle" / "worker.py"
import oracle_env_link as oracle_env


def harness_digest() -> str:
    h = hashlib.sha256()
    for path in sorted((HERE / "oracle").glob("*.py")):
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


class Worker:
    def __init__(self, release: str, python: Path, full_scan: bool = False):
        mindspeed, megatron = sources.release_sources(release)
        cmd = [str(python), str(WORKER), "--mindspeed", str(mindspeed), "--megatron", str(megatron),
               "--release", release]
        if full_scan:
            cmd.append("--full-scan")
        self._start(cmd)
        first = self.proc.stdout.readline()
        if not first:
            raise RuntimeError(f"the oracle worker for {release} died at start-up: {' '.join(cmd)}")
        self.info = json.loads(first)["ready"]
        self.sources = (str(mindspeed), str(megatron))

    def _start(self, cmd):
        self.stderr = open(os.devnull, "w") if not os.environ.get("VERL_MINDSPEED_ORACLE_DEBUG") else None
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
                                     text=True, bufsize=1, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})

    def run(self, cases: list[dict]) -> list[dict]:
        def feed():
            for i, case in enumerate(cases):
                self.proc.stdin.write(json.dumps({**case, "id": i}) + "\n")
            self.proc.stdin.flush()

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        out = []
        for _ in cases:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the oracle worker died")
            out.append(json.loads(line))
        writer.join()
        return out

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        if self.stderr is not None:
            self.stderr.close()


class OraclePool:
    def __init__(self, *, full_scan: bool = False, cache: bool = True):
        self.full_scan = full_scan
        self.workers: dict[str, Worker] = {}
        self.cache_enabled = cache and not full_scan
        self.digest = harness_digest()
        self._cache: dict[str, dict[str, dict]] = {}
        self.hits = self.misses = 0

    def python(self, release: str) -> Path:
        line = sources.RELEASES[release]
        if not oracle_env.ready(line):
            raise FileNotFoundError(f"oracle venv for megatron-core {line} missing: run tools/oracle_env.py")
        return oracle_env.python_of(line)

    def worker(self, release: str) -> Worker:
        if release not in self.workers:
            self.workers[release] = Worker(release, self.python(release), self.full_scan)
        return self.workers[release]

    # -- cache
    def _cache_file(self, release: str) -> Path:
        return sources.cache_root() / "oracle" / f"{release}-{self.digest}.jsonl"

    def _load(self, release: str) -> dict[str, dict]:
        if release not in self._cache:
            table: dict[str, dict] = {}
            path = self._cache_file(release)
            if self.cache_enabled and path.exists():
                for line in path.read_text().splitlines():
                    with_key = json.loads(line)
                    table[with_key.pop("key")] = with_key
            self._cache[release] = table
        return self._cache[release]

    def _key(self, release: str, case: dict) -> str:
        mindspeed, megatron = sources.release_sources(release)
        blob = json.dumps({"case": case, "release": release, "sources": [str(mindspeed), str(megatron)]},
                          sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def run(self, release: str, cases: Iterable[dict]) -> list[dict]:
        cases = [{"steps": c["steps"], "switches": c.get("switches", [])} for c in cases]
        table = self._load(release)
        keys = [self._key(release, c) for c in cases]
        todo: dict[str, dict] = {}
        for key, case in zip(keys, cases):
            if key not in table and key not in todo:
                todo[key] = case
        self.hits += len(cases) - len(todo)
        self.misses += len(todo)
        if todo:
            got = self.worker(release).run(list(todo.values()))
            new = {}
            for key, verdict in zip(todo, got):
                verdict.pop("id", None)
                seconds = verdict.pop("seconds", None)
                table[key] = verdict
                new[key] = {**verdict, "seconds": seconds}
            if self.cache_enabled:
                path = self._cache_file(release)
                path.parent.mkdir(parents=True, exist_ok=True)
                with path.open("a") as fh:
                    for key, verdict in new.items():
                        if verdict["verdict"] != "harness-error":
                            fh.write(json.dumps({"key": key, **{k: v for k, v in verdict.items()
                                                                  if k != "seconds"}}) + "\n")
            self.last_seconds = [v["seconds"] for v in new.values()]
        return [table[k] for k in keys]

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
        for worker in self.workers.values():
            worker.close()
        self.workers.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def ensure_venvs(lines: Optional[Iterable[str]] = None) -> None:
    for line in lines or oracle_env.LINES:
        oracle_env.ensure(line)
