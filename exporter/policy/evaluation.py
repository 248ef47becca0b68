"""Judging one (client software name, version) pair against a loaded policy.

Order of verdicts, first match wins (one reason per series):
1. `unknown_software`: the name is `unknown` (the client sent no KIP-511 information: ApiVersions v0-v2, such as
   aiokafka, kafkajs, Java clients before 2.4 or librdkafka before 1.4).
2. `not_allowed`: an allow-list is set and the name is not on it.
3. `denied_version`: the version (or, for an `X-rdkafka-Y` version, the embedded librdkafka Y against the
   `librdkafka` rules) matches a denied version or range. An explicit denial is more specific than a floor.
4. `below_minimum`: the version (or the embedded librdkafka) is below the minimum for its name.
A version that does not parse gets no version verdict at all; `PolicyCheck.unparseable` says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from exporter.policy.model import UNKNOWN_SOFTWARE
from exporter.policy.versions import ClientVersion, VersionSpecifier, embedded_librdkafka_text, parse_version

__all__ = [
    "BELOW_MINIMUM",
    "DENIED_VERSION",
    "LIBRDKAFKA",
    "NOT_ALLOWED",
    "REASONS",
    "UNKNOWN_SOFTWARE_REASON",
    "CompiledRule",
    "Policy",
    "PolicyCheck",
    "Violation",
]

BELOW_MINIMUM: Final = "below_minimum"
DENIED_VERSION: Final = "denied_version"
UNKNOWN_SOFTWARE_REASON: Final = "unknown_software"
NOT_ALLOWED: Final = "not_allowed"
#: Every value the `reason` label of kafka_client_policy_violation_connections can take.
REASONS: Final = (BELOW_MINIMUM, DENIED_VERSION, UNKNOWN_SOFTWARE_REASON, NOT_ALLOWED)
#: The name whose rules also apply to the `Y` of an `X-rdkafka-Y` version.
LIBRDKAFKA: Final = "librdkafka"


@dataclass(frozen=True)
class Violation:
    reason: str  # one of REASONS
    detail: str  # a sentence for logs and the status page


@dataclass(frozen=True)
class PolicyCheck:
    """A verdict plus whether a version rule could not be applied because the version did not parse.

    `unparseable` is True only when the policy has version rules for this software (or for the librdkafka it
    embeds) and the version it sent could not be parsed: those connections are neither passed nor failed.
    """

    violation: Violation | None
    unparseable: bool


@dataclass(frozen=True)
class CompiledRule:
    """One name's rules, parsed once at load time."""

    minimum: ClientVersion | None
    denied: tuple[VersionSpecifier, ...]

    @property
    def has_version_rules(self) -> bool:
        return self.minimum is not None or bool(self.denied)


@dataclass(frozen=True)
class _Target:
    """A version to judge: the client's own, or the librdkafka embedded in it."""

    software: str
    text: str
    rule: CompiledRule
    embedded: bool


class Policy:
    """A loaded, validated policy. Immutable; `check` and `evaluate` are safe to call from any thread."""

    def __init__(self, rules: Mapping[str, CompiledRule], allowed_software: frozenset[str] | None) -> None:
        self._rules = MappingProxyType(dict(rules))
        self._allowed = allowed_software

    @property
    def rules(self) -> Mapping[str, CompiledRule]:
        """Rules by client software name (read-only), for status pages and documentation."""
        return self._rules

    @property
    def allowed_software(self) -> frozenset[str] | None:
        """The allow-list, or None when any name is allowed."""
        return self._allowed

    def evaluate(self, software_name: str, software_version: str) -> Violation | None:
        """The violation of this name/version pair, or None when it complies (or cannot be judged)."""
        return self.check(software_name, software_version).violation

    def check(self, software_name: str, software_version: str) -> PolicyCheck:
        if software_name == UNKNOWN_SOFTWARE:
            return PolicyCheck(
                Violation(UNKNOWN_SOFTWARE_REASON, "the client sent no software name or version (KIP-511)"), False
            )
        if self._allowed is not None and software_name not in self._allowed:
            allowed = ", ".join(sorted(self._allowed))
            return PolicyCheck(
                Violation(NOT_ALLOWED, f"{software_name} is not in the allowed software list ({allowed})"), False
            )
        parsed: list[tuple[_Target, ClientVersion]] = []
        unparseable = False
        for target in self._targets(software_name, software_version):
            version = parse_version(target.text)
            if version is None:
                unparseable = True
            else:
                parsed.append((target, version))
        for target, version in parsed:
            for specifier in target.rule.denied:
                if specifier.matches(version):
                    subject = _subject(software_name, software_version, target)
                    return PolicyCheck(
                        Violation(DENIED_VERSION, f"{subject} is denied by the policy entry {specifier.text!r}"),
                        unparseable,
                    )
        for target, version in parsed:
            minimum = target.rule.minimum
            if minimum is not None and version < minimum:
                subject = _subject(software_name, software_version, target)
                return PolicyCheck(
                    Violation(BELOW_MINIMUM, f"{subject} is below the {target.software} minimum {minimum.text}"),
                    unparseable,
                )
        return PolicyCheck(None, unparseable)

    def _targets(self, software_name: str, software_version: str) -> list[_Target]:
        targets: list[_Target] = []
        own = self._rules.get(software_name)
        if own is not None and own.has_version_rules:
            targets.append(_Target(software_name, software_version, own, embedded=False))
        embedded = embedded_librdkafka_text(software_version)
        librdkafka = self._rules.get(LIBRDKAFKA)
        if (
            embedded is not None
            and software_name != LIBRDKAFKA
            and librdkafka is not None
            and librdkafka.has_version_rules
        ):
            targets.append(_Target(LIBRDKAFKA, embedded, librdkafka, embedded=True))
        return targets


def _subject(software_name: str, software_version: str, target: _Target) -> str:
    if target.embedded:
        return f"{software_name} {software_version} embeds {LIBRDKAFKA} {target.text}, which"
    return f"{software_name} {software_version}"
