"""The KRaft cluster id the launcher formats storage with."""

from __future__ import annotations

import base64
from collections.abc import Iterator

from cbt.dev.kafka import kraft_cluster_id


def test_an_id_that_would_begin_with_a_dash_is_drawn_again() -> None:
    leading_dash = base64.urlsafe_b64decode("-" + "A" * 21 + "==")  # 16 bytes whose encoding starts with '-'
    draws: Iterator[bytes] = iter([leading_dash, leading_dash, bytes(range(16))])

    cluster_id = kraft_cluster_id(lambda: next(draws))

    assert cluster_id == base64.urlsafe_b64encode(bytes(range(16))).decode().rstrip("=")


def test_ids_are_22_url_safe_characters_and_never_an_option() -> None:
    ids = {kraft_cluster_id() for _ in range(2000)}
    assert len(ids) == 2000
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)
