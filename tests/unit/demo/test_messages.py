"""The demo's output when its threads speak at once: Alertmanager sends a group's messages side by side (seen in the
migration demo: two messages' titles on one line, their bodies after), and the roll says its steps meanwhile."""

from __future__ import annotations

import io
import sys
import threading

import pytest

from demo.common import MessagePrinter, say_line
from harness.alertmanager_process import Notification


def slack(title: str, body: list[str]) -> Notification:
    attachment = {"title": title, "text": "\n".join(body)}
    return Notification("slack", "kafka-clients-tickets", {"channel": "#kafka-clients", "attachments": [attachment]}, 0)


def test_each_message_is_said_whole_when_they_arrive_together() -> None:
    said: list[str] = []
    gate = threading.Barrier(8)

    def say(text: str) -> None:
        said.append(text)

    printer = MessagePrinter(say)
    messages = [slack(f"[FIRING:1] Alert{i}", [f"first line of {i}", f"second line of {i}"]) for i in range(8)]

    def send(message: Notification) -> None:
        gate.wait()
        printer(message)

    threads = [threading.Thread(target=send, args=(message,)) for message in messages]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(said) == sorted(
        f"demo: Alertmanager -> kafka-clients-tickets (Slack #kafka-clients): [FIRING:1] Alert{i}\n"
        f"        first line of {i}\n        second line of {i}"
        for i in range(8)
    )


def test_lines_said_from_many_threads_never_run_into_each_other(monkeypatch: pytest.MonkeyPatch) -> None:
    # A stream that yields between the pieces of a write, as print() gives up the GIL between its text and its newline.
    class Yielding(io.StringIO):
        def write(self, text: str) -> int:
            written = 0
            for piece in text.split("\n"):
                written += super().write(piece)
                threading.Event().wait(0.0005)
            return written + super().write("\n" * text.count("\n"))

    out = Yielding()
    monkeypatch.setattr(sys, "stdout", out)

    def say_lines(i: int) -> None:
        for n in range(20):
            say_line(f"line {i}.{n}")

    threads = [threading.Thread(target=say_lines, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(out.getvalue().splitlines()) == sorted(f"line {i}.{n}" for i in range(4) for n in range(20))
