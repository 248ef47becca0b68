"""Hostile input at the edges, one home for every case: what real fleets feed the inventory (cut-off archives,
no or no readable log, clientIds no CSV writer expects) and what stops the exporter at start-up (an address in use
or of no interface, no Java for JMX, an unreadable TLS file, an invalid environment override): one clear line, the
right exit code, nothing lost."""

from __future__ import annotations

import csv
import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from exporter.request_logs import log_format as lf
from exporter.sources.inventory import load_publication
from tests.support.inventory_command import run_inventory

REPO = Path(__file__).resolve().parents[2]


# The inventory job (the command a user runs, in its own process).

INVENTORY_SAMPLES = REPO / "samples" / "request-logs" / "double"
#: Values a client may choose for its clientId, and a principal (an SSL DN) may carry: quotes, delimiters, line
#: breaks, tabs, emoji, right-to-left text, and what spreadsheets take for a formula.
HOSTILE_VALUES = [
    'weird,"quoted",id',
    "two\nlines",
    "carriage\rreturn",
    "tab\tseparated",
    "emoji \U0001f984 client",
    "\u05e2\u05d1\u05e8\u05d9\u05ea rtl-\u0645\u0631\u062d\u0628\u0627",
    '=HYPERLINK("http://x")',
    "+1-555",
    "-2+3",
    "@SUM(A1)",
    "  padded  ",
    '"',
]

# An empty clientId and none at all (JSON null): the job keeps them apart, as "" and null.
NO_CLIENT_ID: list[str | None] = ["", None]


def _published(output: Path, table: str) -> list[dict[str, str]]:
    with (output / "current" / f"{table}.csv").open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.slow
# Two Spark runs: with both cores shared (load 14) they took over the suite's 300 s per test.
@pytest.mark.timeout(600)
def test_inventory_a_cut_off_gzip_is_skipped_and_named_and_the_rest_is_read(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    shutil.copytree(INVENTORY_SAMPLES / "broker-2", logs / "broker-2")
    whole = gzip.compress((INVENTORY_SAMPLES / "broker-3" / "kafka-request.log").read_bytes() * 50)
    cut = logs / "broker-3" / "kafka-request.log.2026-01-01-02.gz"
    cut.parent.mkdir()
    cut.write_bytes(whole[: len(whole) // 2])  # an external gzip still writing it
    (logs / "broker-3" / "kafka-request.log.2026-01-01-03.gz").write_bytes(b"")  # 0 bytes: nothing to read
    output = tmp_path / "inventory"
    done = run_inventory("--incremental", "--input", str(logs), "--output", str(output))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and done.stderr.count("\tat ") == 0, done.stderr[-3000:]
    assert f"file:{cut}: cut off or corrupt (java.io.EOFException: Unexpected end of input stream)" in done.stderr
    assert "35 lines (0 not parsed)" in done.stdout and "1 skipped unreadable" in done.stdout
    malformed = _published(output, "malformed")
    assert [(m["reason"], m["lines"], m["file"]) for m in malformed] == [
        (lf.REASON_UNREADABLE_FILE, "0", f"file:{cut}")
    ]
    run = json.loads((output / "publication.json").read_text(encoding="utf-8"))
    assert run["files"]["skipped_unreadable"] == 1 and run["unreadable"][0]["path"] == f"file:{cut}"

    # Once complete, the next run reads it: it was not recorded as read.
    cut.write_bytes(whole)
    again = run_inventory("--incremental", "--input", str(logs), "--output", str(output))
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"{35 + 32 * 50:,} lines (0 not parsed)" in again.stdout and "1 read new" in again.stdout
    assert _published(output, "malformed") == []


@pytest.mark.slow
def test_inventory_with_no_log_file_or_none_readable_fails_in_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    (empty / "broker-1").mkdir(parents=True)
    (empty / "broker-1" / "controller.log").write_text("not a request log\n", encoding="utf-8")
    done = run_inventory("--input", str(empty), "--output", str(tmp_path / "out"))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        f"kafka-client-exporter inventory: no kafka-request.log* or server.log* under {empty}"
    )
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "kafka-request.log.2026-01-01-02.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    done = run_inventory("--input", str(broken), "--output", str(tmp_path / "out"))
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"kafka-client-exporter inventory: none of the 1 log file(s) under {broken} could be read:")
    assert not (tmp_path / "out" / "publication.json").exists()


def _hostile_lines() -> str:
    from tests.support import request_log_fixtures as fx

    lines = []
    for index, value in enumerate([*HOSTILE_VALUES, *NO_CLIENT_ID]):
        line = fx.json_line(
            3,
            "METADATA",
            12,
            "PLACEHOLDER",
            f"10.20.1.11:9092-10.20.4.{index + 1}:5000{index % 10}-{index}",
            ("apache-kafka-java", "3.9.0"),
            principal=f"User:CN={value or index},O=Example",
        )
        lines.append(line.replace('"clientId":"PLACEHOLDER"', '"clientId":' + json.dumps(value)))
    return "\n".join(lines) + "\n"


@pytest.mark.slow
def test_inventory_csv_reads_back_exactly_with_the_csv_module(tmp_path: Path) -> None:
    """Every CSV is RFC 4180: Python's csv module reads back exactly the values of the Parquet tables."""
    import duckdb  # an independent Parquet reader (installed by the set-up for the benchmarks)

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "kafka-request.log").write_text(_hostile_lines(), encoding="utf-8")
    output = tmp_path / "inventory"
    done = run_inventory("--input", str(logs), "--output", str(output))
    assert done.returncode == 0, done.stderr[-3000:]
    for table in ("clients", "api_usage"):
        rows = _published(output, table)
        relation = duckdb.sql(
            f"select client_id, principal from read_parquet('{output / 'current' / table}/*.parquet')"
        )
        assert relation is not None
        parquet = relation.fetchall()
        # Python 3.11's csv module reads a null (an empty field) and an empty string ("") both as "".
        as_text = {(r["client_id"], r["principal"]) for r in rows}
        assert as_text == {(client or "", principal) for client, principal in parquet} and len(rows) == len(parquet)
        assert {client for client, _ in as_text} == {*HOSTILE_VALUES, ""}
        assert all(r["software_name"] == "apache-kafka-java" and r["listener"] == "PLAINTEXT" for r in rows)
    # The exporter tells them apart, as the Parquet table does.
    reading = load_publication(output, max_loaded=1000)
    loaded = {(i.client_id, i.principal) for identities in reading.identities.values() for i in identities}
    clients = duckdb.sql(f"select client_id, principal from read_parquet('{output / 'current' / 'clients'}/*.parquet')")
    assert clients is not None
    assert loaded == set(clients.fetchall())
    assert {client for client, _ in loaded} >= {None, ""}


