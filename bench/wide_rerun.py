"""A decade-wide rerun of the demo's chain (``config.yaml`` and ``models/`` at the repository root): what the
invalidator does with it, and its peak memory.

``python -m bench.wide_rerun`` prints one JSON line per case, each measured in a fresh child process (peak RSS is
``ru_maxrss`` of that process alone):

* ``refused`` — the event as the invalidator gets it, with the default limits: ``why_rejected`` refuses it before
  anything is read (``invalidator.max_tasks``);
* ``runs`` — with the limit lifted, the worst case of the mapping: every incremental model of the chain ran over the
  whole decade (one consolidated row each). ``impact`` plus the admin record's JSON and the Redis script's arguments,
  as the invalidator builds them;
* ``tasks`` — the same affected set listed one task per entry, as records held it before runs.

Pure computation: no Kafka, Redis or Spark is touched.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from cbt.config.settings import load_config
from cbt.contract.messages import Invalidation
from cbt.models.loader import load_models
from cbt.models.spec import IncrementalModel
from cbt.scheduling.invalidation import impact, reach, why_rejected
from cbt.scheduling.protocol import Piece
from cbt.state.admin_records import encode_ranges

ROOT = Path(__file__).resolve().parents[1]
DECADE_S = 10 * 365 * 86400
CASES = ("refused", "runs", "tasks")


def _measure(case: str) -> dict[str, object]:
    config = load_config(ROOT / "config.yaml")
    models = load_models(config)
    event = Invalidation(id="decade", model="beacon_blocks", start=0, end=DECADE_S, reason="manual", source="bench")
    model_id = models.resolve(event.model)
    started = time.perf_counter()
    out: dict[str, object] = {"case": case, "models": 1 + len(models.descendants(model_id))}
    if case == "refused":
        out["reason"] = why_rejected(models, event, config.invalidator.max_range, config.invalidator.max_tasks)
    else:
        window = reach(models, model_id, (event.start, event.end))
        ran = {
            m: [Piece(window, model.interval.min or model.interval.max)]
            for m, model in models.models.items()
            if isinstance(model, IncrementalModel)
        }
        found = impact(models, model_id, (event.start, event.end), ran=ran)
        affected = found.ranges
        if case == "tasks":  # the former form: one [start, end] per task
            text = json.dumps(
                {
                    m: [[s, min(s + r.step, r.end)] for r in rs for s in range(r.start, r.end, r.step)]
                    for m, rs in affected.items()
                }
            )
            argv = 2 * found.task_count
        else:
            text = encode_ranges(affected)
            argv = 3 * sum(len(rs) for rs in affected.values())
        out.update(
            tasks=found.task_count,
            runs=sum(len(rs) for rs in affected.values()),
            record_json_bytes=len(text),
            redis_argv_values=argv,
        )
    out["seconds"] = round(time.perf_counter() - started, 3)
    out["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return out


def main() -> int:
    if len(sys.argv) == 2 and sys.argv[1] in CASES:
        print(json.dumps(_measure(sys.argv[1])))
        return 0
    for case in CASES:
        subprocess.run([sys.executable, "-m", "bench.wide_rerun", case], check=True, cwd=ROOT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
