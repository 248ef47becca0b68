"""The polling helper the end-to-end tests share: what it returns, what it retries and what its failure says."""

from __future__ import annotations

import pytest

from tests.support.waiting import eventually


def test_returns_the_first_truthy_value_after_retrying_falsy_values_and_os_errors() -> None:
    answers: list[object] = [None, ConnectionRefusedError("not listening yet"), [], ["ready"], ["later"]]

    def check() -> list[str] | None:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[return-value]

    assert eventually(check, 5, "ready", poll=0.001) == ["ready"]
    assert answers == [["later"]]


def test_a_timeout_names_what_was_awaited_the_last_error_and_the_context() -> None:
    def check() -> None:
        raise ConnectionRefusedError("port 9 closed")

    with pytest.raises(pytest.fail.Exception) as failed:
        eventually(check, 0.05, "the exporter's first cycle", poll=0.01, context=lambda: "exporter log: bind failed")
    message = str(failed.value)
    assert "the exporter's first cycle: not within 0 s" in message
    assert "port 9 closed" in message and message.endswith("exporter log: bind failed")


def test_other_errors_are_not_retried() -> None:
    calls = []

    def check() -> None:
        calls.append(1)
        raise KeyError("a bug in the check")

    with pytest.raises(KeyError):
        eventually(check, 5, "anything", poll=0.001)
    assert len(calls) == 1
