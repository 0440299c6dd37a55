"""Which version computed each covered range (``cbt.scheduling.version_pieces``), and a hot-index rebuild that takes
them from the durable record."""

from __future__ import annotations

from cbt.planning import hot_index
from cbt.scheduling.version_pieces import adopted, by_version, computed, known, removed, version_pieces
from cbt.state.admin_records import CompletedInterval
from tests.twins.memory_record import MemoryRecord
from tests.twins.memory_state import MemoryCoverage

A = "db.a"


def test_a_computation_replaces_what_its_range_held_and_joins_its_own_version() -> None:
    held = computed({}, (0, 10), "v1")
    held = computed(held, (10, 20), "v1")
    assert held == {"v1": ((0, 20),)}
    held = computed(held, (5, 15), "v2")
    assert held == {"v1": ((0, 5), (15, 20)), "v2": ((5, 15),)}
    assert computed(held, (0, 20), None) == {}, "a range computed by a version not known holds none"
    assert removed(held, (0, 6)) == {"v1": ((15, 20),), "v2": ((6, 15),)}
    assert computed(held, (3, 3), "v3") == held, "an empty range changes nothing"


def test_an_adoption_replaces_only_where_the_source_has_ranges() -> None:
    held = {"v1": ((0, 100),)}
    assert adopted(held, {"v2": ((10, 20), (50, 60))}) == {"v1": ((0, 10), (20, 50), (60, 100)),
                                                           "v2": ((10, 20), (50, 60))}


def test_covered_ranges_no_version_holds_are_not_known() -> None:
    assert by_version(((0, 100),), [(0, 10, "v1"), (40, 60, "v2"), (90, 120, "v1")]) == {
        "v1": ((0, 10), (90, 100)), "v2": ((40, 60),), None: ((10, 40), (60, 90))}
    assert by_version((), [(0, 10, "v1")]) == {}, "pieces outside the coverage do not count"
    assert known({"v1": ((0, 1),), None: ((1, 2),)}) == {"v1": ((0, 1),)}


def test_pieces_are_disjoint_within_the_coverage_and_the_first_version_keeps_a_contested_position() -> None:
    assert version_pieces(((0, 50),), {"b": ((0, 30),), "a": ((20, 60),)}) == [(0, 20, "b"), (20, 50, "a")]


def test_a_rebuilt_hot_index_holds_the_versions_the_durable_record_holds() -> None:
    record, hot = MemoryRecord(), MemoryCoverage(built=False)
    record.record_completed([CompletedInterval(A, 0, 60, f"{A}:0:60", version=None),
                             CompletedInterval(A, 60, 60, f"{A}:60:60", version="v1"),
                             CompletedInterval(A, 120, 60, f"{A}:120:60", version="v2")])
    hot_index.rebuild(record, hot, [A], [], built_at=1)
    assert hot.version_coverage([A]) == record.version_coverage([A]) == {
        A: {None: ((0, 60),), "v1": ((60, 120),), "v2": ((120, 180),)}}
