"""Every model's lag, gaps, backlog and bounds as gauge series, from one state snapshot.

Pure (``tables``) over the same ``model_status`` as ``cbt status``, so the gauges and the CLI agree; ``publish``
hands the result to the gauges of ``cbt.observability.metrics``. Only the leading coordinator publishes them, so
each series has one source.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cbt.models.dag import ModelSet
from cbt.models.spec import IncrementalModel, is_time_type
from cbt.observability import metrics
from cbt.observability.metrics import Labels
from cbt.scheduling import coverage as cov
from cbt.scheduling.snapshot import StateSnapshot
from cbt.scheduling.status import backlog, model_status


@dataclass
class ModelStateTables:
    lag: dict[Labels, float] = field(default_factory=dict)
    lag_seconds: dict[Labels, float] = field(default_factory=dict)
    gaps: dict[Labels, float] = field(default_factory=dict)
    gap_positions: dict[Labels, float] = field(default_factory=dict)
    backlog: dict[Labels, float] = field(default_factory=dict)
    bounds: dict[Labels, float] = field(default_factory=dict)


def tables(models: ModelSet, snapshot: StateSnapshot) -> ModelStateTables:
    """The series of every model in ``snapshot``: a model without a valid range reports gaps and bounds but no lag
    and no backlog (nothing can run); externals report their scanned bounds."""
    out = ModelStateTables()
    for external in models.externals:
        scanned = snapshot.bounds.get(external.id)
        if scanned is not None:
            out.bounds[_labels(external.id, "min")] = scanned.min
            out.bounds[_labels(external.id, "max")] = scanned.max
    for model in models.incrementals:
        assert isinstance(model, IncrementalModel)
        status = model_status(model, models.models, snapshot)
        one = (("model", model.id),)
        out.gaps[one] = len(status.gaps)
        out.gap_positions[one] = sum(end - start for start, end in status.gaps)
        covered = cov.span(status.coverage)
        if covered is not None:
            out.bounds[_labels(model.id, "covered_min")], out.bounds[_labels(model.id, "covered_max")] = covered
        if status.valid is None or status.lag is None:
            continue
        out.bounds[_labels(model.id, "valid_min")], out.bounds[_labels(model.id, "valid_max")] = status.valid
        out.lag[one] = status.lag
        if is_time_type(model.interval.type):
            out.lag_seconds[one] = status.lag
        out.backlog[one] = backlog(status, model)
    return out


def publish(state: ModelStateTables) -> None:
    metrics.model_lag.replace(state.lag)
    metrics.model_lag_seconds.replace(state.lag_seconds)
    metrics.model_gaps.replace(state.gaps)
    metrics.model_gap_positions.replace(state.gap_positions)
    metrics.model_backlog.replace(state.backlog)
    metrics.model_bounds.replace(state.bounds)


def _labels(model_id: str, bound_type: str) -> Labels:
    return (("model", model_id), ("bound_type", bound_type))
