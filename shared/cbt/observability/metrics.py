"""Every metric the services export, defined once on the OpenTelemetry metrics API (``docs/metrics.md`` lists them).

Names and labels follow the original's Prometheus metrics where the concept is the same (``cbt_tasks_total{model,
status}``, ``cbt_task_duration_seconds``, ``cbt_tasks_running``, ``cbt_tasks_enqueued_total``, ``cbt_errors_total``,
``cbt_dependency_validation_total``, ``cbt_scheduled_tasks_registered``, ``cbt_scheduled_task_executions_total``,
``cbt_backfill_gaps_analyzed_total``, ``cbt_backfill_gap_check_limit_reached_total``,
``cbt_archived_tasks_deleted_total``), so existing dashboards carry over. The Prometheus exporter adds ``_total`` to
counters and the unit to the rest; the names here are written without them.

Labels are bounded: model ids, statuses, topics, pools, kinds of reason — never a position, a task id or an error
text (``reason_kind``). Until a process configures the SDK (``cbt.adapters.telemetry``), every instrument is the
API's no-op, so the core records metrics without knowing whether anyone exports them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation

from cbt.scheduling.forward import GapTally

Labels = tuple[tuple[str, str], ...]

_meter = metrics.get_meter("cbt")

SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
"""Histogram buckets of every duration: a cascade's milliseconds to a batch's minutes."""

# --- tasks (worker) ---------------------------------------------------------------------------------------------
tasks = _meter.create_counter(
    "cbt_tasks", unit="", description="Task attempts ended, by model and status (success, failed, retried, skipped)")
task_duration = _meter.create_histogram(
    "cbt_task_duration", unit="s",
    description="A task's wall time in the worker (its attempts and the pauses between them), by model and status",
    explicit_bucket_boundaries_advisory=SECONDS_BUCKETS)
tasks_running = _meter.create_up_down_counter(
    "cbt_tasks_running", unit="", description="Tasks running now, by model and worker (the worker process's id)")
positions_completed = _meter.create_counter(
    "cbt_positions_completed", unit="",
    description="Positions covered by completed incremental tasks, by model (a batch counts all its intervals)")
check_results = _meter.create_counter(
    "cbt_check_results", unit="",
    description="Interval check verdicts, by model, check and status (passed, warned, failed): docs/checks.md")
spark_job_duration = _meter.create_histogram(
    "cbt_spark_job_duration", unit="s", description="A task's statements on Spark Connect (or its script), by model",
    explicit_bucket_boundaries_advisory=SECONDS_BUCKETS)
admin_commit_duration = _meter.create_histogram(
    "cbt_admin_commit_duration", unit="s",
    description="Recording completions in the Delta admin table, one group commit",
    explicit_bucket_boundaries_advisory=SECONDS_BUCKETS)
dependency_validation = _meter.create_counter(
    "cbt_dependency_validation", unit="",
    description="The worker's dependency checks before a run, by model and result (satisfied, not_satisfied)")
dependency_validation_duration = _meter.create_histogram(
    "cbt_dependency_validation_duration", unit="s", description="The worker's dependency check, by model",
    explicit_bucket_boundaries_advisory=SECONDS_BUCKETS)

# --- Spark admission (every process that runs statements: worker, coordinator, invalidator, api) ----------------
admission_wait = _meter.create_histogram(
    "cbt_spark_admission_wait", unit="s",
    description="Waiting for one of the Spark cluster's permits, by priority (admin, forward, rerun, backfill)",
    explicit_bucket_boundaries_advisory=SECONDS_BUCKETS)
admission_permits = _meter.create_up_down_counter(
    "cbt_spark_admission_permits", unit="", description="Spark permits this process holds now, by priority")
admission_waiting = _meter.create_up_down_counter(
    "cbt_spark_admission_waiting", unit="", description="Requests of this process waiting for a permit, by priority")

# --- planning (coordinator, invalidator) ------------------------------------------------------------------------
tasks_enqueued = _meter.create_counter(
    "cbt_tasks_enqueued", unit="", description="Tasks published to a task topic, by model and direction")
cascade_latency = _meter.create_histogram(
    "cbt_cascade_latency", unit="s",
    description="From a completion (its completed_at) to its dependents' tasks published, by completed model",
    explicit_bucket_boundaries_advisory=SECONDS_BUCKETS)
leader = _meter.create_gauge(
    "cbt_leader", unit="", description="1 while this coordinator holds the ticker lease, else 0")

# --- the original CBT's scheduler, backfill and archive metrics: its names, types and labels ----------------------
scheduled_task_executions = _meter.create_counter(
    "cbt_scheduled_task_executions", unit="",
    description="Schedules fired by the leading coordinator, by model, operation (forward, backfill, scheduled) "
                "and status (success; failure when what it fired could not be planned or enqueued)")
backfill_gaps_analyzed = _meter.create_counter(
    "cbt_backfill_gaps_analyzed", unit="",
    description="Gaps the backfill planner examined, by model and result (fillable: some part ready; blocked: a "
                "dependency has no data anywhere in it)")
backfill_gap_check_limit_reached = _meter.create_counter(
    "cbt_backfill_gap_check_limit_reached", unit="",
    description="Backfill plans that stopped with ready gaps left because the model's task slots "
                "(worker.model_concurrency) were full, by model")
archived_tasks_deleted = _meter.create_counter(
    "cbt_archived_tasks_deleted", unit="",
    description="Tasks that failed their last attempt and were dropped from the in-flight ledger (so their range "
                "is planned again), by queue (the pool) and model")


def count_backfill_gaps(model: str, gaps: GapTally) -> None:
    """What backfill examined in one plan of ``model`` (nothing when it examined no gap)."""
    if gaps.fillable:
        backfill_gaps_analyzed.add(gaps.fillable, {"model": model, "result": "fillable"})
    if gaps.blocked:
        backfill_gaps_analyzed.add(gaps.blocked, {"model": model, "result": "blocked"})
    if gaps.is_limit_reached:
        backfill_gap_check_limit_reached.add(1, {"model": model})


# --- bounds (bounds-cache) --------------------------------------------------------------------------------------
bounds_scans = _meter.create_counter(
    "cbt_bounds_scans", unit="",
    description="External models' bounds scans, by model, scan (full, incremental) and result (changed, unchanged, "
                "failed)")
bounds_scan_duration = _meter.create_histogram(
    "cbt_bounds_scan_duration", unit="s", description="One bounds scan of an external model, by model",
    explicit_bucket_boundaries_advisory=SECONDS_BUCKETS)



class GaugeTable:
    """An observable gauge whose series a periodic job replaces all at once (``replace``); a collection reports the
    table as it is, so a model that is gone, or a coordinator that stopped leading, stops reporting its series."""

    def __init__(self, name: str, unit: str, description: str) -> None:
        self._values: dict[Labels, float] = {}
        _meter.create_observable_gauge(name, callbacks=[self._observe], unit=unit, description=description)

    def replace(self, values: Mapping[Labels, float]) -> None:
        self._values = dict(values)

    def _observe(self, options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(value, dict(labels)) for labels, value in self._values.items()]


scheduled_tasks_registered = GaugeTable(
    "cbt_scheduled_tasks_registered", "",
    "Schedules the leading coordinator has registered, by model and operation (forward, backfill, scheduled; "
    "model system, operation consolidation); none on the others")

schedule_broken = GaugeTable(
    "cbt_schedule_broken", "",
    "Schedules the leading coordinator set aside because their fire times cannot be computed (a cron expression "
    "naming no date), by model and operation: that model's runs of that kind stop, the other schedules keep firing")

# --- model state (the leading coordinator, every ``telemetry.status_interval``) ---------------------------------
model_lag = GaugeTable(
    "cbt_model_lag_positions", "", "Positions between a model's covered end and its valid range's end (head lag)")
model_lag_seconds = GaugeTable(
    "cbt_model_lag", "s", "Head lag in seconds, for models whose positions are unix seconds (interval.type timestamp)")
model_gaps = GaugeTable(
    "cbt_model_gaps", "", "Uncovered ranges below a model's covered end, inside its valid range (backfill's work)")
model_gap_positions = GaugeTable(
    "cbt_model_gap_positions", "", "Positions in those gaps")
model_backlog = GaugeTable(
    "cbt_model_backlog_intervals", "",
    "Intervals a model could run now (valid, not covered) that are not in flight")
model_bounds = GaugeTable(
    "cbt_model_bounds", "",
    "Positions by bound_type: an external model's min and max; a transformation's covered_min, covered_max, "
    "valid_min and valid_max")

# --- consumers (worker, every ``telemetry.status_interval``) ----------------------------------------------------
consumer_lag = GaugeTable(
    "cbt_consumer_lag_messages", "",
    "Task messages not yet committed on the partitions this worker holds, by pool (sum over workers: the group's)")

# --- events -----------------------------------------------------------------------------------------------------
invalidations = _meter.create_counter(
    "cbt_invalidations", unit="",
    description="Invalidation events by result (applied, rejected) and reason_kind (none when applied)")
messages_rejected = _meter.create_counter(
    "cbt_messages_rejected", unit="",
    description="Messages a service could not use (published to message-rejected), by topic, service and reason_kind")
message_handling_failures = _meter.create_counter(
    "cbt_message_handling_failures", unit="",
    description="Failed attempts at handling a consumed message, by service and error_class: transient (the "
                "infrastructure is away: retried as long as it lasts), ambiguous (retried for at most "
                "kafka.max_ambiguous_s, then set aside), message (the message's own: set aside after "
                "kafka.max_handling_attempts)")
errors = _meter.create_counter(
    "cbt_errors", unit="", description="Errors, by component and error_type (the exception's class)")

REASON_KINDS = (
    ("invalid_json", ("invalid json", "json_invalid", "eof while parsing")),
    ("missing_field", ("field required",)),
    ("unknown_field", ("extra inputs are not permitted",)),
    ("wrong_kind", ("kind: expected", "expected tags", "unable to extract tag")),
    ("unknown_model", ("model: ",)),
    ("range_too_wide", ("invalidator.max_range",)),
    ("too_many_tasks", ("invalidator.max_tasks",)),
)
"""The label values of ``reason_kind``, each with the phrases of the reasons it stands for: a fixed set, whatever a
producer sends (the reason's text, which may name fields of the producer's choosing, stays in the rejected message)."""


def reason_kind(reason: str) -> str:
    """A bounded label for a rejection reason: the first kind in ``REASON_KINDS`` whose phrase it contains, else
    ``invalid_value`` (a field with a value of the wrong type or out of range)."""
    text = reason.lower()
    for kind, phrases in REASON_KINDS:
        if any(phrase in text for phrase in phrases):
            return kind
    return "invalid_value"


def count_rejected(topic: str, service: str, reason: str) -> None:
    messages_rejected.add(1, {"topic": topic, "service": service, "reason_kind": reason_kind(reason)})
