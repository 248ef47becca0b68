"""What every source shares: the reasons a poll fails, as stable label values of
kafka_client_exporter_errors_total, and the exception that carries one."""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    """Why a poll failed; the value is the `reason` label, so renaming one is a breaking change."""

    TIMEOUT = "timeout"
    CONNECTION = "connection"
    AUTHENTICATION = "authentication"
    AUTHORIZATION = "authorization"
    JMX_ERROR = "jmx_error"
    INVALID_RESPONSE = "invalid_response"
    JAVA_NOT_FOUND = "java_not_found"
    PROTOCOL = "protocol"


class SourceError(Exception):
    """A failed poll, already phrased for the operator; `reason` goes into the errors counter."""

    def __init__(self, reason: Reason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
