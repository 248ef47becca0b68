"""Which process holds which TCP connection to a cluster's listeners, read from the kernel (``/proc/net/tcp``,
``/proc/net/tcp6`` and each process's ``/proc/<pid>/fd``): the count the brokers' KIP-511 gauges should agree with,
taken without asking Kafka or the exporter.

Everything runs on 127.0.0.1, so both ends of a connection are in this table: the client's end is the socket whose
remote port is a listener's port (and whose local port is not one: the broker's accepted end has them the other way
round). Java binds dual-stack sockets, listed in ``tcp6`` as IPv4-mapped addresses.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Listener", "TcpCount", "count_connections", "established", "socket_inodes"]

_ESTABLISHED = "01"


@dataclass(frozen=True)
class Listener:
    """A listening port of a broker: its node id and listener name (PLAINTEXT, CONTROLLER ...)."""

    broker: int
    name: str


@dataclass(frozen=True)
class TcpCount:
    """Established client connections to the listeners, by owner: ``counts[(owner, listener)]``. ``unowned`` are
    connections no given process holds (another program, or one that has just exited)."""

    counts: Counter[tuple[str, Listener]]
    unowned: Counter[Listener]


def established(tables: Iterable[Path] = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))) -> list[tuple[int, int, int]]:
    """(local port, remote port, socket inode) of every established TCP connection."""
    found = []
    for table in tables:
        with contextlib.suppress(FileNotFoundError):
            for line in table.read_text().splitlines()[1:]:
                fields = line.split()
                if len(fields) < 10 or fields[3] != _ESTABLISHED:
                    continue
                local_port = int(fields[1].rsplit(":", 1)[1], 16)
                remote_port = int(fields[2].rsplit(":", 1)[1], 16)
                found.append((local_port, remote_port, int(fields[9])))
    return found


def socket_inodes(pid: int) -> set[int]:
    inodes = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    # A process that exits while it is listed has no fds left: it holds nothing.
    with contextlib.suppress(FileNotFoundError, ProcessLookupError, PermissionError):
        for fd in os.listdir(fd_dir):
            with contextlib.suppress(OSError):
                target = os.readlink(fd_dir / fd)
                if target.startswith("socket:["):
                    inodes.add(int(target[8:-1]))
    return inodes


def count_connections(listeners: Mapping[int, Listener], owners: Mapping[int, str]) -> TcpCount:
    """Established connections to ``listeners`` (port -> Listener), counted by the owner (``owners``: pid -> a name
    the caller chooses, e.g. the client identity the broker should record) of the client's end."""
    owner_of: dict[int, str] = {}
    for pid, owner in owners.items():
        for inode in socket_inodes(pid):
            owner_of[inode] = owner
    counts: Counter[tuple[str, Listener]] = Counter()
    unowned: Counter[Listener] = Counter()
    for local_port, remote_port, inode in established():
        listener = listeners.get(remote_port)
        if listener is None or local_port in listeners:
            continue
        if inode in owner_of:
            counts[(owner_of[inode], listener)] += 1
        else:
            unowned[listener] += 1
    return TcpCount(counts, unowned)
