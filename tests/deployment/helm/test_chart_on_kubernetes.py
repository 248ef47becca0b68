"""The chart's life on a real control plane (kube-apiserver, kube-controller-manager and etcd: control_plane.py), as
an operator lives it, with Helm 4's default server-side apply and with --server-side=false: install into a
namespace enforcing the `restricted` Pod Security Standard, upgrade through every toggle on and off, roll back to
each revision, uninstall, and upgrade a release of the chart as it was before it was first applied.

There is no kubelet: Pods stay Pending, and admission (PodSecurity, Priority, ServiceAccount) is what the Pods are
checked for. Each test has releases and namespaces of its own on the session's one control plane."""

from __future__ import annotations

import base64
import copy
import functools
import gzip
import itertools
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deployment.helm.chart import ALL_TOGGLES, CHART, ROOT, Helm
from tests.deployment.helm.control_plane import ControlPlane

# About 30 helm commands in the longest test: 55 to 85 s alone, more beside the rest of the suite on two cores.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

#: The commit whose chart had only been rendered, never applied: releases installed from it are upgraded here.
BEFORE_APPLIED = "1bbf1e1"
#: Helm's two ways of applying, named as the test ids show them.
APPLY_MODES = {"server-side": (), "client-side": ("--server-side=false",)}
_names = itertools.count(1)
#: The API server's refusal when a server-side apply switches a Deployment of the chart before to Recreate.
STRATEGY_LEFT_OVER = "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"
#: What Helm 4.1 says when a rollback finds the kept inventory claim it does not know of (see Release.rollback).
KEPT_CLAIM_ROLLBACK = 'original object PersistentVolumeClaim with the name "'

#: The values of README.md's "With Helm" (the image registry set as it says: --set image.registry=...).
README_VALUES: dict[str, Any] = {
    "image": {"registry": "registry.example"},
    "config": {
        "clusters": [
            {
                "name": "prod",
                "bootstrap_servers": ["kafka-0.kafka:9093"],
                "jmx": {
                    "port": 9999,
                    "username": "monitor",
                    "password_file": "/etc/kafka-client-exporter/secrets/prod/jmx-password",
                },
                "security": {
                    "protocol": "SASL_SSL",
                    "sasl": {
                        "mechanism": "SCRAM-SHA-512",
                        "username": "exporter",
                        "password_file": "/etc/kafka-client-exporter/secrets/prod/sasl-password",
                    },
                    "tls": {"ca_file": "/etc/kafka-client-exporter/secrets/prod/ca.crt"},
                },
            }
        ]
    },
    "secretMounts": [
        {"name": "prod", "secretName": "kafka-prod-exporter", "mountPath": "/etc/kafka-client-exporter/secrets/prod"}
    ],
    "serviceMonitor": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
    "prometheusRule": {"enabled": True, "additionalLabels": {"release": "kube-prometheus-stack"}},
    "dashboards": {"enabled": True},
}
#: The README's values without what the toggles below switch on.
BASE_VALUES = {key: value for key, value in README_VALUES.items() if key in ("image", "config", "secretMounts")}


def toggles(monitoring_namespace: str) -> dict[str, dict[str, Any]]:
    """Each optional part of the chart, as values over BASE_VALUES. The inventory's claim is ReadWriteOnce here;
    ReadWriteMany has a test of its own (a claim's access modes never change)."""
    return {
        "inventory": {
            "inventory": {
                "enabled": True,
                "jobs": [
                    {
                        "cluster": "prod",
                        "input": {
                            "path": "/var/log/kafka",
                            "volume": {"persistentVolumeClaim": {"claimName": "kafka-prod-logs", "readOnly": True}},
                        },
                    }
                ],
            }
        },
        "serviceMonitor": {
            "serviceMonitor": {
                "enabled": True,
                "namespace": monitoring_namespace,
                "labels": {"release": "kube-prometheus-stack"},
                "tlsConfig": {"ca": {"secret": {"name": "kafka-client-exporter-tls", "key": "ca.crt"}}},
                "basicAuth": {
                    "username": {"name": "kafka-client-exporter-scrape", "key": "username"},
                    "password": {"name": "kafka-client-exporter-scrape", "key": "password"},
                },
                "relabelings": [{"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"}],
            }
        },
        "prometheusRule": {"prometheusRule": {"enabled": True}},
        "dashboards": {"dashboards": {"enabled": True, "namespace": monitoring_namespace}},
        "alertmanagerConfig": {
            "alertmanagerConfig": {
                "enabled": True,
                "slack": {"apiURL": {"name": "kafka-alerting", "key": "slack-webhook-url"}},
                "pagerduty": {"routingKey": {"name": "kafka-alerting", "key": "pagerduty-routing-key"}},
            }
        },
        "secrets": {
            "webConfig": {
                "enabled": True,
                "basicAuthUsers": {"prometheus": "$2b$10$X0h1gDsPszWURQaxFh.zoubFi6DXncSjhoQNJgRrnGs7EsimhC7zG"},
                "tls": {"enabled": True, "secretName": "kafka-client-exporter-tls"},
            },
            "secretMounts": [
                *BASE_VALUES["secretMounts"],
                {
                    "name": "staging",
                    "secretName": "kafka-staging-exporter",
                    "mountPath": "/etc/kafka-client-exporter/secrets/staging",
                },
            ],
        },
    }


