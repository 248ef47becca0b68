"""Server side of SASL on a SASL_PLAINTEXT or SASL_SSL listener: PLAIN and SCRAM-SHA-256/512 (RFC 5802), as Kafka's
SaslServerAuthenticator runs them over SaslHandshake v1 + SaslAuthenticate.

Kafka answers ApiVersions before authentication (docs/kafka-facts/protocol.md#apiversions-fallback) and closes the
connection on any other request, on a failed exchange (after sending SASL_AUTHENTICATION_FAILED), and on an
unknown mechanism (after sending UNSUPPORTED_SASL_MECHANISM with the enabled list). The unframed token
exchange that follows SaslHandshake v0 is not emulated: such a client is disconnected with a logged reason.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from dataclasses import dataclass, field
from typing import Literal

PLAIN = "PLAIN"
SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MECHANISMS = (PLAIN, *SCRAM_HASHES)
# Kafka's ScramMechanism default and minimum iteration count.
SCRAM_ITERATIONS = 4096

# How the broker checks the nonce of the SCRAM client-final message (docs/kafka-facts/protocol.md#scram-nonce):
# not at all, that it ends with the server's nonce (tolerating librdkafka < 2.6.1, which repeats the client
# nonce), or that it equals it (RFC 5802).
NonceCheck = Literal["none", "suffix", "exact"]

UNSUPPORTED_SASL_MECHANISM = 33
SASL_AUTHENTICATION_FAILED = 58


class SaslFailure(Exception):
    """The exchange failed: Kafka sends this message with SASL_AUTHENTICATION_FAILED, then disconnects."""


def _scram_unescape(name: str) -> str:
    # RFC 5802 §5.1: ',' and '=' in user names travel as '=2C' and '=3D'.
    return name.replace("=2C", ",").replace("=3D", "=")


@dataclass
class _ScramState:
    mechanism: str
    hash_name: str
    username: str
    client_first_bare: str
    server_first: str
    nonce: str
    nonce_check: NonceCheck
    salted_password: bytes

    def _hmac(self, key: bytes, message: bytes) -> bytes:
        return hmac.new(key, message, self.hash_name).digest()

    def finish(self, client_final: str) -> bytes:
        attributes = dict(part.split("=", 1) for part in client_final.split(",") if "=" in part)
        sent = attributes.get("r", "")
        if (self.nonce_check == "exact" and sent != self.nonce) or (
            self.nonce_check == "suffix" and not sent.endswith(self.nonce)
        ):
            raise SaslFailure("Authentication failed: Invalid nonce")
        without_proof = client_final.rsplit(",p=", 1)[0]
        auth_message = f"{self.client_first_bare},{self.server_first},{without_proof}".encode()
        client_key_expected = self._hmac(self.salted_password, b"Client Key")
        stored_key = hashlib.new(self.hash_name, client_key_expected).digest()
        signature = self._hmac(stored_key, auth_message)
        try:
            proof = base64.b64decode(attributes.get("p", ""), validate=True)
        except ValueError:
            raise SaslFailure("Authentication failed: Invalid client final message") from None
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=False))
        if len(proof) != len(signature) or not hmac.compare_digest(
            hashlib.new(self.hash_name, client_key).digest(), stored_key
        ):
            raise SaslFailure(
                "Authentication failed during authentication due to invalid credentials with SASL mechanism "
                f"{self.mechanism}"
            )
        server_signature = self._hmac(self._hmac(self.salted_password, b"Server Key"), auth_message)
        return b"v=" + base64.b64encode(server_signature)


@dataclass
class SaslSession:
    """One connection's authentication state."""

    users: dict[str, str]
    enabled: tuple[str, ...]
    nonce_check: NonceCheck = "exact"
    mechanism: str | None = None
    principal: str | None = None
    _scram: _ScramState | None = field(default=None, repr=False)

    @property
    def authenticated(self) -> bool:
        return self.principal is not None

    def handshake(self, mechanism: str) -> int:
        if mechanism not in self.enabled:
            return UNSUPPORTED_SASL_MECHANISM
        self.mechanism = mechanism
        return 0

    def authenticate(self, token: bytes) -> bytes:
        """One SaslAuthenticate round; returns the server's token or raises SaslFailure."""
        if self.mechanism == PLAIN:
            return self._plain(token)
        if self.mechanism in SCRAM_HASHES:
            return self._scram_round(token)
        raise SaslFailure("SaslAuthenticate before a successful SaslHandshake")

    def _plain(self, token: bytes) -> bytes:
        # RFC 4616: [authzid] NUL authcid NUL passwd; Kafka rejects an authzid that differs from authcid.
        parts = token.decode("utf-8", "replace").split("\0")
        if len(parts) != 3:
            raise SaslFailure("Invalid SASL/PLAIN response: expected 3 tokens")
        authzid, username, password = parts
        if authzid and authzid != username:
            raise SaslFailure("Authentication failed: Client requested an authorization id that is different")
        expected = self.users.get(username)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise SaslFailure("Authentication failed: Invalid username or password")
        self.principal = f"User:{username}"
        return b""

    def _scram_round(self, token: bytes) -> bytes:
        assert self.mechanism is not None
        text = token.decode("utf-8", "replace")
        if self._scram is None:
            gs2_cbind, _authzid, bare = [*text.split(",", 2), "", ""][:3]
            if gs2_cbind not in ("n", "y") or not bare:
                raise SaslFailure("Invalid SCRAM client first message")
            attributes = dict(part.split("=", 1) for part in bare.split(",") if "=" in part)
            username = _scram_unescape(attributes.get("n", ""))
            client_nonce = attributes.get("r", "")
            password = self.users.get(username)
            if password is None or not client_nonce:
                raise SaslFailure(
                    "Authentication failed during authentication due to invalid credentials with SASL mechanism "
                    f"{self.mechanism}"
                )
            hash_name = SCRAM_HASHES[self.mechanism]
            salt = os.urandom(16)
            nonce = client_nonce + base64.b64encode(os.urandom(18)).decode()
            server_first = f"r={nonce},s={base64.b64encode(salt).decode()},i={SCRAM_ITERATIONS}"
            salted = hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, SCRAM_ITERATIONS)
            self._scram = _ScramState(
                self.mechanism, hash_name, username, bare, server_first, nonce, self.nonce_check, salted
            )
            return server_first.encode()
        server_final = self._scram.finish(text)
        self.principal = f"User:{self._scram.username}"
        return server_final
