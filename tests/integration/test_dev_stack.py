"""The launcher's promises: every component up, each reporting memory, none listening beyond loopback."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from cbt.dev import stack
from cbt.dev.process import _tree
from tests.conftest import Endpoints

pytestmark = pytest.mark.integration


def test_status_reports_every_component_up_with_memory(endpoints: Endpoints) -> None:
    statuses = {s.name: s for s in stack.status()}
    assert set(statuses) == {"kafka", "redis", "spark-connect"}
    if statuses["kafka"].pid is None:
        pytest.skip("endpoints were given from outside; the launcher does not own them")
    for s in statuses.values():
        assert s.is_up, s.line()
        assert s.rss_mib is not None and s.rss_mib > 1


def test_nothing_started_by_the_launcher_listens_on_a_non_loopback_address(endpoints: Endpoints) -> None:
    pids = [pid for s in stack.status() if s.pid is not None for pid in _tree(s.pid)]
    if not pids:
        pytest.skip("endpoints were given from outside; the launcher does not own them")
    addresses = _listening_addresses(pids)
    assert addresses, "expected the launcher's processes to listen somewhere"
    assert all(address.is_loopback for address in addresses), addresses


def _listening_addresses(pids: list[int]) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    inodes = set()
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").glob("*"):
            try:
                target = fd.readlink().as_posix()
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    found = []
    for table, width in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 16)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A = LISTEN
                found.append(_decode(fields[1].split(":")[0], width))
    return found


def _decode(hex_address: str, width: int) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    raw = bytes.fromhex(hex_address)
    # /proc/net prints each 32-bit word in host (little-endian) order.
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, width, 4))
    address = ipaddress.ip_address(words)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return address.ipv4_mapped
    return address