def merged(*layers: dict[str, Any]) -> dict[str, Any]:
    """Values files given in this order to helm (maps merged key by key, lists replaced)."""
    result: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if isinstance(value, dict) and isinstance(result.get(key), dict):
                result[key] = merged(result[key], value)
            else:
                result[key] = copy.deepcopy(value)
    return result


# ------------------------------------------------------------------------------------------------ the cluster's view
#: Every kind the chart renders (all of them in a namespace), by the path of its API group and version.
KINDS: dict[str, str] = {
    "ServiceAccount": "/api/v1",
    "ConfigMap": "/api/v1",
    "Secret": "/api/v1",
    "Service": "/api/v1",
    "PersistentVolumeClaim": "/api/v1",
    "Pod": "/api/v1",
    "Deployment": "/apis/apps/v1",
    "CronJob": "/apis/batch/v1",
    "NetworkPolicy": "/apis/networking.k8s.io/v1",
    "PodDisruptionBudget": "/apis/policy/v1",
    "ServiceMonitor": "/apis/monitoring.coreos.com/v1",
    "PrometheusRule": "/apis/monitoring.coreos.com/v1",
    "AlertmanagerConfig": "/apis/monitoring.coreos.com/v1alpha1",
}
PLURALS = {"NetworkPolicy": "networkpolicies"}


def collection(kind: str, namespace: str) -> str:
    return f"{KINDS[kind]}/namespaces/{namespace}/{PLURALS.get(kind, kind.lower() + 's')}"


def object_path(doc: dict[str, Any], namespace: str) -> str:
    return f"{collection(doc['kind'], doc['metadata'].get('namespace', namespace))}/{doc['metadata']['name']}"


def contains(live: object, rendered: object) -> bool:
    """Whether the live object holds everything the chart rendered (the server adds defaults and status; a null
    the chart renders means "absent")."""
    if isinstance(rendered, dict):
        return isinstance(live, dict) and all(
            (live.get(key) is None) if value is None else (key in live and contains(live[key], value))
            for key, value in rendered.items()
        )
    if isinstance(rendered, list):
        return isinstance(live, list) and len(live) == len(rendered) and all(map(contains, live, rendered))
    return live == rendered or str(live) == str(rendered)


def as_stored(doc: dict[str, Any]) -> dict[str, Any]:
    """A rendered object as the API server stores it, as far as the chart's objects need: a Secret's stringData
    is written into its data, base64-encoded."""
    stored = {key: value for key, value in doc.items() if key != "status"}
    if doc["kind"] == "Secret" and "stringData" in doc:
        encoded = {key: base64.b64encode(str(value).encode()).decode() for key, value in doc["stringData"].items()}
        stored["data"] = {**(doc.get("data") or {}), **encoded}
        del stored["stringData"]
    return stored


