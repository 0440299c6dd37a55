"""``POST /api/v1/models/{id}/checks/accept``: the held intervals the range overlaps are marked accepted by the
caller's token (so planning no longer leaves them alone), an audit row says who and what; a range that overlaps no
held interval, a model without checks and a call without a write token are refused with the reason."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

from cbt.api.context import ApiContext
from cbt.api.events import EventHub
from cbt.api.offline import Offline
from cbt.api.web import create_app
from cbt.config.settings import Config
from cbt.models.dag import ModelSet
from cbt.models.interval_checks import IntervalCheck
from cbt.state.admin_records import AuditAction
from cbt.state.holds import held_ranges
from cbt.state.ports import HeldInterval
from tests.twins.memory_state import MemoryState
from tests.unit.api.asgi import Answer, request
from tests.unit.scheduling.factories import inc

WRITE = "w" * 32
CHECKED = replace(inc("an.minute", imax=60), checks=(IntervalCheck("not_null_a", "not_null", columns=("a",)),))
PLAIN = inc("an.plain", imax=60)


class Audit:
    def __init__(self) -> None:
        self.actions: list[AuditAction] = []

    def record_action(self, action: AuditAction) -> None:
        self.actions.append(action)


def post(state: MemoryState, audit: Audit, model: str, body: dict[str, Any], token: str | None = WRITE) -> Answer:
    config = Config.model_validate({"api": {"auth": {"tokens": [WRITE]}}})
    app = create_app(ApiContext(config=config, models=ModelSet({CHECKED.id: CHECKED, PLAIN.id: PLAIN}), hot=state,
                                refresh=Offline(), admin=audit, commands=Offline(), events=EventHub()))  # type: ignore[arg-type]
    headers = {"content-type": "application/json"} | ({"authorization": f"Bearer {token}"} if token else {})
    return asyncio.run(request(app, "POST", f"/api/v1/models/{model}/checks/accept", headers,
                               json.dumps(body).encode()))


def test_the_held_intervals_a_range_overlaps_are_accepted_and_audited() -> None:
    state, audit = MemoryState(), Audit()
    state.holds.hold(CHECKED.id, [HeldInterval(60, 120, "v1", "check not_null_a failed: 1 violating row"),
                                  HeldInterval(600, 660, "v1", "x")])
    answer = post(state, audit, CHECKED.id, {"start": 100, "end": 130, "reason": "vendor confirmed the nulls"})
    assert answer.status == 200, answer.body
    (accepted,) = json.loads(answer.body)["accepted"]
    assert accepted["range"] == [60, 120] and accepted["accepted_by"]
    held = state.holds.held([CHECKED.id])
    assert held_ranges(held, {CHECKED.id: "v1"}) == {CHECKED.id: ((600, 660),)}, "planning takes the accepted one"
    (action,) = audit.actions
    assert (action.action, action.target, action.who) == ("checks-accept", CHECKED.id, accepted["accepted_by"])
    assert action.detail == {"start": 100, "end": 130, "reason": "vendor confirmed the nulls",
                             "intervals": [[60, 120]]}


def test_nothing_held_in_the_range_no_checks_or_no_write_token_is_refused_with_the_reason() -> None:
    state, audit = MemoryState(), Audit()
    state.holds.hold(CHECKED.id, [HeldInterval(60, 120, "v1", "x")])
    nothing = post(state, audit, CHECKED.id, {"start": 0, "end": 60})
    assert nothing.status == 409 and b"no interval" in nothing.body
    plain = post(state, audit, PLAIN.id, {"start": 0, "end": 60})
    assert plain.status == 400 and b"has no checks" in plain.body
    backwards = post(state, audit, CHECKED.id, {"start": 120, "end": 60})
    assert backwards.status == 400
    assert post(state, audit, CHECKED.id, {"start": 60, "end": 120}, token=None).status == 401
    assert audit.actions == [] and not state.holds.held([CHECKED.id])[CHECKED.id][0].is_accepted
