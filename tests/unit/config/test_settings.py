"""Configuration: YAML + KCE_ environment, clear errors with exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.cli import main
from exporter.config.schema import ConfigError
from exporter.config.settings import load_settings

VALID = """
clusters:
  - name: prod
    bootstrap_servers: ["kafka-0.example:9092"]
    jmx: {port: 9999}
    brokers:
      - {id: 1, jmx_url: "service:jmx:rmi:///jndi/rmi://kafka-0.example:9999/jmxrmi"}
      - {id: 2, host: kafka-1.example}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


def test_valid_file_loads_with_defaults(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, VALID))
    cluster = settings.clusters[0]
    assert cluster.name == "prod"
    assert [b.id for b in cluster.brokers or []] == [1, 2]
    assert settings.collection.interval_seconds == 30
    assert settings.collection.network_processor_label is False


def test_environment_overrides_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KCE_COLLECTION__INTERVAL_SECONDS", "15")
    monkeypatch.setenv("KCE_WEB__PORT", "9100")
    settings = load_settings(write(tmp_path, VALID))
    assert settings.collection.interval_seconds == 15
    assert settings.web.port == 9100


def test_target_release_defaults_to_4_0_0_and_follows_file_and_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert load_settings(write(tmp_path, VALID)).policy.target_release == "4.0.0"
    assert load_settings(write(tmp_path, "policy: {target_release: 4.1.0}\n" + VALID)).policy.target_release == "4.1.0"
    monkeypatch.setenv("KCE_POLICY__TARGET_RELEASE", "4.0.1")
    monkeypatch.setenv("KCE_POLICY_FILE", "/etc/kce/policy.yaml")
    settings = load_settings(write(tmp_path, VALID))
    assert (settings.policy.target_release, settings.policy_file) == ("4.0.1", Path("/etc/kce/policy.yaml"))


def test_clusters_from_environment_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KCE_CLUSTERS", '[{"name": "a", "bootstrap_servers": ["k:9092"], "jmx": {"port": 9999}}]')
    settings = load_settings(None)
    assert settings.clusters[0].brokers is None  # discovered from metadata