class Release:
    """A release of the chart in a namespace of its own (enforcing `restricted`), with helm's apply mode fixed at
    install time (upgrades and rollbacks follow it: Helm 4's --server-side=auto)."""

    def __init__(
        self, plane: ControlPlane, helm: Helm, mode: str, tmp_path: Path, chart: Path = CHART, name: str = "kce"
    ) -> None:
        self.plane, self.helm, self.mode, self.tmp_path, self.chart, self.name = (
            plane,
            helm,
            mode,
            tmp_path,
            chart,
            name,
        )
        number = next(_names)
        self.namespace = f"kce-{number}"
        self.monitoring = f"monitoring-{number}"
        for namespace in (self.namespace, self.monitoring):
            plane.create_namespace(
                namespace,
                {
                    "pod-security.kubernetes.io/enforce": "restricted",
                    "pod-security.kubernetes.io/enforce-version": "latest",
                },
            )
        self.jobs = itertools.count(1)
        #: The revisions `helm rollback` had to be run twice for (Release.rollback).
        self.rolled_back_twice: list[int] = []
        self.values_files = itertools.count(1)

    def values_file(self, values: dict[str, Any]) -> Path:
        path = self.tmp_path / f"values-{self.namespace}-{next(self.values_files)}.yaml"
        path.write_text(yaml.safe_dump(values))
        return path

    def run(self, *args: str | Path) -> subprocess.CompletedProcess:
        # Every revision kept (Helm keeps 10 by default): the tests roll back to each.
        keep = ("--history-max", "0") if args[0] in ("upgrade", "rollback") else ()
        return self.helm(*args, "--namespace", self.namespace, *keep)

    def ok(self, *args: str | Path) -> str:
        result = self.run(*args)
        assert result.returncode == 0, f"helm {' '.join(map(str, args))}:\n{result.stdout}{result.stderr}"
        return str(result.stdout)

    def install(self, values: dict[str, Any]) -> None:
        self.ok("install", self.name, self.chart, "--values", self.values_file(values), *APPLY_MODES[self.mode])

    def attempt_upgrade(self, values: dict[str, Any], chart: Path | None = None) -> subprocess.CompletedProcess:
        """helm upgrade with these values alone (not merged into the last revision's): its result."""
        return self.run(
            "upgrade", self.name, chart or self.chart, "--values", self.values_file(values), "--reset-values"
        )

    def upgrade(self, values: dict[str, Any], chart: Path | None = None) -> None:
        result = self.attempt_upgrade(values, chart)
        assert result.returncode == 0, f"helm upgrade:\n{result.stdout}{result.stderr}"

    def rollback(self, revision: int) -> None:
        result = self.run("rollback", self.name, str(revision))
        if result.returncode != 0 and KEPT_CLAIM_ROLLBACK in result.stderr:
            # Helm 4.1 does not adopt the inventory claim kept (helm.sh/resource-policy: keep) by a revision without
            # it; the failed rollback's revision has it, so the same command then succeeds (docs/helm.md).
            result = self.run("rollback", self.name, str(revision))
            self.rolled_back_twice.append(revision)
        assert result.returncode == 0, f"helm rollback {revision}:\n{result.stdout}{result.stderr}"

    def stored(self, revision: int | None = None) -> dict[str, Any]:
        """A revision as Helm stores it (Secret sh.helm.release.v1.<name>.v<revision>, base64 of gzipped JSON):
        read from the API, which costs a fraction of a helm process."""
        if revision is None:
            secrets = self.plane.items(
                f"/api/v1/namespaces/{self.namespace}/secrets", labelSelector=f"owner=helm,name={self.name}"
            )
            revision = max(int(secret["metadata"]["labels"]["version"]) for secret in secrets)
        secret = self.plane.get(
            f"/api/v1/namespaces/{self.namespace}/secrets/sh.helm.release.v1.{self.name}.v{revision}"
        )
        return dict(json.loads(gzip.decompress(base64.b64decode(base64.b64decode(secret["data"]["release"])))))

    @property
    def revision(self) -> int:
        return int(self.stored()["version"])

    def manifest(self, revision: int | None = None) -> list[dict[str, Any]]:
        return [doc for doc in yaml.safe_load_all(self.stored(revision)["manifest"]) if doc]

    def namespaces(self) -> tuple[str, str]:
        return self.namespace, self.monitoring

    def labelled(self, kind: str) -> list[dict[str, Any]]:
        """The objects of `kind` in the release's namespaces that carry its instance label."""
        return [
            item
            for namespace in self.namespaces()
            for item in self.plane.items(
                collection(kind, namespace), labelSelector=f"app.kubernetes.io/instance={self.name}"
            )
        ]

    def failed_creates(self) -> list[str]:
        return [
            f"{event['involvedObject']['kind']}/{event['involvedObject']['name']}: {event['message']}"
            for namespace in self.namespaces()
            for event in self.plane.items(f"/api/v1/namespaces/{namespace}/events", fieldSelector="reason=FailedCreate")
        ]


