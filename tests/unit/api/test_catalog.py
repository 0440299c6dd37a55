"""The model list's filters, summaries and the DAG's ranks, statuses and edges (OR groups included)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cbt.api import catalog
from cbt.models.dag import ModelSet
from tests.unit.scheduling.factories import ext, inc, models_of, sched, snapshot

SRC, ALT, REF = "src.blocks", "src.alt", "src.ref"
MINUTE, HOUR = "out.minute", "out.hour"
MODELS = ModelSet(models_of(ext(SRC, lag=10), ext(ALT), sched(REF), inc(MINUTE, [(SRC, ALT)], imax=60),
                            inc(HOUR, [MINUTE, REF], imax=3600)))


@pytest.mark.parametrize(("kind", "database", "search", "expected"), [
    pytest.param(None, None, None, [ALT, SRC, REF, HOUR, MINUTE], id="all"),
    pytest.param("incremental", None, None, [HOUR, MINUTE], id="by-type"),
    pytest.param(None, "src", None, [ALT, SRC, REF], id="by-database"),
    pytest.param(None, None, "MIN", [MINUTE], id="search-ignores-case"),
])
def test_filters(kind: str | None, database: str | None, search: str | None, expected: list[str]) -> None:
    assert [m.id for m in MODELS if catalog.matches(m, kind, database, None, search)] == sorted(expected)


def test_summaries_and_node_statuses() -> None:
    state = snapshot(bounds={SRC: (0, 1000)}, coverage={MINUTE: [(0, 600), (660, 900)]},
                     in_flight={MINUTE: [(900, 960)]})
    minute = catalog.summarize(MODELS.get(MINUTE), MODELS, state, failed=0)
    assert (minute.valid_range, minute.covered, minute.gaps, minute.in_flight, minute.lag) == (
        (0, 990), (0, 900), 1, 1, 90)
    assert catalog.node_status(MODELS.get(MINUTE), minute) == "lagging"
    assert catalog.summarize(MODELS.get(SRC), MODELS, state, 0).valid_range == (0, 990), "bounds minus lag"
    assert catalog.node_status(MODELS.get(HOUR), catalog.summarize(MODELS.get(HOUR), MODELS, state, 0)) == "ok"
    waiting = replace(state, never_ran=frozenset({REF}))
    hour = catalog.summarize(MODELS.get(HOUR), MODELS, waiting, failed=0)
    assert catalog.node_status(MODELS.get(HOUR), hour) == "waiting", "the reference table has not run yet"
    assert catalog.node_status(MODELS.get(HOUR), catalog.summarize(MODELS.get(HOUR), MODELS, state, 2)) == "failing"
    assert catalog.node_status(MODELS.get(SRC), catalog.summarize(MODELS.get(SRC), MODELS, state, 0)) == "external"


def test_ranks_and_edges() -> None:
    assert catalog.ranks(MODELS) == {SRC: 0, ALT: 0, REF: 0, MINUTE: 1, HOUR: 2}
    edges = {(e.source, e.target, e.or_group) for e in catalog.edges(MODELS)}
    assert edges == {(SRC, MINUTE, 0), (ALT, MINUTE, 0), (MINUTE, HOUR, None), (REF, HOUR, None)}


def test_config_redacts_secrets_and_keeps_the_settings() -> None:
    config = catalog.config_of(MODELS.get(MINUTE))
    assert config["interval"] == {"max": 60, "min": 60, "type": "block"}
    assert config["batch"]["effective_mode"] == "off"
    assert "sql" not in config and "source" not in config