def test_password_from_file_is_secret(tmp_path: Path) -> None:
    secret = tmp_path / "jmx-password"
    secret.write_text("s3cret\n")
    text = VALID.replace("jmx: {port: 9999}", f"jmx: {{port: 9999, username: monitor, password_file: {secret}}}")
    settings = load_settings(write(tmp_path, text))
    assert settings.clusters[0].credentials() == ("monitor", "s3cret")
    assert "s3cret" not in repr(settings)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            VALID.replace("port: 9999", "port: 70000"),
            "clusters.0.jmx.port: Input should be less than or equal to 65535",
        ),
        (VALID.replace("name: prod", "name: ''"), "clusters.0.name"),
        (VALID.replace("kafka-0.example:9092", "kafka-0.example"), "is not host:port"),
        (VALID.replace("{id: 2, host: kafka-1.example}", "{id: 1, host: kafka-1.example}"), "repeated: [1]"),
        (VALID.replace('jmx_url: "service', 'jmx_url: "http'), "is not a JMX service URL"),
        (
            VALID + "colection: {}\n",
            "colection: unknown field; allowed: clusters, collection, java, log_format, log_level, policy, "
            "policy_file, web",
        ),
        (
            "policy: {target_release: '4.0'}\n" + VALID,
            "policy.target_release: Kafka release '4.0' is not in api_versions_by_release.csv; known: 2.0.0, ",
        ),
        ("policy: {target: 4.0.1}\n" + VALID, "policy.target: unknown field; allowed: target_release"),
        (VALID.replace("jmx: {port: 9999}", "jmx: {prot: 9999}"), "clusters.0.jmx.prot: unknown field; allowed:"),
        ("clusters: []\n", "clusters: List should have at least 1 item"),
        ("log_level: LOUD\n" + VALID, "log_level: Input should be 'debug', 'info', 'warn' or 'error'"),
        (
            "clusters:\n  - name: x\n    bootstrap_servers: [a:1]\n    jmx: {username: u}\n",
            "jmx is set but has no port",
        ),
        ("clusters:\n  - name: x\n", "nothing to poll: give bootstrap_servers"),
        ("clusters: [\n", "is not valid YAML at line"),
        ("- just\n- a list\n", "must hold a mapping"),
    ],
)
def test_invalid_config_names_the_field(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        load_settings(write(tmp_path, text))
    assert expected in str(excinfo.value)


def test_password_never_echoed_in_errors(tmp_path: Path) -> None:
    text = VALID.replace("jmx: {port: 9999}", "jmx: {port: 9999, password: hunter2}")
    with pytest.raises(ConfigError) as excinfo:
        load_settings(write(tmp_path, text))
    assert "a JMX password needs a username" in str(excinfo.value)
    assert "hunter2" not in str(excinfo.value)


def test_check_config_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-config", "--config", str(write(tmp_path, VALID))]) == 0
    assert "configuration OK: 1 cluster(s), 2 broker(s)" in capsys.readouterr().out
    assert main(["check-config", "--config", str(write(tmp_path, VALID.replace("9999", "0")))]) == 2
    err = capsys.readouterr().err
    assert "clusters.0.jmx.port: Input should be greater than or equal to 1 (got 0)" in err
    assert main(["check-config", "--config", str(tmp_path / "missing.yaml")]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("security", "expected"),
    [
        ("{protocol: SASL_SSL}", "protocol SASL_SSL needs a sasl section"),
        ("{protocol: SSL, sasl: {mechanism: PLAIN, username: u, password: p}}", "a sasl section needs protocol"),
        ("{protocol: PLAINTEXT, tls: {check_hostname: false}}", "a tls section needs protocol SSL or SASL_SSL"),
        ("{protocol: SASL_PLAINTEXT, sasl: {mechanism: SCRAM-SHA-512, username: u}}", "needs username and a password"),
        (
            "{protocol: SASL_PLAINTEXT, sasl: {mechanism: KERBEROS}}",
            "clusters.0.security.sasl.mechanism: Input should be",
        ),
        ("{protocol: SASL_PLAINTEXT, sasl: {mechanism: OAUTHBEARER}}", "needs token_file"),
        ("{protocol: SSL, tls: {ca_file: /nonexistent/ca.pem}}", "ca_file /nonexistent/ca.pem does not exist"),
        (
            "{protocol: SASL_PLAINTEXT, sasl: {mechanism: PLAIN, username: u, password_env: KCE_TEST_UNSET_VAR}}",
            "environment variable KCE_TEST_UNSET_VAR is not set",
        ),
        (
            "{protocol: SASL_PLAINTEXT, sasl: {mechanism: PLAIN, username: u, password: a, password_file: /x}}",
            "give one of password, password_file, password_env",
        ),
        ("{protocol: TLS}", "clusters.0.security.protocol: Input should be"),
    ],
)
def test_invalid_kafka_security_is_named(tmp_path: Path, security: str, expected: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"clusters:\n  - name: p\n    bootstrap_servers: [k:9093]\n    security: {security}\n")
    with pytest.raises(ConfigError) as excinfo:
        load_settings(path)
    assert expected in str(excinfo.value)


def test_sasl_password_from_env_and_file_never_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KCE_TEST_SASL_PW", "env-Secret-1")
    secret_file = tmp_path / "pw"
    secret_file.write_text("file-Secret-2\n")
    path = tmp_path / "c.yaml"
    path.write_text(
        "clusters:\n"
        "  - name: a\n    bootstrap_servers: [k:9093]\n"
        "    security: {protocol: SASL_PLAINTEXT,\n"
        "               sasl: {mechanism: PLAIN, username: u, password_env: KCE_TEST_SASL_PW}}\n"
        "  - name: b\n    bootstrap_servers: [k:9093]\n"
        "    security: {protocol: SASL_SSL,\n"
        f"               sasl: {{mechanism: SCRAM-SHA-256, username: u, password_file: {secret_file}}}}}\n"
    )
    settings = load_settings(path)
    secrets = [c.security.sasl.secret() for c in settings.clusters]  # type: ignore[union-attr]
    assert secrets == ["env-Secret-1", "file-Secret-2"]
    assert "env-Secret-1" not in repr(settings) and "file-Secret-2" not in repr(settings)
