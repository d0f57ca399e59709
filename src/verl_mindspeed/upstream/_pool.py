"""Upstream workers: one subprocess per set of sources, one JSON line per case, and an on-disk cache.

MindSpeed's patches are process-wide, so it never runs in the caller's process. A worker imports MindSpeed
once (a few seconds) and then answers cases in order; the cache answers a case it has seen before with the
same sources, interpreter and harness without starting a worker at all.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import threading
from pathlib import Path
from typing import Iterable, Optional

from ._sources import Sources, cache_root

HERE = Path(__file__).resolve().parent
WORKER = HERE / "_oracle_worker.py"
HARNESS = (WORKER, HERE / "_oracle_harness.py", HERE / "_oracle_patches.py", HERE / "_oracle_stubs.py")


class WorkerError(RuntimeError):
    """The worker could not start or died; ``detail`` is the end of what it printed."""

    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        self.detail = detail


def harness_digest() -> str:
    h = hashlib.sha256()
    for path in HARNESS:
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _env() -> dict[str, str]:
    """The worker's environment: this one, with bytecode written as Python does by default (MindSpeed's ~1,500
    modules compile once, then every later import reads them: a new launch is seconds faster)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


class Worker:
    """One MindSpeed import in its own process."""

    def __init__(self, sources: Sources, python: Path, full_scan: bool = False):
        cmd = [str(python), str(WORKER), "--mindspeed", str(sources.mindspeed), "--megatron", str(sources.megatron),
               "--release", sources.release]
        if full_scan:
            cmd.append("--full-scan")
        debug = bool(os.environ.get("VERL_MINDSPEED_ORACLE_DEBUG"))
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None if debug else subprocess.PIPE,
            text=True, bufsize=1, env=_env())
        self._stderr: list[str] = []
        if self.proc.stderr is not None:  # drained on a thread, so a chatty import never blocks on a full pipe
            threading.Thread(target=self._drain, daemon=True).start()
        first = self.proc.stdout.readline()
        if not first:
            self.proc.wait(timeout=30)
            raise WorkerError(f"the upstream worker for {sources.release} died at start-up", self.stderr_tail())
        self.info = json.loads(first)["ready"]

    def _drain(self) -> None:
        for line in self.proc.stderr:
            self._stderr.append(line)
            del self._stderr[:-40]

    def stderr_tail(self) -> str:
        return "".join(self._stderr[-20:]).strip()

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
                raise WorkerError("the upstream worker died", self.stderr_tail())
            out.append(json.loads(line))
        writer.join()
        return out

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


class Pool:
    """Workers keyed by (sources, interpreter), with verdicts cached on disk by their exact inputs."""

    def __init__(self, *, full_scan: bool = False, cache: bool = True):
        self.full_scan = full_scan
        self.cache_enabled = cache and not full_scan
        self.digest = harness_digest()
        self.workers: dict[tuple[str, str], Worker] = {}
        self._tables: dict[str, dict[str, dict]] = {}
        self.hits = self.misses = 0
        self.last_seconds: list[float] = []

    def worker(self, sources: Sources, python: Path) -> Worker:
        key = (sources.digest, str(python))
        if key not in self.workers:
            self.workers[key] = Worker(sources, python, self.full_scan)
        return self.workers[key]

    def _cache_file(self, sources: Sources, python: Path) -> Path:
        who = hashlib.sha256(f"{sources.digest}{python}{self.digest}".encode()).hexdigest()[:16]
        return cache_root() / "upstream-verdicts" / f"{_safe(sources.release)}-{who}.jsonl"

    def _table(self, sources: Sources, python: Path) -> dict[str, dict]:
        path = self._cache_file(sources, python)
        if str(path) not in self._tables:
            table: dict[str, dict] = {}
            if self.cache_enabled and path.exists():
                for line in path.read_text().splitlines():
                    try:
                        entry = json.loads(line)
                    except ValueError:
                        continue  # a line cut short by an interrupted run
                    table[entry.pop("key")] = entry
            self._tables[str(path)] = table
        return self._tables[str(path)]

    @staticmethod
    def key(case: dict) -> str:
        return hashlib.sha256(json.dumps(case, sort_keys=True).encode()).hexdigest()

    def cached(self, sources: Sources, python: Path, case: dict) -> Optional[dict]:
        return self._table(sources, python).get(self.key(_canonical(case)))

    def run(self, sources: Sources, python: Path, cases: Iterable[dict]) -> list[dict]:
        cases = [_canonical(c) for c in cases]
        table = self._table(sources, python)
        keys = [self.key(c) for c in cases]
        todo: dict[str, dict] = {}
        for key, case in zip(keys, cases):
            if key not in table and key not in todo:
                todo[key] = case
        self.hits += len(cases) - len(todo)
        self.misses += len(todo)
        self.last_seconds = []
        if todo:
            got = self.worker(sources, python).run(list(todo.values()))
            fresh = {}
            for key, verdict in zip(todo, got):
                verdict.pop("id", None)
                self.last_seconds.append(verdict.pop("seconds", 0.0))
                table[key] = verdict
                if verdict["verdict"] != "harness-error":
                    fresh[key] = verdict
            if self.cache_enabled and fresh:
                path = self._cache_file(sources, python)
                path.parent.mkdir(parents=True, exist_ok=True)
                with path.open("a") as fh:
                    for key, verdict in fresh.items():
                        fh.write(json.dumps({"key": key, **verdict}) + "\n")
        return [table[k] for k in keys]

    def close(self) -> None:
        for worker in self.workers.values():
            worker.close()
        self.workers.clear()

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _canonical(case: dict) -> dict:
    return {"steps": case["steps"], "switches": sorted(case.get("switches", ()))}


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[:60]
