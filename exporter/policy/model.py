"""The policy file's schema (pydantic): what a user may write and how each value is checked."""

from __future__ import annotations

import re

from pydantic import field_validator

from exporter.config.schema import StrictModel
from exporter.policy.versions import VersionSpecifier, parse_bound, parse_specifier

__all__ = ["UNKNOWN_SOFTWARE", "PolicyFile", "SoftwareRule"]

#: What Kafka records as name (and version) when a client sent no KIP-511 information (ApiVersions v0-v2).
UNKNOWN_SOFTWARE = "unknown"

# Kafka rejects an ApiVersions request whose name or version does not match this (ApiVersionsRequest.isValid),
# so a policy name outside it can never match a connection: it is a typo.
_KAFKA_SOFTWARE_NAME = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


def _check_software_name(name: str) -> str:
    if name == UNKNOWN_SOFTWARE:
        raise ValueError(
            f"{UNKNOWN_SOFTWARE!r} is what Kafka records for clients that sent no software name; "
            "such connections are always reported with reason unknown_software and cannot be listed here"
        )
    if not _KAFKA_SOFTWARE_NAME.match(name):
        raise ValueError(
            f"{name!r} can never be sent by a client: Kafka accepts only letters, digits, '.' and '-', "
            "starting and ending with a letter or digit"
        )
    return name


def _reject_yaml_number(value: object) -> object:
    # YAML reads an unquoted 1.10 as the float 1.1: refuse numbers rather than compare against the wrong version.
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise ValueError(f"write versions as quoted strings: YAML read this one as the number {value!r}")
    return value


class SoftwareRule(StrictModel):
    """Rules for one client software name. Fields left out keep the shipped default's value."""

    minimum_version: str | None = None
    denied_versions: tuple[str, ...] = ()

    @field_validator("minimum_version", mode="before")
    @classmethod
    def _quoted_minimum(cls, value: object) -> object:
        return _reject_yaml_number(value)

    @field_validator("denied_versions", mode="before")
    @classmethod
    def _quoted_denials(cls, values: object) -> object:
        if isinstance(values, list | tuple):
            for value in values:
                _reject_yaml_number(value)
        return values

    @field_validator("minimum_version")
    @classmethod
    def _parseable_minimum(cls, value: str | None) -> str | None:
        if value is not None:
            parse_bound(value)
        return value

    @field_validator("denied_versions")
    @classmethod
    def _parseable_specifiers(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for value in values:
            parse_specifier(value)
        return values

    def specifiers(self) -> tuple[VersionSpecifier, ...]:
        return tuple(parse_specifier(value) for value in self.denied_versions)


class PolicyFile(StrictModel):
    """One policy YAML document (the shipped default or a user's file)."""

    extend_default: bool = True
    allowed_software: tuple[str, ...] | None = None
    software: dict[str, SoftwareRule] = {}

    @field_validator("allowed_software")
    @classmethod
    def _valid_allowed_names(cls, names: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if names is None:
            return None
        if not names:
            raise ValueError("an empty allow-list would flag every client; leave allowed_software out to allow any")
        for name in names:
            _check_software_name(name)
        return names

    @field_validator("software")
    @classmethod
    def _valid_rule_names(cls, rules: dict[str, SoftwareRule]) -> dict[str, SoftwareRule]:
        for name in rules:
            _check_software_name(name)
        return rules
