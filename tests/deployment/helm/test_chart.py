"""The Helm chart: lint, render (defaults and every toggle), schema checks, validators, and no drift from the
dashboards it ships. The alert rules, the config schema and the helm test pod have their own test files."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from exporter.config.settings import load_settings
from exporter.config.web_config import VERIFY_MODES, WebConfigFile
from tests.deployment.helm.chart import (
    ALL_TOGGLES,
    CHART,
    NODE_MODULES,
    PACKAGING,
    ROOT,
    Helm,
    by_kind,
    documents,
    render,
)

CORE_KINDS = {
    "ServiceAccount",
    "ConfigMap",
    "Service",
    "Deployment",
    "Secret",
    "NetworkPolicy",
    "PodDisruptionBudget",
    "Pod",
    "CronJob",
    "PersistentVolumeClaim",
}


def validate_core(manifest: str, tmp_path: Path) -> None:
    path = tmp_path / "manifest.yaml"
    path.write_text(manifest)
    result = subprocess.run(
        [ROOT / ".venv" / "bin" / "kubernetes-validate", "--strict", path], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    passed = set(re.findall(r"passed for resource (\w+)/", result.stdout))
    assert passed == {doc["kind"].lower() for doc in documents(manifest) if doc["kind"] in CORE_KINDS}


def validate_crds(manifest: str, tmp_path: Path) -> str:
    path = tmp_path / "crds.yaml"
    path.write_text(manifest)
    crds = subprocess.run(
        ["node", Path(__file__).with_name("validate_crds.mjs"), NODE_MODULES, path],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert crds.returncode == 0, crds.stdout + crds.stderr
    return crds.stdout


def exporter_container(manifest: str) -> dict:
    (deployment,) = by_kind(manifest, "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container


def test_lint(helm: Helm) -> None:
    for extra in ((), ("--values", ALL_TOGGLES)):
        result = helm("lint", "--strict", CHART, *extra)
        assert result.returncode == 0, result.stdout + result.stderr


def test_defaults_render_a_locked_down_deployment(helm: Helm, tmp_path: Path) -> None:
    manifest = render(helm)
    kinds = {doc["kind"] for doc in documents(manifest)}
    assert kinds == {"ServiceAccount", "ConfigMap", "Service", "Deployment", "Pod"}
    validate_core(manifest, tmp_path)
    (deployment,) = by_kind(manifest, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = exporter_container(manifest)
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["automountServiceAccountToken"] is False
    assert "imagePullSecrets" not in pod and "hostAliases" not in pod
    assert container["image"] == "kafka-client-exporter:0.1.0"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["resources"]["limits"]["memory"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http-metrics", "scheme": "HTTP"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http-metrics", "scheme": "HTTP"}
    assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]
    assert container["args"] == [
        "serve",
        "--config=/etc/kafka-client-exporter/config.yaml",
        "--web.listen-address=:9784",
    ]


def test_every_toggle_on_renders_valid_objects(helm: Helm, tmp_path: Path) -> None:
    manifest = render(helm, "--values", ALL_TOGGLES)
    kinds = {doc["kind"] for doc in documents(manifest)}
    assert kinds == CORE_KINDS | {"ServiceMonitor", "PrometheusRule", "AlertmanagerConfig"}
    validate_core(manifest, tmp_path)
    crds = validate_crds(manifest, tmp_path)
    assert "ok ServiceMonitor" in crds and "ok PrometheusRule" in crds and "ok AlertmanagerConfig" in crds

    (deployment,) = by_kind(manifest, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = exporter_container(manifest)
    # image.registry wins over global.imageRegistry; the global pull secrets (a bare name) join the chart's.
    assert container["image"] == "mirror.example:5000/kafka-client-exporter:0.1.0"
    assert pod["imagePullSecrets"] == [{"name": "registry"}, {"name": "shared-registry"}]
    assert pod["hostAliases"] == [{"ip": "10.0.0.12", "hostnames": ["kafka-0.kafka"]}]
    # extraArgs come last, after the chart's own arguments.
    assert container["args"][-2:] == [
        "--web.config.file=/etc/kafka-client-exporter/web/web-config.yml",
        "--log.level=debug",
    ]
    assert {"name": "KCE_LOG_LEVEL", "value": "DEBUG"} in container["env"]
    assert container["envFrom"] == [{"configMapRef": {"name": "kafka-client-exporter-env", "optional": True}}]
    policy_mount = {"name": "policy", "mountPath": "/etc/kafka-client-exporter/policy", "readOnly": True}
    assert policy_mount in container["volumeMounts"]
    assert {"name": "policy", "configMap": {"name": "kafka-client-policy"}} in pod["volumes"]
    # RequireAndVerifyClientCert: the kubelet has no client certificate, so the probes are TCP checks.
    assert container["livenessProbe"]["tcpSocket"] == {"port": "http-metrics"}
    secret_mounts = {m["mountPath"]: m for m in container["volumeMounts"] if m["name"].startswith("secret-")}
    assert secret_mounts["/etc/kafka-client-exporter/secrets/prod"]["readOnly"] is True

    (budget,) = by_kind(manifest, "PodDisruptionBudget")
    assert budget["spec"]["maxUnavailable"] == 1
    assert budget["spec"]["selector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    (service,) = by_kind(manifest, "Service")
    assert service["metadata"]["labels"]["team"] == "streaming"
    (monitor,) = by_kind(manifest, "ServiceMonitor")
    assert monitor["metadata"]["namespace"] == "prometheus"
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["monitoring"]}
    assert monitor["spec"]["jobLabel"] == "app.kubernetes.io/instance"
    assert monitor["spec"]["targetLabels"] == ["team"]
    assert monitor["spec"]["endpoints"][0]["scheme"] == "https"
    # Each rule's action written out, as the operator's CRD would default it: applied as stored, no drift to diff.
    assert monitor["spec"]["endpoints"][0]["relabelings"] == [
        {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node", "action": "replace"}
    ]
    assert monitor["spec"]["endpoints"][0]["metricRelabelings"] == [
        {"sourceLabels": ["__name__"], "regex": "go_.*", "action": "drop"}
    ]
    dashboards = [doc for doc in by_kind(manifest, "ConfigMap") if "grafana_dashboard" in doc["metadata"]["labels"]]
    assert dashboards and all(doc["metadata"]["labels"]["grafana_dashboard"] == "1" for doc in dashboards)
    assert all(doc["metadata"]["namespace"] == "monitoring" for doc in dashboards)

    # The NetworkPolicy admits the helm test pod next to the configured peers, and the test pod is not an
    # endpoint of the Service.
    (policy,) = [
        doc
        for doc in by_kind(manifest, "NetworkPolicy")
        if doc["spec"]["podSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    ]
    (test_pod,) = by_kind(manifest, "Pod")
    peers = policy["spec"]["ingress"][0]["from"]
    assert any(
        peer.get("podSelector", {}).get("matchLabels", {}).items() <= test_pod["metadata"]["labels"].items()
        for peer in peers
        if "namespaceSelector" not in peer
    )
    assert not service["spec"]["selector"].items() <= test_pod["metadata"]["labels"].items()


def test_pod_disruption_budget_takes_min_available_or_a_percentage(helm: Helm) -> None:
    for setting, expected in (
        ("podDisruptionBudget.minAvailable=1", {"minAvailable": 1}),
        ("podDisruptionBudget.maxUnavailable=50%", {"maxUnavailable": "50%"}),
        ("podDisruptionBudget.minAvailable=0", {"minAvailable": 0}),
    ):
        manifest = render(helm, "--set", f"podDisruptionBudget.enabled=true,{setting}")
        (budget,) = by_kind(manifest, "PodDisruptionBudget")
        assert {k: v for k, v in budget["spec"].items() if k != "selector"} == expected, setting


def test_global_values_of_a_parent_chart_are_accepted(helm: Helm) -> None:
    manifest = render(helm, "--set", "global.imageRegistry=registry.example,global.anything.else=1")
    assert exporter_container(manifest)["image"] == "registry.example/kafka-client-exporter:0.1.0"


def test_the_service_monitor_scrapes_the_configured_telemetry_path(helm: Helm) -> None:
    manifest = render(helm, "--set", "serviceMonitor.enabled=true,config.web.telemetry_path=/prometheus")
    (monitor,) = by_kind(manifest, "ServiceMonitor")
    assert monitor["spec"]["endpoints"][0]["path"] == "/prometheus"


def test_tls_without_required_client_certificates_probes_over_https(helm: Helm) -> None:
    manifest = render(
        helm, "--set", "webConfig.enabled=true,webConfig.tls.enabled=true,webConfig.tls.secretName=exporter-tls"
    )
    container = exporter_container(manifest)
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
        (("--set", "extraArgs[0]=1"), "/extraArgs/0"),
        (("--set", "hostAliases[0].ip=10.0.0.1"), "/hostAliases/0"),
        (("--set", "podDisruptionBudget.minAvailable=one"), "/podDisruptionBudget/minAvailable"),
        (
            (
                "--set",
                "podDisruptionBudget.enabled=true,podDisruptionBudget.minAvailable=1,podDisruptionBudget.maxUnavailable=1",
            ),
            "give minAvailable or maxUnavailable, not both",
        ),
        (("--set", "image.regsitry=r.example"), "regsitry"),
        (("--set", "serviceMonitor.targetLabels.team=x"), "/serviceMonitor/targetLabels"),
    ],
)
def test_wrong_values_are_rejected(helm: Helm, args: tuple[str, ...], complaint: str) -> None:
    result = helm("template", "kce", CHART, *args)
    assert result.returncode != 0
    assert complaint in result.stderr


def test_chart_offers_only_client_auth_types_the_exporter_supports() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    offered = schema["properties"]["webConfig"]["properties"]["tls"]["properties"]["clientAuthType"]["enum"]
    assert set(offered) == set(VERIFY_MODES)


def documented_values() -> set[str]:
    """Dotted value paths in the first column of the README's values table (`.x` continues the previous one)."""
    table = (CHART / "README.md").read_text().split("\n## Values\n", 1)[1].split("\n## ", 1)[0]
    paths: set[str] = set()
    for row in re.findall(r"^\| (.+?) \|", table, flags=re.MULTILINE):
        previous = ""
        for name in re.findall(r"`([^`]+)`", row):
            path = previous.rsplit(".", 1)[0] + name if name.startswith(".") else name
            paths.add(path)
            previous = path
    return paths


