"""`--web.listen-address` as Prometheus exporters take it: `host:port`, `:port` (every interface, IPv4 and IPv6)
or `[IPv6 address]:port`."""

from __future__ import annotations

import ipaddress
import re

# (host, port); host None listens on every interface, as Go's ":9784" does.
ListenAddress = tuple[str | None, int]

_FORMS = "host:port, :port or [IPv6 address]:port, port 1-65535"
_ADDRESS = re.compile(r"^(?:\[(?P<ipv6>[^\]]+)\]|(?P<host>[^:\[\]\s]*)):(?P<port>\d{1,5})$")


def parse_listen_address(value: str) -> ListenAddress:
    """ValueError naming the value and the allowed forms when it is not one of them."""
    match = _ADDRESS.match(value)
    if match is None or not 1 <= int(match["port"]) <= 65535:
        raise ValueError(f"{value!r} is not a listen address; allowed: {_FORMS}")
    if match["ipv6"] is not None:
        try:
            ipaddress.IPv6Address(match["ipv6"])
        except ValueError:
            raise ValueError(f"{value!r}: {match['ipv6']!r} is not an IPv6 address; allowed: {_FORMS}") from None
        return match["ipv6"], int(match["port"])
    return match["host"] or None, int(match["port"])


def format_listen_address(address: ListenAddress) -> str:
    host, port = address
    if host is None:
        return f":{port}"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