# ---------------------------------------------------------------------------------------------------------- checks
def check_applied(release: Release) -> None:
    """The cluster holds exactly the release's current manifest: each object as rendered (server defaults aside),
    applied the release's way, nothing of another revision left but what the chart keeps, and every Pod its
    controllers make admitted."""
    manifest = release.manifest()
    rendered = {(doc["kind"], doc["metadata"]["name"]) for doc in manifest}
    field_manager_operation = "Apply" if release.mode == "server-side" else "Update"
    for doc in manifest:
        live = release.plane.get(object_path(doc, release.namespace))
        assert contains(live, as_stored(doc)), (
            f"{doc['kind']}/{doc['metadata']['name']} differs from the manifest:\nlive: {live}\nrendered: {doc}"
        )
        helm_fields = [entry for entry in live["metadata"]["managedFields"] if entry["manager"] == "helm"]
        assert {entry["operation"] for entry in helm_fields} >= {field_manager_operation}, helm_fields
    kept = {("PersistentVolumeClaim", claim["metadata"]["name"]) for claim in release.labelled("PersistentVolumeClaim")}
    for kind in KINDS:
        if kind == "Pod":
            continue
        left = {(kind, item["metadata"]["name"]) for item in release.labelled(kind)} - rendered - kept
        assert not left, f"objects of another revision left: {left}"
    check_pods_admitted(release, manifest)


def check_pods_admitted(release: Release, manifest: list[dict[str, Any]]) -> None:
    """The Deployment's Pod of its current template exists, and so does a Pod of a Job started from each CronJob
    (as NOTES.txt tells the operator to); no controller logged a Pod the API refused."""
    plane, namespace = release.plane, release.namespace
    (deployment,) = (doc for doc in manifest if doc["kind"] == "Deployment")
    path = object_path(deployment, namespace)

    def rolled_out() -> bool:
        live = plane.get(path)
        status = live.get("status", {})
        return status.get("observedGeneration") == live["metadata"]["generation"] and status.get("updatedReplicas") == 1

    plane.wait(rolled_out, f"a Pod of Deployment {deployment['metadata']['name']}'s current template", 60)
    for cronjob in (doc for doc in manifest if doc["kind"] == "CronJob"):
        live = plane.get(object_path(cronjob, namespace))
        job_name = f"{cronjob['metadata']['name'][:46]}-t{next(release.jobs)}"
        plane.create(
            f"/apis/batch/v1/namespaces/{namespace}/jobs",
            {
                "metadata": {
                    "name": job_name,
                    "annotations": {"cronjob.kubernetes.io/instantiate": "manual"},
                    "labels": live["spec"]["jobTemplate"]["metadata"].get("labels", {}),
                    # As kubectl create job --from=cronjob/... does: the CronJob owns it (uninstall removes it).
                    "ownerReferences": [
                        {
                            "apiVersion": "batch/v1",
                            "kind": "CronJob",
                            "name": live["metadata"]["name"],
                            "uid": live["metadata"]["uid"],
                            "controller": True,
                        }
                    ],
                },
                "spec": live["spec"]["jobTemplate"]["spec"],
            },
        )
        plane.wait(functools.partial(job_pods_or_refusals, release, job_name), f"a Pod of Job {job_name}")
    assert not release.failed_creates()


def job_pods_or_refusals(release: Release, job: str) -> list[Any]:
    pods = release.plane.items(f"/api/v1/namespaces/{release.namespace}/pods", labelSelector=f"job-name={job}")
    return pods or release.failed_creates()


def check_helm_test(release: Release) -> None:
    """`helm test`'s Pod is admitted (it then waits for a kubelet that never comes: the test times out) and is not
    left behind."""
    result = release.run("test", release.name, "--timeout", "3s")
    assert result.returncode != 0
    assert "forbidden" not in result.stderr.lower() and "not ready" in result.stderr, result.stderr
    pods = release.plane.items(
        f"/api/v1/namespaces/{release.namespace}/pods", labelSelector="app.kubernetes.io/component=helm-test"
    )
    assert not pods, [pod["metadata"]["name"] for pod in pods]


