"""Random interleavings of everything that touches coverage, checked against what the data actually was.

Hypothesis drives the two stores' twins (``MemoryRecord``, ``MemoryState``) the way the services do — workers
reading the sequence, appending durable rows and recording in the hot index; the invalidator recording then
applying events (and seeing them redelivered); consolidation; Redis emptied; rebuilds whose read and write are
split so anything can happen in between — and checks, after every step, properties stated in logical time rather
than in the protocol's own terms (so a wrong rule in ``cbt.scheduling.protocol`` fails them too):

* nothing invalidated stays covered: a covered position has a row whose task started after the latest event over
  that position was recorded (the hot index: of the events applied to it so far);
* nothing valid is lost: a position some task computed after every invalidation of it was applied is covered in
  the durable record;
* sequences never go backwards, and every event gets a new, higher epoch (a redelivery keeps its first);
* nothing invalidated is forgotten: every position an applied event named that the hot index does not cover lies
  in one of its pending re-runs (so the planner runs it again);
* once things settle (events applied, tasks recorded, superseded tasks re-run, the index rebuilt), the hot index
  equals the durable record's coverage, and its pending re-runs, like those a rebuild derives from the durable
  record, hold every invalidated position not covered and no range that is covered whole.
"""

from __future__ import annotations

from dataclasses import dataclass

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from cbt.planning import hot_index
from cbt.scheduling import coverage as cov
from cbt.scheduling.coverage import Coverage, Range
from cbt.scheduling.task_runs import TaskRun, all_tasks, not_held
from cbt.state.admin_records import CompletedInterval, InvalidationRecord
from tests.twins.memory_record import MemoryRecord
from tests.twins.memory_state import MemoryState

M = "db.m"
SLOT = 10
ranges = st.builds(lambda start, length: (start * SLOT, (start + length) * SLOT),
                   st.integers(0, 9), st.integers(1, 4))


@dataclass
class Task:
    range: Range
    observed: int
    started: int
    is_durable: bool = False


@dataclass
class Event:
    id: str
    range: Range
    epoch: int
    recorded: int
    applied: int | None = None


@dataclass
class Rebuild:
    generation: str
    version: str
    seq: int
    coverage: Coverage | None = None
    reruns: tuple[TaskRun, ...] = ()


@dataclass
class Row:
    range: Range
    started: int


