"""``make chaos``: N rounds of randomized faults on the real local stack, then quiet, then the checks.

    python -m tests.chaos                      # 20 rounds, a random seed (printed)
    python -m tests.chaos --rounds 50 --seed 7 # replay a run

Writes ``bench/reports/chaos/<timestamp>.json`` and ``bench/reports/chaos/latest.json``: the seed, every fault
(kind, when, what it hit, how long it took), the time to quiet after the last fault, and what was lost or
duplicated (both must be 0). Exits non-zero when a check fails.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from dataclasses import asdict

from bench.report import REPORTS, load_average, machine, stamp, write
from cbt.adapters.spark import connect
from cbt.dev import stack
from cbt.dev.layout import Layout
from tests.chaos.rig import Chaos, chaos_deployment, verdict


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos", description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1_000_000)
    print(f"chaos: {args.rounds} rounds, seed {seed} (replay: python -m tests.chaos --rounds {args.rounds} "
          f"--seed {seed})", flush=True)
    stack.up()
    layout = Layout.from_env()
    spark = connect(layout.spark_remote)
    began = time.monotonic()
    with chaos_deployment(layout.spark_remote, layout.kafka_bootstrap, layout.redis_url, spark) as dep:
        chaos = Chaos(dep, random.Random(seed))
        chaos.start()
        for number, kinds in enumerate(chaos.rounds(args.rounds), start=1):
            for fault in chaos.apply_together(kinds):
                print(f"  round {number:>3}: {fault.kind:<28} at {fault.at_s:>6.1f}s  {fault.detail}"
                      + (f"  (with {', '.join(fault.together_with)})" if fault.together_with else ""), flush=True)
        quiet_s = chaos.settle()
        print(f"quiet {quiet_s:.1f}s after the last fault; checking against the oracle", flush=True)
        result = verdict(dep)
    skipped = [f.kind for f in chaos.faults if f.is_skipped]
    missing_kinds = sorted(set(chaos.kinds()) - {f.kind for f in chaos.faults if not f.is_skipped})
    problems = result.problems() + [f"{kind}: skipped (it proved nothing)" for kind in skipped] + [
        f"{kind}: never applied" for kind in missing_kinds if args.rounds >= len(chaos.kinds())]
    report = {
        "seed": seed, "rounds": args.rounds, "load_average": load_average(), "machine": machine(),
        "faults_by_kind": dict(Counter(f.kind for f in chaos.faults)), "faults_injected": len(chaos.faults),
        "rounds_of_several_at_once": sum(1 for f in chaos.faults if f.together_with) // 2,
        "skipped": skipped,
        "faults": [asdict(f) for f in chaos.faults], "quiet_after_last_fault_s": round(quiet_s, 1),
        "total_s": round(time.monotonic() - began, 1), "lost_rows": result.lost_rows,
        "duplicate_rows": result.duplicate_rows, "tables": {t: list(d) for t, d in result.tables_equal.items()},
        "failures_reported": result.failures_reported, "failures_recorded": result.recorded_failures,
        "retries_recorded": result.recorded_retries,
        "problems": problems,
    }
    path = write(report, stamp(), REPORTS / "chaos")
    print(f"faults: {report['faults_by_kind']}")
    print(f"lost rows {result.lost_rows}, duplicate rows {result.duplicate_rows}, failures reported "
          f"{result.failures_reported}; report {path}")
    for problem in problems:
        print(f"FAILED: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
