"""Free TCP ports for the servers the brokers, the tests and the demo start.

Outside pytest-xdist a port is whatever the kernel hands out for port 0. Under xdist several workers start servers
at the same time, and a port read from a closed socket can be handed to another worker (or to a client socket's
local end) before its server binds it. So each worker takes ports from a slice of its own below the kernel's
ephemeral range (which starts at 32768 by default), walking it with a cursor: no other worker and no outgoing
connection takes a port from that slice, and the worker itself hands a port out again only after walking the whole
slice.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import random
import socket
import threading
from collections.abc import Iterator

__all__ = ["free_port", "free_ports"]

#: Worker slices are cut from [_FIRST, _END): above the well-known and registered ports most servers default to
#: (Kafka's 9092, JMX's 9999, Prometheus' 9090...), below the ephemeral range.
_FIRST, _END = 10_000, 32_768


def _worker_slice() -> range | None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw"):
        return None
    index = int(worker.removeprefix("gw"))
    count = max(int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")), index + 1)
    size = (_END - _FIRST) // count
    return range(_FIRST + index * size, _FIRST + (index + 1) * size)


_lock = threading.Lock()
_cursor: Iterator[int] | None = None


def _next_in_slice(ports: range) -> int:
    global _cursor
    with _lock:
        if _cursor is None:
            # From a random point of the slice, so that two test sessions on one machine (their workers share
            # names, hence slices) do not walk the same ports in step; and in strides of several ports (prime to the
            # slice's length, so every port comes once a round), so that a server that takes the next port when its
            # own is taken (Spark's web UIs do) does not land on the port handed out next.
            start, size = random.randrange(len(ports)), len(ports)
            stride = next(k for k in (7, 11, 13, 17, 19) if math.gcd(k, size) == 1)
            _cursor = itertools.cycle([ports[(start + stride * i) % size] for i in range(size)])
        return next(_cursor)


def free_port(host: str = "127.0.0.1") -> int:
    """An unused TCP port on ``host``."""
    return free_ports(1, host)[0]


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """`count` distinct unused ports: all are held at once while reading, so none is handed out twice."""
    ports = _worker_slice()
    with contextlib.ExitStack() as held:
        found: list[int] = []
        for _ in range(len(ports) if ports else count):
            if len(found) == count:
                break
            sock = held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            if ports is None:
                sock.bind((host, 0))
            else:
                try:
                    sock.bind((host, _next_in_slice(ports)))
                except OSError:
                    continue  # in use, or still in TIME_WAIT: the next one
            found.append(int(sock.getsockname()[1]))
        if len(found) < count:
            raise OSError(f"fewer than {count} free ports on {host} in this worker's slice {ports}")
        return found