def test_schema_values_and_readme_name_the_same_values() -> None:
    """Every value has a schema entry and a row in the README's values table; the schema has nothing more."""
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert set(schema["properties"]) == set(values) | {"global"}
    documented = documented_values()
    # The objects the chart defines field by field (not Kubernetes pass-through objects, not the exporter's config,
    # which the project README documents) have each field in the table.
    chart_objects = [
        section
        for section, entry in schema["properties"].items()
        if entry.get("additionalProperties") is False and section != "config"
    ]
    wanted = set(values) | {"global"} | {f"{section}.{field}" for section in chart_objects for field in values[section]}
    # A section is documented by any row naming it or one of its fields.
    documented |= {path.rsplit(".", depth)[0] for path in documented for depth in range(1, path.count(".") + 1)}
    missing = sorted(wanted - documented)
    assert not missing, f"values missing from the README values table: {missing}"


def test_chart_metadata_points_at_the_project() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["home"] == "https://github.com/kafka-client-exporter/kafka-client-exporter"
    assert chart["sources"] == [chart["home"]]
    assert chart["kubeVersion"]
    icon = chart["icon"].removeprefix(
        "https://raw.githubusercontent.com/kafka-client-exporter/kafka-client-exporter/main/"
    )
    assert (ROOT / icon).is_file(), f"Chart.yaml icon {chart['icon']} names no file of this repository"


def sources(directory: str, pattern: str) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted((ROOT / directory).glob(pattern))}


def test_packaged_copies_equal_their_sources() -> None:
    for source_dir, pattern, copy_dir in (
        ("alerts/templates", "*.rules.yaml", "files/alerts"),
        ("alerts", "config.yaml", "files/alerts"),
        ("alerts", "alertmanager.example.yaml", "files/alerts"),
        ("dashboards/grafana", "*.json", "files/dashboards"),
    ):
        expected = sources(source_dir, pattern)
        packaged = {path.name: path.read_bytes() for path in sorted((CHART / copy_dir).glob(pattern))}
        assert packaged.keys() == expected.keys(), f"{copy_dir} lists other files than {source_dir}: {PACKAGING}"
        for name, content in expected.items():
            assert packaged[name] == content, f"{copy_dir}/{name} differs from {source_dir}/{name}: {PACKAGING}"


def test_rendered_dashboards_equal_their_sources_byte_for_byte(helm: Helm) -> None:
    manifest = render(helm, "--set", "dashboards.enabled=true")
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