class Protocol(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.record = MemoryRecord()
        self.hot = MemoryState()
        self.clock = 0
        self.running: list[Task] = []
        self.superseded: list[Range] = []
        self.rows: list[Row] = []
        self.events: list[Event] = []
        self.rebuild_read: Rebuild | None = None
        self.highest_seq = 0

    def tick(self) -> int:
        self.clock += 1
        return self.clock

    # -- workers ----------------------------------------------------------------------------------------------

    @precondition(lambda self: self.hot.coverage.is_built())
    @rule(r=ranges)
    def task_starts(self, r: Range) -> None:
        """Step 3 of the worker: read the sequence, then the data (the clock marks the read)."""
        self.running.append(Task(r, self.hot.coverage.invalidation_seq(M), self.tick()))

    @precondition(lambda self: any(not t.is_durable for t in self.running))
    @rule(data=st.data())
    def task_appends_its_row(self, data: st.DataObject) -> None:
        task = data.draw(st.sampled_from([t for t in self.running if not t.is_durable]))
        self.record.record_completed([CompletedInterval(M, task.range[0], task.range[1] - task.range[0],
                                                        f"t{self.tick()}", invalidation_seq=task.observed)])
        self.rows.append(Row(task.range, task.started))
        task.is_durable = True

    @precondition(lambda self: any(t.is_durable for t in self.running))
    @rule(data=st.data())
    def task_records_in_the_hot_index(self, data: st.DataObject) -> None:
        task = data.draw(st.sampled_from([t for t in self.running if t.is_durable]))
        self.running.remove(task)
        self.tick()
        if not self.hot.coverage.record_completed(M, task.range, task.observed):
            self.superseded.append(task.range)  # the worker requeues it

    @precondition(lambda self: bool(self.superseded) and self.hot.coverage.is_built())
    @rule()
    def superseded_task_runs_again(self) -> None:
        self.running.append(Task(self.superseded.pop(0), self.hot.coverage.invalidation_seq(M), self.tick()))

    # -- invalidator ------------------------------------------------------------------------------------------

    @precondition(lambda self: self.hot.coverage.is_built())
    @rule(r=ranges)
    def event_is_recorded(self, r: Range) -> None:
        event_id = f"e{len(self.events)}"
        stored = self.record.record_invalidation(InvalidationRecord(event_id, M, r[0], r[1], "reorg", "test",
                                                                    affected={M: (TaskRun.single(r),)}))
        assert stored.epoch > max((e.epoch for e in self.events), default=0), "epochs only grow"
        self.events.append(Event(event_id, r, stored.epoch, self.tick()))

    @precondition(lambda self: any(e.applied is None for e in self.events))
    @rule(data=st.data())
    def event_is_applied(self, data: st.DataObject) -> None:
        event = data.draw(st.sampled_from([e for e in self.events if e.applied is None]))
        self.hot.coverage.apply_invalidation(event.epoch, {M: [TaskRun.single(event.range)]})
        event.applied = self.tick()

    @precondition(lambda self: any(e.applied is not None for e in self.events))
    @rule(data=st.data())
    def event_is_redelivered(self, data: st.DataObject) -> None:
        event = data.draw(st.sampled_from([e for e in self.events if e.applied is not None]))
        stored = self.record.record_invalidation(InvalidationRecord(event.id, M, 0, 1, "again", "test",
                                                                    affected={M: (TaskRun.single((0, 100)),)}))
        first = {M: (TaskRun.single(event.range),)}
        assert (stored.epoch, stored.affected) == (event.epoch, first), "kept as first recorded"
        self.hot.coverage.apply_invalidation(stored.epoch, stored.affected)
        self.tick()

    # -- coordinator / operator -------------------------------------------------------------------------------

    @rule()
    def consolidation(self) -> None:
        self.record.consolidate()
        self.tick()

    @rule()
    def redis_is_emptied(self) -> None:
        self.hot.coverage.flush()
        self.tick()

    @rule()
    def rebuild_reads_the_sequence(self) -> None:
        """A rebuild's reads are separate queries: anything can happen between them (``hot_index.rebuild``)."""
        generation = self.hot.coverage.generation()
        version = self.hot.coverage.versions([M])[M]
        self.rebuild_read = Rebuild(generation, version, self.record.invalidation_seqs([M]).get(M, 0))
        self.tick()

    @precondition(lambda self: self.rebuild_read is not None and self.rebuild_read.coverage is None)
    @rule()
    def rebuild_reads_the_coverage(self) -> None:
        assert self.rebuild_read is not None
        self.rebuild_read.coverage = self.record.coverage([M])[M]
        self.rebuild_read.reruns = self._durable_reruns(self.rebuild_read.coverage)
        self.tick()

    @precondition(lambda self: self.rebuild_read is not None and self.rebuild_read.coverage is not None)
    @rule()
    def rebuild_writes(self) -> None:
        read, self.rebuild_read = self.rebuild_read, None
        assert read is not None and read.coverage is not None
        if self.hot.coverage.replace_coverage(M, read.coverage, read.seq, read.version, read.reruns):
            self.hot.coverage.mark_built(self.clock, read.generation)
        self.tick()

    @rule()
    def settle(self) -> None:
        """Quiet: every event applied, every task recorded, superseded ones re-run, the index rebuilt."""
        for event in self.events:
            if event.applied is None:
                self.hot.coverage.apply_invalidation(event.epoch, {M: [TaskRun.single(event.range)]})
                event.applied = self.tick()
        self.rebuild_read = None
        if not self.hot.coverage.is_built():
            hot_index.rebuild(self.record, self.hot.coverage, [M], [], self.tick())
        for task in list(self.running):
            if not task.is_durable:
                self.record.record_completed([CompletedInterval(M, task.range[0], task.range[1] - task.range[0],
                                                                "settle", invalidation_seq=task.observed)])
                self.rows.append(Row(task.range, task.started))
            self.running.remove(task)
            if not self.hot.coverage.record_completed(M, task.range, task.observed):
                self.superseded.append(task.range)
        # what the planner runs next: the hot index's pending re-runs (an event applied after a newer one removes a
        # range its task already recorded under the newer epoch; the hot index cannot tell, so it runs it again)
        self.superseded += [r for r in self.hot.coverage.reruns([M])[M]
                            if not cov.covers(self.record.coverage([M])[M], r)
                            or not cov.covers(self.hot.coverage.coverage(M), r)]
        while self.superseded:
            r = self.superseded.pop()
            seq, started = self.hot.coverage.invalidation_seq(M), self.tick()
            self.record.record_completed([CompletedInterval(M, r[0], r[1] - r[0], "rerun", invalidation_seq=seq)])
            self.rows.append(Row(r, started))
            assert self.hot.coverage.record_completed(M, r, seq), "nothing is pending: a re-run must record"
        durable = self.record.coverage([M])[M]
        assert self.hot.coverage.coverage(M) == durable, "quiet: hot index = durable record"
        uncovered = {p for e in self.events for p in range(*e.range) if not cov.covers(durable, (p, p + 1))}
        rebuilt = all_tasks(self._durable_reruns(durable))
        for name, pending in (("hot index", self.hot.coverage.reruns([M])[M]), ("rebuild", rebuilt)):
            assert not any(cov.covers(durable, r) for r in pending), f"{name}: a covered range listed as a re-run"
            assert {p for r in pending for p in range(*r)} >= uncovered, f"{name}: an invalidated position forgotten"

    def _durable_reruns(self, durable: Coverage) -> tuple[TaskRun, ...]:
        """What a rebuild lists as re-runs: the recorded tasks the durable coverage does not hold, as runs."""
        return tuple(left for run in self.record.invalidated_ranges([M]).get(M, ()) for left in not_held(run, durable))

    # -- what must hold ---------------------------------------------------------------------------------------

    def _backed(self, position: int, since: int) -> bool:
        """Whether a row covering ``position`` was computed by a task that started after ``since``."""
        return any(r.range[0] <= position < r.range[1] and r.started > since for r in self.rows)

    def _last_change(self, position: int, applied_only: bool) -> int:
        """When the latest event over ``position`` was recorded (the data changed before that)."""
        events = [e for e in self.events if e.range[0] <= position < e.range[1]]
        return max((e.recorded for e in events if e.applied is not None or not applied_only), default=-1)

    @invariant()
    def nothing_invalidated_stays_covered(self) -> None:
        """The hot index is held to the events applied to it so far; the durable record to every recorded one."""
        for position in _positions(self.record.coverage([M])[M]):
            assert self._backed(position, self._last_change(position, False)), f"durable record: {position} stale"
        if not self.hot.coverage.is_built():
            return  # nobody reads it (workers, planner and invalidator wait); the rebuild overwrites it whole
        for position in _positions(self.hot.coverage.coverage(M)):
            assert self._backed(position, self._last_change(position, True)), f"hot index: {position} stale"

    @invariant()
    def nothing_valid_is_lost(self) -> None:
        durable = self.record.coverage([M])[M]
        for row in self.rows:
            for position in range(*row.range):
                events = [e for e in self.events if e.range[0] <= position < e.range[1]]
                if all(e.applied is not None and e.applied < row.started for e in events):
                    assert cov.covers(durable, (position, position + 1)), f"durable record lost {position}"

    @invariant()
    def nothing_invalidated_is_forgotten(self) -> None:
        if not self.hot.coverage.is_built():
            return
        hot, pending = self.hot.coverage.coverage(M), self.hot.coverage.reruns([M])[M]
        for event in self.events:
            if event.applied is None:
                continue
            for position in range(*event.range):
                if not cov.covers(hot, (position, position + 1)):
                    assert any(s <= position < e for s, e in pending), f"{position} left without a re-run"

    @invariant()
    def sequences_never_go_backwards(self) -> None:
        if self.hot.coverage.is_built():
            seq = self.hot.coverage.invalidation_seq(M)
            assert seq >= self.highest_seq, f"sequence went from {self.highest_seq} back to {seq}"
            self.highest_seq = seq


def _positions(coverage: Coverage) -> list[int]:
    return [p for s, e in coverage for p in range(s, e)]


TestProtocol = Protocol.TestCase
TestProtocol.settings = settings(max_examples=300, stateful_step_count=40, deadline=None,
                                 suppress_health_check=[HealthCheck.too_slow])
