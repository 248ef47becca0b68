"""The command line: each command's flags, and exit code 2 with the problem on stderr for a configuration error."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from exporter import cli
from exporter.cli import EXIT_CONFIG, main
from exporter.config.schema import ConfigError
from exporter.config.settings import Settings

CONFIG_FLAGS = ["-h", "--config", "--log.level", "--log.format"]


def help_of(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--help"])
    assert exited.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize(
    ("command", "flags"),
    [
        (
            "serve",
            [*CONFIG_FLAGS, "--web.listen-address", "--host", "--port", "--web.telemetry-path", "--web.config.file"],
        ),
        ("check-config", [*CONFIG_FLAGS, "--web.config.file"]),
        ("collect-once", CONFIG_FLAGS),
    ],
)
def test_each_command_takes_its_flags(command: str, flags: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    options = help_of([command], capsys).split("options:", 1)[1]
    assert re.findall(r"(?m)^  (-[-\w.]+)", options) == flags


def test_the_former_log_flag_is_an_alias(capsys: pytest.CaptureFixture[str]) -> None:
    assert "--log.level LEVEL, --log-level LEVEL" in help_of(["serve"], capsys)


@pytest.mark.parametrize(
    ("given", "level"),
    [("debug", "debug"), ("INFO", "info"), ("warn", "warn"), ("WARNING", "warn"), ("Error", "error")],
)
def test_log_levels_in_prometheus_and_python_spelling(given: str, level: str) -> None:
    assert cli._log_level(given) == level


def test_an_unknown_log_level_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--log.level", "loud"])
    assert exited.value.code == 2
    assert "argument --log.level/--log-level: 'loud' is not a log level; allowed: debug, info, warn, error" in (
        capsys.readouterr().err
    )


def test_a_bad_listen_address_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--web.listen-address", "9784"])
    assert exited.value.code == 2
    assert (
        "argument --web.listen-address: '9784' is not a listen address; allowed: host:port, :port or "
        "[IPv6 address]:port, port 1-65535"
    ) in capsys.readouterr().err


def serve_args(*argv: str) -> argparse.Namespace:
    return cli._parser().parse_args(["serve", *argv])


SETTINGS = Settings(clusters=[{"name": "c", "bootstrap_servers": ["k:1"]}], web={"host": "10.0.0.1", "port": 9000})


@pytest.mark.parametrize(
    ("argv", "address", "path"),
    [
        ((), ("10.0.0.1", 9000), "/metrics"),
        (("--web.listen-address", ":9784"), (None, 9784), "/metrics"),
        (("--web.listen-address", "[::1]:9784", "--web.telemetry-path", "/prom"), ("::1", 9784), "/prom"),
        (("--host", "127.0.0.1"), ("127.0.0.1", 9000), "/metrics"),
        (("--port", "9999"), ("10.0.0.1", 9999), "/metrics"),
    ],
)
def test_where_serve_listens(argv: tuple[str, ...], address: tuple[str | None, int], path: str) -> None:
    listen = cli._listen(serve_args(*argv), SETTINGS)
    assert (listen.address, listen.telemetry_path) == (address, path)


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (
            ("--web.listen-address", ":1", "--port", "2"),
            "give --web.listen-address or its aliases --host/--port, not both",
        ),
        (
            ("--web.telemetry-path", "/healthz"),
            "--web.telemetry-path: '/healthz' is taken by the exporter itself (/, /healthz, /readyz, "
            "/api/client-metrics)",
        ),
        (
            ("--web.telemetry-path", "metrics"),
            "--web.telemetry-path: 'metrics' is not a URL path: it must start with '/' and hold no space, '?' or '#'",
        ),
    ],
)
def test_contradicting_or_bad_listen_flags_are_refused(argv: tuple[str, ...], problem: str) -> None:
    with pytest.raises(ConfigError) as refused:
        cli._listen(serve_args(*argv), SETTINGS)
    assert str(refused.value) == problem


def test_top_level_help_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    text = " ".join(help_of([], capsys).split())  # argparse wraps to the terminal's width
    assert "{serve,check-config,collect-once,inventory}" in text
    assert "collect-once run one collection cycle, print the exposition, exit (1 when every broker failed)" in text


def test_inventory_takes_the_request_log_job_flags(capsys: pytest.CaptureFixture[str]) -> None:
    text = help_of(["inventory"], capsys)
    assert "--input PATH [PATH ...]" in text and "--output DIR" in text and "--config" not in text


def test_collect_once_has_no_web_config_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["collect-once", "--web.config.file", "web.yaml"])
    assert exited.value.code == 2
    assert "unrecognized arguments: --web.config.file" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["serve", "check-config", "collect-once"])
def test_an_invalid_config_exits_2_before_anything_starts(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("clusters: []\n")
    assert main([command, "--config", str(config)]) == EXIT_CONFIG
    assert capsys.readouterr().err.startswith(
        f"kafka-client-exporter: config file {config} is invalid:\n  clusters: List should have at least 1 item"
    )


@pytest.mark.parametrize(
    ("command", "first_problem"),
    [
        ("serve", "web config file {web} does not exist"),
        ("check-config", "web config file {web} does not exist"),
        # collect-once serves no HTTP: it never reads the web config, so the policy is the first problem.
        ("collect-once", "policy file {policy} is invalid:\n  softwares: unknown field"),
    ],
)
def test_which_files_each_command_reads(
    command: str, first_problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    web, policy = tmp_path / "absent-web.yaml", tmp_path / "policy.yaml"
    policy.write_text("softwares: {}\n")
    config = tmp_path / "config.yaml"
    config.write_text(
        f"web: {{config_file: {web}}}\npolicy_file: {policy}\nclusters:\n  - {{name: c, bootstrap_servers: [k:1]}}\n"
    )
    assert main([command, "--config", str(config)]) == EXIT_CONFIG
    assert capsys.readouterr().err.startswith("kafka-client-exporter: " + first_problem.format(web=web, policy=policy))
