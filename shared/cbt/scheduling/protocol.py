"""The coverage and invalidation protocol (``docs/protocol.md``) as pure rules: both stores follow them.

Two stores hold coverage. The **durable record** (the Delta admin tables: completion rows and invalidation
records) is the authority; the **hot index** (Redis) is a cache of it that the services read and write on the
hot path, and that is rebuilt from the durable record whenever it is lost.

* **Epochs.** Every accepted invalidation gets an epoch, one more than the highest epoch ever recorded, allocated
  by the same commit that records the event: the durable record serialises concurrent allocations, so epochs
  never go backwards, survive any loss of the hot index, and a redelivered event keeps its first epoch.
* A model's **sequence** is the highest epoch applied to it (0 when never invalidated).
* **Completion rows** (``CompletedRange``) carry the sequence their task read before it ran. A row's *live part* is
  its range minus every range invalidated for its model under a higher epoch — exactly those ranges, never the
  whole row.
  Coverage is the union of the live parts (``live_coverage``).
* **The hot index** keeps per model its coverage, its sequence, the log of applied ``(epoch, range)`` marks
  above a *floor*, and a version. A completion adds its live part against the log (``accepted_part``), and
  nothing at all — fail closed — when the task read a sequence the index cannot judge: below the floor (marks may
  have been forgotten) or above the current sequence (the index was reset since).
* An invalidation is applied to the hot index once per epoch (``is_applied``): a redelivery does not remove
  coverage that re-runs already restored. A rebuild sets the floor and records the sequence it read
  (``rebuilt_at``): every epoch up to it is reflected in what it loaded.
* **Tasks.** A row records whole tasks of one length, its *step* (a task's row: one task; a consolidated row: a
  run of equal, touching tasks, ``runs``). An invalidation names whole tasks, so a live part is still made of
  whole tasks of its row (``live_pieces``), and an invalidation re-runs exactly the tasks that ran over its range.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cbt.scheduling import coverage as cov
from cbt.scheduling.coverage import EMPTY, Coverage, Range


@dataclass(frozen=True)
class Mark:
    """One range of one model invalidated under ``epoch``."""

    epoch: int
    range: Range


UNKNOWN_STEP = 0
"""The step of a row whose task boundaries are not known (consolidated before they were kept)."""


@dataclass(frozen=True)
class CompletedRange:
    """One completion row: ``range`` computed by tasks of length ``step`` (``None``: one task, the whole row) that
    read sequence ``seq`` before running."""

    range: Range
    seq: int
    step: int | None = None
    version: str | None = None
    """The model's version that computed it (consolidation never merges rows of two versions)."""

    @property
    def task_step(self) -> int:
        return self.range[1] - self.range[0] if self.step is None else self.step


@dataclass(frozen=True, order=True)
class Piece:
    """A live part of a row: ``range`` is made of whole tasks of length ``step`` from its start (``UNKNOWN_STEP``:
    boundaries not known)."""

    range: Range
    step: int

    def tasks(self, within: Range) -> list[Range]:
        """The piece's tasks that overlap ``within`` (``[]`` when its boundaries are unknown)."""
        (first, last), step = self.range, self.step  # conditionals, not min/max: invalidations call it per model
        low = within[0] if within[0] > first else first
        high = within[1] if within[1] < last else last
        if step == UNKNOWN_STEP or low >= high:
            return []
        start = first + (low - first) // step * step
        return [(s, s + step if s + step < last else last) for s in range(start, high, step)]


def subtract(r: Range, holes: Iterable[Range]) -> Coverage:
    """The parts of ``r`` outside every hole."""
    parts: Coverage = (r,) if r[0] < r[1] else EMPTY
    for hole in holes:
        parts = cov.remove(parts, hole)
    return parts


def live_part(row: CompletedRange, marks: Iterable[Mark]) -> Coverage:
    """What ``row`` still covers: its range minus the ranges invalidated under a higher epoch."""
    return subtract(row.range, (m.range for m in marks if m.epoch > row.seq))


def live_pieces(row: CompletedRange, marks: Iterable[Mark]) -> list[Piece]:
    """``live_part`` as pieces: a piece that starts and ends on the row's task boundaries keeps its step; one that
    does not (a mark that did not follow them) counts as one task of its own length."""
    step = row.task_step
    out = []
    for start, end in live_part(row, marks):
        whole = step != UNKNOWN_STEP and (start - row.range[0]) % step == 0 and (end - start) % step == 0
        out.append(Piece((start, end), step if whole or step == UNKNOWN_STEP else end - start))
    return out


