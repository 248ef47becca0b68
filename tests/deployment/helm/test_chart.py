"""The Helm chart: lint, render (defaults and every toggle), schema checks, validators, and no drift from the
alert rules and dashboards it ships."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from exporter.config.settings import load_settings
from exporter.config.web_config import VERIFY_MODES, WebConfigFile

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "helm" / "kafka-client-exporter"
HELM = ROOT / ".tools" / "helm" / "helm"
NODE_MODULES = ROOT / ".tools" / "node" / "node_modules"
ALL_TOGGLES = Path(__file__).with_name("all-toggles.values.yaml")
CORE_KINDS = {"ServiceAccount", "ConfigMap", "Service", "Deployment", "Secret", "NetworkPolicy"}
PACKAGING = "run scripts/package-chart.sh"

Helm = Callable[..., subprocess.CompletedProcess]


@pytest.fixture(scope="module")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Helm:
    assert HELM.exists(), "helm is missing: run scripts/setup.sh (scripts/setup.d/30-helm.sh)"
    home = tmp_path_factory.mktemp("helm-home")
    env = {**os.environ, **{f"HELM_{kind}_HOME": str(home / kind.lower()) for kind in ("CACHE", "CONFIG", "DATA")}}

    def run(*args: str | Path) -> subprocess.CompletedProcess:
        return subprocess.run([HELM, *args], capture_output=True, text=True, env=env, timeout=120)

    return run


def render(helm: Helm, *args: str | Path) -> str:
    result = helm("template", "kce", CHART, "--namespace", "monitoring", *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def documents(manifest: str) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(manifest) if doc]


def by_kind(manifest: str, kind: str) -> list[dict]:
    return [doc for doc in documents(manifest) if doc["kind"] == kind]


def validate_core(manifest: str, tmp_path: Path) -> None:
    path = tmp_path / "manifest.yaml"
    path.write_text(manifest)
    result = subprocess.run(
        [ROOT / ".venv" / "bin" / "kubernetes-validate", "--strict", path], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    passed = set(re.findall(r"passed for resource (\w+)/", result.stdout))
    assert passed == {doc["kind"].lower() for doc in documents(manifest) if doc["kind"] in CORE_KINDS}


def test_lint(helm: Helm) -> None:
    for extra in ((), ("--values", ALL_TOGGLES)):
        result = helm("lint", "--strict", CHART, *extra)
        assert result.returncode == 0, result.stdout + result.stderr


def test_defaults_render_a_locked_down_deployment(helm: Helm, tmp_path: Path) -> None:
    manifest = render(helm)
    assert {doc["kind"] for doc in documents(manifest)} == {"ServiceAccount", "ConfigMap", "Service", "Deployment"}
    validate_core(manifest, tmp_path)
    (deployment,) = by_kind(manifest, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["automountServiceAccountToken"] is False
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["resources"]["limits"]["memory"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http-metrics", "scheme": "HTTP"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http-metrics", "scheme": "HTTP"}
    assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]
    assert not any("--web.config.file" in arg for arg in container["args"])


def test_every_toggle_on_renders_valid_objects(helm: Helm, tmp_path: Path) -> None:
    manifest = render(helm, "--values", ALL_TOGGLES)
    kinds = {doc["kind"] for doc in documents(manifest)}
    assert kinds == CORE_KINDS | {"ServiceMonitor", "PrometheusRule"}
    validate_core(manifest, tmp_path)
    path = tmp_path / "crds.yaml"
    path.write_text(manifest)
    crds = subprocess.run(
        ["node", Path(__file__).with_name("validate_crds.mjs"), NODE_MODULES, path],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert crds.returncode == 0, crds.stdout + crds.stderr
    assert "ok ServiceMonitor" in crds.stdout and "ok PrometheusRule" in crds.stdout

    (deployment,) = by_kind(manifest, "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert "--web.config.file=/etc/kafka-client-exporter/web/web-config.yml" in container["args"]
    # RequireAndVerifyClientCert: the kubelet has no client certificate, so the probes are TCP checks.
    assert container["livenessProbe"]["tcpSocket"] == {"port": "http-metrics"}
    secret_mounts = {m["mountPath"]: m for m in container["volumeMounts"] if m["name"].startswith("secret-")}
    assert secret_mounts["/etc/kafka-client-exporter/secrets/prod"]["readOnly"] is True
    (monitor,) = by_kind(manifest, "ServiceMonitor")
    assert monitor["spec"]["endpoints"][0]["scheme"] == "https"
    dashboards = [doc for doc in by_kind(manifest, "ConfigMap") if "grafana_dashboard" in doc["metadata"]["labels"]]
    assert dashboards and all(doc["metadata"]["labels"]["grafana_dashboard"] == "1" for doc in dashboards)
    assert all(doc["metadata"]["namespace"] == "monitoring" for doc in dashboards)


def test_tls_without_required_client_certificates_probes_over_https(helm: Helm) -> None:
    manifest = render(
        helm, "--set", "webConfig.enabled=true,webConfig.tls.enabled=true,webConfig.tls.secretName=exporter-tls"
    )
    (deployment,) = by_kind(manifest, "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"
    (secret,) = by_kind(manifest, "Secret")
    web_config = yaml.safe_load(secret["stringData"]["web-config.yml"])
    assert web_config["tls_server_config"]["cert_file"] == "/etc/kafka-client-exporter/tls/tls.crt"
    assert "client_ca_file" not in web_config["tls_server_config"]


@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        (("--set-string", "service.port=9784"), "/service/port"),
        (("--set-string", "serviceMonitor.enabled=yes"), "/serviceMonitor/enabled"),
        (("--set-string", "config.collection.interval_seconds=fast"), "/config/collection/interval_seconds"),
        (("--set", "webConfig.tls.clientAuthType=RequireAnyClientCert"), "/webConfig/tls/clientAuthType"),
        (("--set", "webConfig.basicAuthUsers.prometheus=plaintext"), "/webConfig/basicAuthUsers/prometheus"),
        (("--set", "secretMounts[0].name=prod,secretMounts[0].secretName=s"), "/secretMounts/0"),
        (("--set", "serviceMonitr.enabled=true"), "serviceMonitr"),
        (("--set", "webConfig.enabled=true,webConfig.tls.enabled=true"), "webConfig.tls.secretName"),
    ],
)
def test_wrong_values_are_rejected(helm: Helm, args: tuple[str, ...], complaint: str) -> None:
    result = helm("template", "kce", CHART, *args)
    assert result.returncode != 0
    assert complaint in result.stderr


def test_chart_offers_only_client_auth_types_the_exporter_supports() -> None:
    schema = yaml.safe_load((CHART / "values.schema.json").read_text())
    offered = schema["properties"]["webConfig"]["properties"]["tls"]["properties"]["clientAuthType"]["enum"]
    assert set(offered) == set(VERIFY_MODES)


def sources(directory: str, pattern: str) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted((ROOT / directory).glob(pattern))}


def test_packaged_copies_equal_their_sources() -> None:
    for source_dir, pattern, copy_dir in (
        ("alerts", "*.rules.yaml", "files/alerts"),
        ("dashboards/grafana", "*.json", "files/dashboards"),
    ):
        expected = sources(source_dir, pattern)
        packaged = {path.name: path.read_bytes() for path in sorted((CHART / copy_dir).glob(pattern))}
        assert packaged.keys() == expected.keys(), f"{copy_dir} lists other files than {source_dir}: {PACKAGING}"
        for name, content in expected.items():
            assert packaged[name] == content, f"{copy_dir}/{name} differs from {source_dir}/{name}: {PACKAGING}"


def raw_documents(manifest: str) -> list[str]:
    return [text for text in re.split(r"^---\n", manifest, flags=re.MULTILINE) if text.strip()]


def test_rendered_rules_and_dashboards_equal_their_sources_byte_for_byte(helm: Helm) -> None:
    manifest = render(helm, "--set", "prometheusRule.enabled=true,dashboards.enabled=true")
    rules = sources("alerts", "*.rules.yaml")
    assert rules, "alerts/ holds no *.rules.yaml"
    rendered_rules: dict[str, bytes] = {}
    for text in raw_documents(manifest):
        match = re.search(r'kafka-client-exporter/source: "alerts/([^"]+)"\n', text)
        if match:
            spec = text.split("\nspec:\n", 1)[1]
            lines = [line.removeprefix("  ") for line in spec.split("\n")]
            rendered_rules[match.group(1)] = "\n".join(lines).rstrip("\n").encode() + b"\n"
    assert rendered_rules.keys() == rules.keys(), PACKAGING
    for name, content in rules.items():
        assert rendered_rules[name] == content, f"rendered PrometheusRule differs from alerts/{name}: {PACKAGING}"
    for rule in by_kind(manifest, "PrometheusRule"):
        source = rule["metadata"]["annotations"]["kafka-client-exporter/source"]
        assert rule["spec"] == yaml.safe_load((ROOT / source).read_text())

    boards = sources("dashboards/grafana", "*.json")
    assert boards, "dashboards/grafana holds no *.json"
    rendered_boards = {
        name: content.encode()
        for doc in by_kind(manifest, "ConfigMap")
        if "grafana_dashboard" in doc["metadata"]["labels"]
        for name, content in doc["data"].items()
    }
    assert rendered_boards == boards, f"rendered dashboards differ from dashboards/grafana: {PACKAGING}"


def test_rendered_configs_are_accepted_by_the_exporter(helm: Helm, tmp_path: Path) -> None:
    manifest = render(helm, "--values", ALL_TOGGLES)
    config_map = next(doc for doc in by_kind(manifest, "ConfigMap") if "config.yaml" in doc["data"])
    # The Secrets' files, where the chart mounts them, moved under tmp_path for this check.
    secrets = tmp_path / "secrets"
    for name in ("jmx-password", "sasl-password", "ca.crt"):
        (secrets / "prod" / name).parent.mkdir(parents=True, exist_ok=True)
        (secrets / "prod" / name).write_text("x\n")
    config = tmp_path / "config.yaml"
    config.write_text(config_map["data"]["config.yaml"].replace("/etc/kafka-client-exporter/secrets", str(secrets)))
    settings = load_settings(config)
    assert [cluster.name for cluster in settings.clusters] == ["prod"]
    (secret,) = by_kind(manifest, "Secret")
    web_config = WebConfigFile.model_validate(yaml.safe_load(secret["stringData"]["web-config.yml"]))
    assert web_config.tls_server_config is not None
    assert web_config.tls_server_config.client_auth_type == "RequireAndVerifyClientCert"
    assert set(web_config.basic_auth_users) == {"prometheus"}