def check_uninstalled(release: Release, kept: set[str]) -> None:
    """After `helm uninstall`, only the claims the chart keeps remain (once the garbage collector has removed what
    the deleted objects owned: ReplicaSets, Jobs, Pods)."""
    release.ok("uninstall", release.name, "--wait")

    def leftovers() -> set[tuple[str, str]]:
        found = {(kind, item["metadata"]["name"]) for kind in KINDS for item in release.labelled(kind)}
        for kind, group in (("ReplicaSet", "/apis/apps/v1"), ("Job", "/apis/batch/v1")):
            for namespace in release.namespaces():
                found |= {
                    (kind, item["metadata"]["name"])
                    for item in release.plane.items(f"{group}/namespaces/{namespace}/{kind.lower()}s")
                }
        for namespace in release.namespaces():
            found |= {
                ("Pod", pod["metadata"]["name"]) for pod in release.plane.items(f"/api/v1/namespaces/{namespace}/pods")
            }
        return found

    want = {("PersistentVolumeClaim", name) for name in kept}
    release.plane.wait(lambda: leftovers() == want, f"only {want} left after helm uninstall", 60)


# ------------------------------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def cluster(control_plane: ControlPlane) -> ControlPlane:
    """What the all-toggles example needs to exist first: the PriorityClass and the StorageClass it names (without
    the class its Pods are refused; without the storage class its claim would only wait, Pending)."""
    control_plane.create(
        "/apis/scheduling.k8s.io/v1/priorityclasses", {"metadata": {"name": "monitoring"}, "value": 1000}
    )
    control_plane.create(
        "/apis/storage.k8s.io/v1/storageclasses", {"metadata": {"name": "fast"}, "provisioner": "example.com/none"}
    )
    return control_plane