# The exporter's start-up: what stops it is said in one line, exit code 1 (2 for the configuration), no traceback.

CONFIG = """\
clusters:
  - name: prod
    bootstrap_servers: ["127.0.0.1:{port}"]
"""


def _exporter(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "exporter", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


@pytest.fixture
def config(tmp_path: Path) -> Path:
    from harness.ports import free_port

    path = tmp_path / "config.yaml"
    path.write_text(CONFIG.format(port=free_port()), encoding="utf-8")  # nothing listens there
    return path


def test_serve_on_an_address_in_use_says_so_in_one_line(config: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        done = _exporter("serve", "--config", str(config), "--web.listen-address", address)
        assert done.returncode == 1
        assert done.stderr == (
            f"kafka-client-exporter: cannot listen on {address}: address already in use (another process is "
            "listening there; stop it or choose another --web.listen-address)\n"
        )
        debug = _exporter("serve", "--config", str(config), "--web.listen-address", address, "--log.level", "debug")
    assert debug.returncode == 1
    assert "Traceback" in debug.stderr and "Errno 98" in debug.stderr
    assert debug.stderr.splitlines()[-1] == done.stderr.strip()


def test_serve_on_an_address_of_no_interface_here_says_so_in_one_line(config: Path) -> None:
    # 192.0.2.0/24 is TEST-NET-1 (RFC 5737): no machine has it, so the bind fails without any traffic.
    done = _exporter("serve", "--config", str(config), "--web.listen-address", "192.0.2.1:9784")
    assert done.returncode == 1
    assert done.stderr == (
        "kafka-client-exporter: cannot listen on 192.0.2.1:9784: cannot assign requested address "
        "(no network interface of this machine has that address)\n"
    )


def test_serve_without_java_for_jmx_says_so_in_one_line(config: Path, tmp_path: Path) -> None:
    config.write_text(config.read_text(encoding="utf-8") + "    jmx: {port: 9999}\n", encoding="utf-8")
    java = tmp_path / "jre" / "bin" / "java"
    for command in ("serve", "collect-once"):
        done = _exporter(command, "--config", str(config), env={"KCE_JAVA__PATH": str(java)})
        assert done.returncode == 1, done.stderr
        assert done.stderr == (
            f"kafka-client-exporter: java executable '{java}' not found; the JMX polls of cluster(s) prod need a "
            "Java runtime: install one, or set java.path (KCE_JAVA__PATH)\n"
        )


def test_an_unreadable_tls_file_is_named_in_one_line(config: Path, tmp_path: Path) -> None:
    (tmp_path / "server.key").mkdir()  # a mount gone wrong: a directory where the key should be
    web_config = tmp_path / "web.yml"
    web_config.write_text("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n", encoding="utf-8")
    (tmp_path / "server.crt").write_text("", encoding="utf-8")
    done = _exporter("serve", "--config", str(config), "--web.config.file", str(web_config))
    assert done.returncode == 2
    assert done.stderr == (
        f"kafka-client-exporter: tls_server_config.key_file: cannot read {tmp_path / 'server.key'}: Is a directory\n"
    )


def test_an_invalid_environment_override_is_named_with_its_value(config: Path) -> None:
    done = _exporter("check-config", "--config", str(config), env={"KCE_COLLECTION__INTERVAL_SECONDS": "often"})
    assert done.returncode == 2
    assert done.stderr.splitlines()[:2] == [
        f"kafka-client-exporter: config file {config} with the environment override "
        "KCE_COLLECTION__INTERVAL_SECONDS is invalid:",
        "  collection.interval_seconds: Input should be a valid number, unable to parse string as a number "
        "(got 'often') from environment variable KCE_COLLECTION__INTERVAL_SECONDS",
    ]
    broken_json = '[{"name": "prod", "bootstrap_servers": ["127.0.0.1:9092"]'
    done = _exporter("check-config", "--config", str(config), env={"KCE_CLUSTERS": broken_json})
    assert done.returncode == 2
    assert done.stderr == (
        "kafka-client-exporter: environment variable KCE_CLUSTERS is invalid: lists and sections take JSON, and "
        f"this is not JSON: Expecting ',' delimiter: line 1 column 58 (char 57) (got {broken_json!r})\n"
    )
