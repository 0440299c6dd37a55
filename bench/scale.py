"""(f) Scale: the coordinator's planning over 10,000 models and 1,000,000 completed intervals, against the real
Redis, without Spark or Kafka.

A child process plays the coordinator (so its peak RSS is the coordinator's, not the bench runner's): it builds a
synthetic DAG (``bench.synthetic``), writes the coverage into the hot index under a key prefix of its own, and
plans with the coordinator's ``Planner`` over ``LiveStateReader`` over ``RedisState``; tasks go to a publisher
that encodes each message as the Kafka one does, and counts it.

- first tick: ``replan`` of every incremental model with an empty ledger: it claims and publishes every ready
  task (the ledger is emptied before each repetition);
- steady tick: the same with those tasks in flight, as every later tick sees them;
- cascade: ``replan_dependents`` of models of the middle layer (the coordinator's answer to a completion);
- invalidation: ``impact`` of one interval of the external with the most descendants, and of the median one (the
  invalidator's mapping to descendants), its inputs — live pieces over the window, in-flight tasks — read before
  the clock starts; CPU time beside wall time, since this part is pure and only load slows it;
- the steady tick again over a tenth of the intervals in as many stored ranges: planning reads merged ranges,
  so its cost should not depend on how many intervals they hold.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any

from redis import Redis

from bench import synthetic
from bench.report import load_average, summary
from cbt.adapters.redis_state import RedisState
from cbt.config.settings import Config
from cbt.contract.messages import Message
from cbt.planning.live import LiveStateReader
from cbt.planning.planner import Planner
from cbt.scheduling.invalidation import impact, reach
from cbt.scheduling.protocol import Piece

EXTERNALS = 100
LAYERS = 11
HOLES = 3
SEED = 7


@dataclass
class CountingPublisher:
    """``Publisher`` that encodes each message as the Kafka one does and counts it instead of sending it."""

    published: int = 0

    async def publish(self, topic: str, message: Message, key: str) -> None:
        del topic, key
        message.encode()
        self.published += 1


@dataclass
class Rig:
    dag: synthetic.Dag
    state: RedisState
    client: Redis
    prefix: str
    planner: Planner

    def clear_ledger(self) -> None:
        """Release every claim: the next tick plans as if nothing were in flight."""
        _unlink(self.client, f"{self.prefix}ledger*")

    async def tick_ms(self) -> tuple[float, int]:
        """One full tick over every incremental model: wall time and tasks published."""
        started = time.perf_counter()
        published = await self.planner.replan(self.dag.incrementals)
        return _ms(started), published


def measure(redis_url: str, models: int, intervals: int, reps: int, samples: int) -> dict[str, Any]:
    dag = synthetic.synthetic_dag(EXTERNALS, models - EXTERNALS, LAYERS, SEED)
    client = Redis.from_url(redis_url)
    prefix = f"bench-scale-{uuid.uuid4().hex[:8]}:"
    state = RedisState(client, prefix)
    reader = LiveStateReader(dag.models, state.coverage, state.bounds, state.ledger)
    rig = Rig(dag, state, client, prefix,
              Planner.from_config(Config(), dag.models, reader, state.ledger, CountingPublisher()))
    out: dict[str, Any] = {"load_at_start": load_average(), "key_prefix": prefix, "dag": dag.shape()}
    try:
        out["coverage"] = synthetic.seed(state, dag, intervals, HOLES, SEED)
        out["coverage"]["read_all_ms"], out["coverage"]["stored_ranges_read"] = _read_all(rig)
        out |= asyncio.run(_planning(rig, reps, samples))
        out["invalidation"] = _invalidation(rig, samples)
        out["small"] = {"coverage": synthetic.seed(state, dag, intervals // 10, HOLES, SEED + 1),
                        **asyncio.run(_ticks(rig, reps))}
    finally:
        _unlink(client, f"{prefix}*")
    out["interval_ratio"] = round(out["steady_tick_ms"]["p50"] / out["small"]["steady_tick_ms"]["p50"], 2)
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    out["load_at_end"] = load_average()
    return out


async def _planning(rig: Rig, reps: int, samples: int) -> dict[str, Any]:
    out = await _ticks(rig, reps)
    middle = rig.dag.layers[len(rig.dag.layers) // 2]
    picks = [middle[i * len(middle) // samples] for i in range(samples)]
    times = []
    for model_id in picks:
        started = time.perf_counter()
        await rig.planner.replan_dependents(model_id)
        times.append(_ms(started))
    fan_out = [len(rig.dag.models.dependents(m)) for m in picks]
    out["cascade_ms"] = summary(times)
    out["cascade_dependents"] = {"mean": round(sum(fan_out) / len(fan_out), 1), "max": max(fan_out)}
    return out


async def _ticks(rig: Rig, reps: int) -> dict[str, Any]:
    """First ticks (ledger emptied before each), then steady ones (their tasks in flight)."""
    first, tasks = [], 0
    for _ in range(reps):
        rig.clear_ledger()
        ms, tasks = await rig.tick_ms()
        first.append(ms)
    steady = [await rig.tick_ms() for _ in range(reps)]
    return {"first_tick_ms": summary(first), "first_tick_tasks": tasks,
            "steady_tick_ms": summary([ms for ms, _ in steady]), "steady_tick_tasks": max(n for _, n in steady)}


def _invalidation(rig: Rig, samples: int) -> dict[str, Any]:
    """``impact`` of one interval in the middle of the coverage, for the external with the most descendants (the
    target's case) and for the median one."""
    models = rig.dag.models
    reached = sorted(rig.dag.layers[0], key=lambda m: len(models.descendants(m)))
    return {"widest": _impact_of(rig, reached[-1], samples), "median": _impact_of(rig, reached[len(reached) // 2],
                                                                                 samples)}


def _impact_of(rig: Rig, source: str, samples: int) -> dict[str, Any]:
    """Wall and CPU time of ``impact``, its inputs read first as the invalidator reads them."""
    models = rig.dag.models
    involved = list(models.descendants(source))
    start = rig.state.bounds.bounds([source])[source].max // 2 // synthetic.INTERVAL * synthetic.INTERVAL
    rng = (start, start + synthetic.INTERVAL)
    window = reach(models, source, rng)
    ran = {m: [Piece(r, synthetic.INTERVAL) for r in ranges if r[0] < window[1] and window[0] < r[1]]
           for m, ranges in rig.state.coverage.coverages(involved).items()}
    running = rig.state.ledger.in_flight(involved, int(time.time() * 1000))
    in_flight = {m: [t.range for t in tasks if t.range is not None] for m, tasks in running.items()}
    wall, cpu, result = [], [], None
    for _ in range(samples):
        started, cpu_started = time.perf_counter(), time.process_time()
        result = impact(models, source, rng, in_flight=in_flight, ran=ran)
        wall.append(_ms(started))
        cpu.append(round((time.process_time() - cpu_started) * 1000, 3))
    assert result is not None
    return {"model": source, "range": list(rng), "descendants": len(involved), "models_rerun": len(result.ranges),
            "tasks_rerun": sum(len(r) for r in result.ranges.values()), "ms": summary(wall), "cpu_ms": summary(cpu)}


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def _read_all(rig: Rig) -> tuple[float, int]:
    started = time.perf_counter()
    coverages = rig.state.coverage.coverages(rig.dag.incrementals)
    return _ms(started), sum(len(c) for c in coverages.values())


def _unlink(client: Redis, pattern: str) -> None:
    keys = list(client.scan_iter(match=pattern, count=1000))
    for i in range(0, len(keys), 1000):
        client.unlink(*keys[i:i + 1000])


def benchmark(redis_url: str, models: int, intervals: int, reps: int = 5, samples: int = 100) -> dict[str, Any]:
    """Run ``measure`` in a child process (its peak RSS is the coordinator's alone) and return its report."""
    argv = [sys.executable, "-m", "bench.scale", "--redis-url", redis_url, "--models", str(models),
            "--intervals", str(intervals), "--reps", str(reps), "--samples", str(samples)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"bench.scale exited with {done.returncode}: {done.stderr.strip()[-2000:]}")
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.split("\n")[0])
    parser.add_argument("--redis-url", required=True)
    parser.add_argument("--models", type=int, default=10_000)
    parser.add_argument("--intervals", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--samples", type=int, default=100)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.redis_url, args.models, args.intervals, args.reps, args.samples)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
