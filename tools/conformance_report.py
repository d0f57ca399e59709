"""Print the agreement table of the project against the oracle, per MindSpeed release, and write the repros.

    .venv/bin/python tools/conformance_report.py [--cases 2000] [--out conformance.json] [--release R ...]

Needs the upstream sources (``VERL_MINDSPEED_UPSTREAM``) and the upstream environments
(``verl-mindspeed upstream-env``). ``--upstream`` also judges each launch as ``check --upstream`` would and counts
its false OKs (the oracle errs, check --upstream does not).
Verdicts are cached, so a second run only pays for what changed. The repros file holds one minimal
configuration per distinct disagreement: argv, release, the oracle's exception, the project's verdict.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "conformance"))
sys.path.insert(0, str(ROOT / "src"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000, help="generated configurations (each per release)")
    parser.add_argument("--out", type=Path, default=Path("conformance-disagreements.json"))
    parser.add_argument("--release", action="append", help="only these releases (default: all)")
    parser.add_argument("--injected", action="store_true",
                        help="judge launches through verl-mindspeed (preset/launcher) instead of plain verl launches")
    parser.add_argument("--upstream", action="store_true",
                        help="also judge every launch as check --upstream would, and count its false OKs")
    opts = parser.parse_args(argv)

    import differential
    import pool
    import sources

    gone = sources.missing()
    if gone:
        print(f"upstream sources missing: {', '.join(gone)} (set VERL_MINDSPEED_UPSTREAM)", file=sys.stderr)
        return 2
    start = time.monotonic()
    configs = differential.corpus(opts.cases)
    with pool.OraclePool() as oracle:
        judge = differential.Judge(oracle, opts.release, injected=opts.injected, upstream=opts.upstream,
                                   progress=lambda text: print(text, file=sys.stderr, flush=True))
        rows = judge.judge(configs)
        hits, misses = oracle.hits, oracle.misses
    differential.write(rows, opts.out)
    print(differential.render(differential.table(rows)))
    found = differential.findings(rows)
    print(_deliberate_tally(rows))
    print(f"\n{len(found)} distinct disagreements, one repro each in {opts.out}")
    for f in found:
        o = f["oracle"]
        print(f"- {f['class']} x{f['occurrences']} [{f['release']}] project {f['project']['verdict']} "
              f"{','.join(f['project']['rules']) or '-'}; upstream {o.get('verdict')} "
              f"{o.get('stage', '')} {o.get('exc_type', '')}: {(o.get('message') or '')[:100]}")
    if opts.upstream:
        missed = [r for r in rows
                  if r.oracle == "error" and r.with_upstream != "error" and r.klass != "oracle-environment"]
        closed = sum(r.klass == "noted-uncovered" and r.with_upstream == "error" for r in rows)
        print(f"\ncheck --upstream: {len(missed)} false OKs in {len(rows)} judgements; {closed} noted-only switches "
              "made errors by upstream")
        for r in missed[:10]:
            print(f"- false OK [{r.release}] {differential.repro(r)}")
    seconds = {k: round(v, 1) for k, v in judge.timings.items()}
    print(f"\n{len(configs)} configurations x {len(judge.releases)} releases in {time.monotonic() - start:.0f} s "
          f"(oracle cache: {hits} hits, {misses} runs; {seconds})")
    return 0


def _deliberate_tally(rows) -> str:
    """How many judgements each deliberate check decided (the *stricter-documented* rows, by rule).

    A check of the documented list that decides none over a wide run is no longer stricter than upstream.
    """
    from collections import Counter

    tally = Counter(rule for r in rows if r.klass == "stricter-documented" for rule in r.project_rules)
    lines = [f"  {rule}: {n}" for rule, n in tally.most_common()]
    return "\nstricter-documented judgements by rule:\n" + ("\n".join(lines) or "  (none)")


if __name__ == "__main__":
    raise SystemExit(main())
