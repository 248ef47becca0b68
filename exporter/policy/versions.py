"""Client software versions as Kafka records them (KIP-511), parsed without guessing, and version specifiers.

What real clients send is not PEP 440 or SemVer: `3.9.0`, `7.5.0-ccs` (Confluent's builds of the Java client),
`2.16.1-rdkafka-2.16.0` (confluent-kafka-python: its own version, then the librdkafka it embeds),
`1.0.0-SNAPSHOT`, `v1.43.2` (Go module versions), `unknown`. `packaging.version` rejects most of these and
SemVer libraries reject two-part releases, so the grammar here is deliberately small:

    [v] release [qualifier]      release = digits separated by dots (trailing zeros do not matter: 2.1 == 2.1.0)

The qualifier orders the version only when it is a pre-release marker (SNAPSHOT, alpha, beta, rc, ...): then
the version sorts before its release (`1.0.0-SNAPSHOT` < `1.0.0`). Any other qualifier (`-ccs`, a build tag)
is a flavour of the same release and does not change the order (`7.5.0-ccs` == `7.5.0`). Anything that does
not start with a release (`unknown`, `dev`, `(devel)`) is unparseable: `parse_version` returns None and no
verdict is ever derived from it.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "EMBEDDED_LIBRDKAFKA_SEPARATOR",
    "ClientVersion",
    "VersionSpecifier",
    "embedded_librdkafka_text",
    "parse_bound",
    "parse_specifier",
    "parse_version",
]

#: confluent-kafka-python sends "<own version>-rdkafka-<librdkafka version>" (confluent_kafka.c,
#: common_conf_set_software); other librdkafka wrappers may do the same.
EMBEDDED_LIBRDKAFKA_SEPARATOR = "-rdkafka-"

_VERSION = re.compile(r"^[vV]?(?P<release>\d+(?:\.\d+)*)(?P<qualifier>[A-Za-z0-9.+_\-]*)$")
_TOKEN = re.compile(r"\d+|[A-Za-z]+")
# Markers of builds that come before their release, as Maven, PEP 440 and SemVer spell them.
_PRE_RELEASE_MARKERS = frozenset(
    {"snapshot", "alpha", "a", "beta", "b", "rc", "cr", "c", "pre", "preview", "dev", "m", "milestone", "ea"}
)


@functools.total_ordering
@dataclass(frozen=True, eq=False)
class ClientVersion:
    """A parsed version. Ordering and equality use the release numbers and the pre-release part only."""

    text: str
    release: tuple[int, ...]
    pre_release: tuple[tuple[int, int | str], ...] | None
    qualifier: str

    @property
    def _key(self) -> tuple[object, ...]:
        release = list(self.release)
        while len(release) > 1 and release[-1] == 0:
            release.pop()
        # A release sorts after every pre-release of the same numbers.
        pre = (0, self.pre_release) if self.pre_release is not None else (1, ())
        return (tuple(release), pre)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ClientVersion):
            return NotImplemented
        return self._key == other._key

    def __lt__(self, other: ClientVersion) -> bool:
        return self._key < other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __str__(self) -> str:
        return self.text


def _pre_release(qualifier: str) -> tuple[tuple[int, int | str], ...] | None:
    tokens = _TOKEN.findall(qualifier)
    if not tokens or tokens[0].lower() not in _PRE_RELEASE_MARKERS:
        return None
    # Tagged so numbers and words compare without a TypeError: rc1 < rc2, alpha < beta.
    return tuple((0, int(token)) if token.isdigit() else (1, token.lower()) for token in tokens)


# Asked every cycle for the same few strings (each client's version, each broker channel's holder release, about
# 25 a broker): each is parsed once while recently seen. ClientVersion is frozen, so the cached value is shared safely.
@functools.lru_cache(maxsize=4096)
def parse_version(text: str) -> ClientVersion | None:
    """The parsed version, or None when `text` is not a version (never a guess).

    `2.16.1-rdkafka-2.16.0` parses as 2.16.1 (the wrapper's own version); `embedded_librdkafka_text` gives the
    librdkafka part, to be parsed on its own.
    """
    text = text.strip()
    match = _VERSION.match(text)
    if match is None:
        return None
    qualifier = match.group("qualifier")
    release = tuple(int(part) for part in match.group("release").split("."))
    return ClientVersion(text=text, release=release, pre_release=_pre_release(qualifier), qualifier=qualifier)


def parse_bound(text: str) -> ClientVersion:
    """A version written in a policy: release numbers, optionally a pre-release marker (`1.8.2`, `4.0.0-rc1`).

    Stricter than `parse_version`: a flavour such as `-ccs` does not change the order, so in a policy it can only
    be a typo (`1.x`). ValueError says what is allowed.
    """
    version = parse_version(text)
    if version is None or (version.qualifier and version.pre_release is None):
        raise ValueError(
            f"{text!r} is not a version; expected digits separated by dots like 1.8.2, "
            "optionally with a pre-release marker like 4.0.0-rc1 or 1.0.0-SNAPSHOT"
        )
    return version


def embedded_librdkafka_text(text: str) -> str | None:
    """The `Y` of an `X-rdkafka-Y` version string, or None when there is none."""
    _, separator, embedded = text.strip().partition(EMBEDDED_LIBRDKAFKA_SEPARATOR)
    return embedded if separator else None


_OPERATORS: dict[str, Callable[[ClientVersion, ClientVersion], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}
_CLAUSE = re.compile(r"^\s*(?P<op>==|!=|>=|<=|>|<)?\s*(?P<version>\S+)\s*$")


@dataclass(frozen=True)
class VersionSpecifier:
    """A version or a range: `1.9.0` (that version) or comparisons joined by commas, all of which must hold."""

    text: str
    clauses: tuple[tuple[str, ClientVersion], ...]

    def matches(self, version: ClientVersion) -> bool:
        return all(_OPERATORS[op](version, bound) for op, bound in self.clauses)

    def __str__(self) -> str:
        return self.text


def parse_specifier(text: str) -> VersionSpecifier:
    """Parse `1.9.0` or `>=1.9.0,<1.9.2`; ValueError naming the part that is wrong and what is allowed."""
    clauses: list[tuple[str, ClientVersion]] = []
    for part in text.split(","):
        match = _CLAUSE.match(part)
        if match is None:
            raise ValueError(
                f"{part.strip()!r} in {text!r} is not a version or a comparison; "
                "allowed: a version like 1.9.0, or ==, !=, >=, <=, >, < followed by a version, joined by commas"
            )
        try:
            version = parse_bound(match.group("version"))
        except ValueError as exc:
            raise ValueError(f"in {text!r}: {exc}") from None
        clauses.append((match.group("op") or "==", version))
    return VersionSpecifier(text=text, clauses=tuple(clauses))