def runs(pieces: Iterable[Piece]) -> list[Piece]:
    """Pieces merged into as few as possible without losing a task boundary: each result is a run of touching
    pieces of one step, in order (consolidation). Equal pieces count once; overlapping ones stay apart."""
    out: list[Piece] = []
    for piece in sorted(set(pieces)):
        last = out[-1] if out else None
        if last is not None and piece.step != UNKNOWN_STEP and last.step == piece.step \
                and last.range[1] == piece.range[0]:
            out[-1] = Piece((last.range[0], piece.range[1]), piece.step)
        else:
            out.append(piece)
    return out


def by_version(rows: Iterable[CompletedRange]) -> dict[str | None, list[CompletedRange]]:
    """The rows each model version computed."""
    out: dict[str | None, list[CompletedRange]] = {}
    for row in rows:
        out.setdefault(row.version, []).append(row)
    return out


def version_runs(rows: Iterable[CompletedRange], marks: Sequence[Mark]) -> list[tuple[str | None, Piece]]:
    """``runs`` of each version's live pieces apart (consolidation): a run never mixes the versions that computed
    its rows, so every consolidated row still says which version computed it."""
    return [(version, run) for version, same in sorted(by_version(rows).items(), key=lambda item: item[0] or "")
            for run in runs(p for row in same for p in live_pieces(row, marks))]


def version_coverage(rows: Iterable[CompletedRange], marks: Sequence[Mark]) -> dict[str | None, Coverage]:
    """What each version computed that is still live (``None``: rows recorded without a version)."""
    covered = {version: live_coverage(same, marks) for version, same in by_version(rows).items()}
    return {version: ranges for version, ranges in covered.items() if ranges}


def tasks_over(row: Range, step: int, span: Range) -> Range | None:
    """The part of a row of tasks of length ``step`` from its start (``UNKNOWN_STEP``: the whole row) made of the
    tasks that overlap ``span``; ``None`` when none does. A switch keeps these of the model's rows over the head
    its build left (``DurableRecord.adopt``), so their re-run repeats exactly those tasks."""
    start, end = row
    if end <= span[0] or start >= span[1]:
        return None
    if step == UNKNOWN_STEP:
        return row
    low = start + max(0, (span[0] - start) // step) * step
    high = min(end, start + -(-(span[1] - start) // step) * step)
    return (low, high) if low < high else None


def live_coverage(rows: Iterable[CompletedRange], marks: Iterable[Mark]) -> Coverage:
    """One model's coverage in the durable record: the union of its rows' live parts."""
    held = tuple(marks)
    return cov.merge(part for row in rows for part in live_part(row, held))


def next_epoch(recorded: Iterable[int]) -> int:
    """The epoch of a newly recorded invalidation: one more than every epoch recorded before."""
    return max(recorded, default=0) + 1


def accepted_part(done: Range, observed: int, seq: int, floor: int, log: Iterable[Mark]) -> Coverage:
    """What the hot index adds for a completion of ``done`` by a task that read sequence ``observed``."""
    if observed > seq or observed < floor:
        return EMPTY
    return live_part(CompletedRange(done, observed), log)


def is_applied(epoch: int, rebuilt_at: int, log: Iterable[Mark]) -> bool:
    """Whether the hot index already reflects the invalidation of ``epoch``: logged, or at or below the sequence the
    last rebuild read from the durable record (``rebuilt_at``). Not the pruning floor: an epoch older than the log
    keeps may never have been applied (a delayed event), and applying it again only costs a re-run."""
    return epoch <= rebuilt_at or any(m.epoch == epoch for m in log)


def masks_nothing(epoch: int, spans: Iterable[Range], rows: Iterable[CompletedRange]) -> bool:
    """Whether an invalidation recorded under ``epoch`` over ``spans`` hides no part of ``rows`` (one model's): no
    row computed before it (``seq`` < ``epoch``) overlaps them. Consolidation gives every row the model's highest
    epoch, which folds every recorded event into the rows."""
    held = tuple(spans)
    return not any(row.seq < epoch and r[0] < row.range[1] and row.range[0] < r[1] for row in rows for r in held)


def is_prunable(epoch: int, top_seq: int, spans: Iterable[Range], rows: Iterable[CompletedRange],
                coverage: Coverage) -> bool:
    """Whether one model's part of an invalidation (``spans``: its runs of tasks) can be forgotten without changing
    anything either store derives from the durable record. All three must hold:

    * it is not the model's newest (``epoch`` < ``top_seq``): the model's sequence and the next epoch stay;
    * it masks nothing (``masks_nothing``): every row's live part stays the same, so coverage, live pieces and
      consolidation do; deleting it while it still hid a stale row would mark that row's old data covered again;
    * its tasks are all covered again (each run's span lies in ``coverage``): a rebuild lists no pending re-run
      from it, so none is lost.
    """
    held = tuple(spans)
    return epoch < top_seq and masks_nothing(epoch, held, rows) and all(cov.covers(coverage, r) for r in held)
