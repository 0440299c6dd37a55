"""Small builders for model specs and snapshots, so each test states only what it is about."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cbt.models.spec import (
    Dependency,
    ExternalModel,
    Fill,
    IncrementalModel,
    Interval,
    Limits,
    Model,
    ModelId,
    ScheduledModel,
    Schedules,
    SourceRef,
)
from cbt.scheduling import coverage as cov
from cbt.scheduling.coverage import Range
from cbt.scheduling.snapshot import RawBounds, StateSnapshot

SOURCE = SourceRef("test.sql")


def _split(model_id: str) -> tuple[str, str]:
    database, _, table = model_id.partition(".")
    return database, table


def ext(model_id: str, lag: int = 0) -> ExternalModel:
    database, table = _split(model_id)
    return ExternalModel(database=database, table=table, interval_type="block", source=SOURCE, lag=lag)


def sched(model_id: str, schedule: str = "@hourly") -> ScheduledModel:
    database, table = _split(model_id)
    return ScheduledModel(database=database, table=table, schedule=schedule, source=SOURCE)


def inc(
    model_id: str = "an.model",
    deps: Sequence[Dependency] = (),
    *,
    imax: int = 100,
    imin: int | None = None,
    forward: str = "@every 1m",
    backfill: str = "@every 5m",
    limits: tuple[int | None, int | None] = (None, None),
    direction: str = "tail",
    gap_skipping: bool = False,
    buffer: int = 0,
) -> IncrementalModel:
    database, table = _split(model_id)
    return IncrementalModel(
        database=database,
        table=table,
        interval=Interval(max=imax, min=imax if imin is None else imin, type="block"),
        schedules=Schedules(forwardfill=forward, backfill=backfill),
        source=SOURCE,
        dependencies=tuple(deps),
        limits=Limits(min=limits[0], max=limits[1]),
        fill=Fill(direction="head" if direction == "head" else "tail", allow_gap_skipping=gap_skipping, buffer=buffer),
    )


def models_of(*models: Model) -> dict[ModelId, Model]:
    return {m.id: m for m in models}


def snapshot(
    bounds: Mapping[ModelId, tuple[int, int]] | None = None,
    coverage: Mapping[ModelId, Sequence[Range]] | None = None,
    in_flight: Mapping[ModelId, Sequence[Range]] | None = None,
) -> StateSnapshot:
    return StateSnapshot(
        bounds={k: RawBounds(lo, hi) for k, (lo, hi) in (bounds or {}).items()},
        coverage={k: cov.merge(v) for k, v in (coverage or {}).items()},
        in_flight={k: tuple(v) for k, v in (in_flight or {}).items()},
    )
