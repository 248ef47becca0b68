"""How a failed Kafka-protocol poll is classified and phrased, for the shapes kafka-python hands them over in."""

from __future__ import annotations

import ssl

import kafka.errors as Errors

from exporter.sources.base import Reason
from exporter.sources.kafka_session import classify, describe

EXPIRED = "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: certificate has expired (_ssl.c:1006)"


def test_a_failed_handshake_known_only_by_kafka_pythons_message_is_tls() -> None:
    # What is left when a later re-raise replaced the exception's context (the bootstrap retry).
    error = Errors.KafkaConnectionError(f"Handshake failed: {EXPIRED}")
    assert classify(error) is Reason.TLS
    assert describe(error) == f"TLS handshake failed: {EXPIRED}"


def test_a_failed_handshake_with_its_ssl_error_as_context_names_the_verification_failure() -> None:
    verification = ssl.SSLCertVerificationError(1, EXPIRED)
    verification.verify_message = "certificate has expired"
    try:
        try:
            raise verification
        except ssl.SSLError as exc:
            raise Errors.KafkaConnectionError(f"Handshake failed: {exc}") from None
    except Errors.KafkaConnectionError as error:
        error.__context__ = verification  # what a plain raise inside the except block keeps
        assert classify(error) is Reason.TLS
        assert describe(error) == "TLS handshake failed: the broker's certificate was refused: certificate has expired"


def test_a_refused_client_certificate_read_after_the_handshake_is_tls() -> None:
    # kafka-python wraps a failed read as KafkaConnectionError(<the SSLError>).
    alert = ssl.SSLError(1, "[SSL: TLSV13_ALERT_CERTIFICATE_REQUIRED] tlsv13 alert certificate required")
    error = Errors.KafkaConnectionError(alert)
    assert classify(error) is Reason.TLS
    assert describe(error).startswith("TLS handshake failed: the broker refused the client certificate")


def test_other_failures_keep_their_reason_and_lose_the_repeated_class_name() -> None:
    refused = Errors.KafkaConnectionError("socket disconnected")
    assert (classify(refused), describe(refused)) == (Reason.CONNECTION, "KafkaConnectionError: socket disconnected")
    sasl = Errors.SaslAuthenticationFailedError("Authentication failed: Invalid username or password")
    assert classify(sasl) is Reason.AUTHENTICATION
    assert (
        describe(sasl)
        == "[Error 58] SaslAuthenticationFailedError: Authentication failed: Invalid username or password"
    )
    assert describe(TimeoutError("no answer")) == "TimeoutError: no answer"
