"""The demo's port arguments: a clear error for what is no port, and a real port for 0 or a taken one (the URLs it
prints and the targets Prometheus scrapes name it)."""

from __future__ import annotations

import socket

import pytest

from demo.__main__ import chosen_port, main


@pytest.mark.parametrize("given", ["70000", "-1", "http"])
def test_what_is_no_port_is_refused_with_what_is_allowed(given: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--port", given])
    assert exit_.value.code == 2
    assert (
        f"argument --port: '{given}' is not a TCP port: give 0 to 65535 (0: any free port)" in capsys.readouterr().err
    )


def test_zero_and_a_taken_port_become_a_free_one_and_a_free_one_is_kept() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        busy = taken.getsockname()[1]
        assert chosen_port(busy) not in (0, busy)
    assert chosen_port(0) != 0
    free = chosen_port(0)
    assert chosen_port(free) == free