@pytest.fixture(params=list(APPLY_MODES))
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def chart_before(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The chart as it was at BEFORE_APPLIED, from git."""
    where = tmp_path_factory.mktemp("chart-before")
    archive = subprocess.run(
        ["git", "-C", ROOT, "archive", "--format=tar", BEFORE_APPLIED, "helm/kafka-client-exporter"],
        capture_output=True,
        check=True,
        timeout=60,
    )
    subprocess.run(["tar", "-x", "-C", where], input=archive.stdout, check=True, timeout=60)
    return where / "helm" / "kafka-client-exporter"


# --------------------------------------------------------------------------------------------------------- tests
def test_readme_install_is_admitted_under_restricted(
    cluster: ControlPlane, cluster_helm: Helm, mode: str, tmp_path: Path
) -> None:
    release = Release(cluster, cluster_helm, mode, tmp_path)
    release.install(README_VALUES)
    check_applied(release)
    check_helm_test(release)
    check_uninstalled(release, kept=set())


def test_upgrade_through_every_toggle_then_roll_back_to_each_revision(
    cluster: ControlPlane, cluster_helm: Helm, mode: str, tmp_path: Path
) -> None:
    release = Release(cluster, cluster_helm, mode, tmp_path)
    parts = toggles(release.monitoring)
    release.install(BASE_VALUES)
    check_applied(release)
    on: list[str] = []
    for name in parts:  # each part on, the ones before it staying on
        on.append(name)
        release.upgrade(merged(BASE_VALUES, *(parts[part] for part in on)))
        check_applied(release)
    check_helm_test(release)
    for name in list(parts):  # then each off, the ones after it still on
        on.remove(name)
        release.upgrade(merged(BASE_VALUES, *(parts[part] for part in on)))
        check_applied(release)
    last = release.revision
    for revision in range(1, last + 1):
        release.rollback(revision)
        assert release.manifest() == release.manifest(revision)
        check_applied(release)
    # Only the rollback from a revision without the kept claim (the first revision's copy) to one with it, as
    # docs/helm.md says.
    assert release.rolled_back_twice == [2]
    check_uninstalled(release, kept={"kce-kafka-client-exporter-inventory"})


def test_a_shared_inventory_claim_and_a_change_of_access_modes(
    cluster: ControlPlane, cluster_helm: Helm, mode: str, tmp_path: Path
) -> None:
    release = Release(cluster, cluster_helm, mode, tmp_path)
    inventory = merged(BASE_VALUES, toggles(release.monitoring)["inventory"])
    shared = merged(inventory, {"inventory": {"persistence": {"accessModes": ["ReadWriteMany"]}}})
    claim = f"/api/v1/namespaces/{release.namespace}/persistentvolumeclaims/kce-kafka-client-exporter-inventory"
    release.install(shared)
    check_applied(release)
    (deployment,) = (doc for doc in release.manifest() if doc["kind"] == "Deployment")
    assert deployment["spec"]["strategy"]["type"] == "RollingUpdate"
    # A claim's access modes never change, also once the inventory is off (the claim is kept): the chart says so
    # and applies nothing, instead of the API server refusing the claim half-way through the upgrade.
    for before in (shared, BASE_VALUES):
        release.upgrade(before)
        revision = release.revision
        result = release.attempt_upgrade(inventory)
        assert result.returncode != 0
        assert (
            'inventory.persistence asks for accessModes ["ReadWriteOnce"], but claim kce-kafka-client-exporter-'
            'inventory exists with accessModes ["ReadWriteMany"]'
        ) in result.stderr, result.stderr
        assert release.revision == revision
    # What the message says to do.
    cluster.request("DELETE", claim)
    cluster.wait(lambda: not cluster.exists(claim), "the claim deleted")
    release.upgrade(inventory)
    check_applied(release)
    check_uninstalled(release, kept={"kce-kafka-client-exporter-inventory"})


def test_the_all_toggles_example_is_admitted(cluster: ControlPlane, cluster_helm: Helm, tmp_path: Path) -> None:
    release = Release(cluster, cluster_helm, "server-side", tmp_path)
    example = yaml.safe_load(ALL_TOGGLES.read_text())
    release.install(
        merged(
            example,
            {
                "serviceMonitor": {"namespace": release.monitoring},
                "dashboards": {"namespace": release.monitoring},
            },
        )
    )
    check_applied(release)
    check_uninstalled(release, kept={"kce-kafka-client-exporter-inventory"})


def test_a_release_of_the_chart_before_upgrades(
    cluster: ControlPlane, cluster_helm: Helm, mode: str, tmp_path: Path, chart_before: Path
) -> None:
    """A release installed from the chart before it was first applied (README values, no inventory; its `helm
    test` Pod left behind, as that chart left a failed one) upgrades to this chart with the same values, and then
    turns the inventory on, as docs/helm.md tells an operator to."""
    release = Release(cluster, cluster_helm, mode, tmp_path, chart=chart_before)
    release.install(README_VALUES)
    assert release.run("test", release.name, "--timeout", "2s").returncode != 0
    assert release.plane.items(
        f"/api/v1/namespaces/{release.namespace}/pods", labelSelector="app.kubernetes.io/component=helm-test"
    )
    release.chart = CHART
    release.upgrade(README_VALUES)
    check_applied(release)
    check_helm_test(release)  # which removes the old chart's leftover Pod first (before-hook-creation)
    release.upgrade(merged(README_VALUES, toggles(release.monitoring)["inventory"]))
    check_applied(release)
    check_uninstalled(release, kept={"kce-kafka-client-exporter-inventory"})


def test_turning_the_inventory_on_while_upgrading_from_the_chart_before(
    cluster: ControlPlane, cluster_helm: Helm, mode: str, tmp_path: Path, chart_before: Path
) -> None:
    """In one step: a client-side apply switches the Deployment to Recreate; a server-side apply cannot, as the
    rollingUpdate the API server filled in belongs to no applier (docs/helm.md): there the upgrade with the values
    as they were, then the one that turns the inventory on, as documented, works."""
    release = Release(cluster, cluster_helm, mode, tmp_path, chart=chart_before)
    release.install(README_VALUES)
    release.chart = CHART
    with_inventory = merged(README_VALUES, toggles(release.monitoring)["inventory"])
    result = release.attempt_upgrade(with_inventory)
    if mode == "server-side":
        assert result.returncode != 0 and STRATEGY_LEFT_OVER in result.stderr, result.stdout + result.stderr
        release.upgrade(README_VALUES)
        # The failed upgrade had created the CronJob before the Deployment; Helm compares with the last deployed
        # revision, which has none, so this one leaves it to the next (docs/helm.md).
        assert [cronjob["metadata"]["name"] for cronjob in release.labelled("CronJob")] == [
            "kce-kafka-client-exporter-inventory-prod"
        ]
        release.upgrade(with_inventory)
    else:
        assert result.returncode == 0, result.stderr
    check_applied(release)
