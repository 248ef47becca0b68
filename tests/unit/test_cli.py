"""The command line: each command's flags, and exit code 2 with the problem on stderr for a configuration error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from exporter.cli import EXIT_CONFIG, main

CONFIG_FLAGS = ["-h", "--config", "--log-level"]


def help_of(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--help"])
    assert exited.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize(
    ("command", "flags"),
    [
        ("serve", [*CONFIG_FLAGS, "--host", "--port", "--web.config.file"]),
        ("check-config", [*CONFIG_FLAGS, "--web.config.file"]),
        ("collect-once", CONFIG_FLAGS),
    ],
)
def test_each_command_takes_its_flags(command: str, flags: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    options = help_of([command], capsys).split("options:", 1)[1]
    assert re.findall(r"(?m)^  (-[-\w.]+)", options) == flags


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
