"""The chart's inventory jobs: a CronJob per Kafka cluster running the real command over read-only logs, its output
on a claim the exporter mounts read-only, and the exporter's config.yaml pointing each cluster at its job's output."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import yaml

from exporter.config.settings import load_settings
from exporter.kafka_releases.upgrade_target import DEFAULT_TARGET_RELEASE
from exporter.request_logs.cli import add_arguments
from tests.deployment.helm.chart import CHART, Helm, by_kind, render
from tests.deployment.helm.test_chart import validate_core

VALUES = Path(__file__).with_name("inventory.values.yaml")
OUTPUT_DIR = "/var/lib/kafka-client-exporter/inventory"
CLAIM = "kce-kafka-client-exporter-inventory"
# The chart's defaults (values.yaml): the job runs on the exporter's own security context.
POD_SECURITY = {
    "runAsNonRoot": True,
    "runAsUser": 10001,
    "runAsGroup": 10001,
    "fsGroup": 10001,
    "fsGroupChangePolicy": "OnRootMismatch",
    "seccompProfile": {"type": "RuntimeDefault"},
}


def cron_jobs(manifest: str) -> dict[str, dict]:
    jobs = by_kind(manifest, "CronJob")
    return {doc["metadata"]["annotations"]["kafka-client-exporter/cluster"]: doc for doc in jobs}


def job_pod(cron_job: dict) -> dict:
    return cron_job["spec"]["jobTemplate"]["spec"]["template"]["spec"]


def parsed(args: list[str]) -> argparse.Namespace:
    """The container's arguments as `kafka-client-exporter inventory` reads them."""
    assert args[0] == "inventory"
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_arguments(parser)
    return parser.parse_args(args[1:])


def rendered_config(manifest: str) -> dict:
    config_map = next(doc for doc in by_kind(manifest, "ConfigMap") if "config.yaml" in doc["data"])
    config: dict = yaml.safe_load(config_map["data"]["config.yaml"])
    return config


def test_each_job_runs_the_incremental_inventory_of_its_cluster(helm: Helm, tmp_path: Path) -> None:
    manifest = render(helm, "--values", VALUES)
    validate_core(manifest, tmp_path)
    jobs = cron_jobs(manifest)
    assert set(jobs) == {"prod", "staging.eu", "lab"}
    assert jobs["staging.eu"]["metadata"]["name"] == "kce-kafka-client-exporter-inventory-staging-eu"
    assert jobs["prod"]["spec"]["schedule"] == "17 * * * *"
    assert jobs["staging.eu"]["spec"]["schedule"] == "47 */6 * * *"
    assert jobs["prod"]["spec"]["concurrencyPolicy"] == "Forbid"

    (container,) = job_pod(jobs["prod"])["containers"]
    assert container["image"] == "kafka-client-exporter-inventory:0.1.0"
    prod = parsed(container["args"])
    assert prod.incremental and prod.inputs == ["/var/log/kafka"] and prod.output == f"{OUTPUT_DIR}/prod"
    assert prod.master == "local[*]" and prod.target_release == "4.1.0"
    # The defaults keep Spark on loopback; a number from a values file is passed as written, not as 1.34217728e+08.
    assert {"spark.driver.host=127.0.0.1", "spark.driver.bindAddress=127.0.0.1"} <= set(prod.conf)
    assert "spark.sql.files.maxPartitionBytes=134217728" in prod.conf
    staging = parsed(job_pod(jobs["staging.eu"])["containers"][0]["args"])
    assert staging.inputs == ["s3a://kafka-logs/staging/"] and staging.output == f"{OUTPUT_DIR}/staging.eu"
    assert staging.conf[-1] == "spark.jars.packages=org.apache.hadoop:hadoop-aws:3.5.0"  # the job's own, last
    assert job_pod(jobs["staging.eu"])["containers"][0]["envFrom"] == [
        {"secretRef": {"name": "inventory-s3-credentials"}}
    ]


def test_the_jobs_judge_upgrades_against_the_exporters_target_release(helm: Helm) -> None:
    def targets(*values: str) -> dict[str, str]:
        jobs = cron_jobs(render(helm, "--values", VALUES, *values))
        return {cluster: parsed(job_pod(job)["containers"][0]["args"]).target_release for cluster, job in jobs.items()}

    assert targets() == {"prod": "4.1.0", "staging.eu": DEFAULT_TARGET_RELEASE, "lab": DEFAULT_TARGET_RELEASE}
    # The exporter's target reaches every job but the one that names its own.
    assert targets("--set-string", "config.policy.target_release=4.0.0") == {
        "prod": "4.1.0",
        "staging.eu": "4.0.0",
        "lab": "4.0.0",
    }


def test_job_pods_read_the_logs_read_only_and_write_only_the_claim(helm: Helm) -> None:
    manifest = render(helm, "--values", VALUES)
    jobs = cron_jobs(manifest)
    (deployment,) = by_kind(manifest, "Deployment")
    exporter_pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    for cluster, job in jobs.items():
        pod = job_pod(job)
        (container,) = pod["containers"]
        volumes = {volume["name"]: volume for volume in pod["volumes"]}
        mounts = {mount["mountPath"]: mount for mount in container["volumeMounts"]}
        assert pod["securityContext"] == POD_SECURITY and pod["automountServiceAccountToken"] is False
        assert pod["restartPolicy"] == "Never"
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
        assert container["resources"]["limits"] == {"cpu": "1", "memory": "2Gi"}
        # Spark's scratch space on a read-only root, and a home for the image's user, who has none.
        assert "emptyDir" in volumes[mounts["/tmp"]["name"]]
        assert {"name": "HOME", "value": "/tmp"} in container["env"]
        assert {"name": "SPARK_LOCAL_IP", "value": "127.0.0.1"} in container["env"]
        output = mounts[OUTPUT_DIR]
        assert not output.get("readOnly") and volumes[output["name"]]["persistentVolumeClaim"] == {"claimName": CLAIM}
        # Not an endpoint of the exporter's Service, nor counted by its disruption budget.
        pod_labels = job["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]
        assert not deployment["spec"]["selector"]["matchLabels"].items() <= pod_labels.items(), cluster
        # ReadWriteOnce: on the exporter's node, the only one that can mount the claim.
        (term,) = pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert term["topologyKey"] == "kubernetes.io/hostname"
        assert term["labelSelector"]["matchLabels"].items() <= exporter_pod_labels.items()
    prod_pod = job_pod(jobs["prod"])
    logs = next(mount for mount in prod_pod["containers"][0]["volumeMounts"] if mount["mountPath"] == "/var/log/kafka")
    assert logs["readOnly"] is True
    assert {"name": logs["name"], "persistentVolumeClaim": {"claimName": "kafka-prod-logs"}} in prod_pod["volumes"]
    lab_volumes = job_pod(jobs["lab"])["volumes"]
    assert {
        "name": "logs",
        "csi": {"driver": "logs.csi.example", "readOnly": True, "volumeAttributes": {"share": "kafka-lab"}},
    } in lab_volumes
    # An object-store input mounts nothing.
    assert {volume["name"] for volume in job_pod(jobs["staging.eu"])["volumes"]} == {"tmp", "inventory"}

    (claim,) = by_kind(manifest, "PersistentVolumeClaim")
    assert claim["metadata"]["name"] == CLAIM
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "5Gi"
    assert "storageClassName" not in claim["spec"]
    assert claim["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"


def test_the_exporter_reads_each_jobs_output_read_only(helm: Helm, tmp_path: Path) -> None:
    manifest = render(helm, "--values", VALUES)
    (deployment,) = by_kind(manifest, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    mount = next(mount for mount in container["volumeMounts"] if mount["mountPath"] == OUTPUT_DIR)
    assert mount["readOnly"] is True
    assert {"name": mount["name"], "persistentVolumeClaim": {"claimName": CLAIM}} in pod["volumes"]
    # A surge pod on another node could never mount the ReadWriteOnce claim.
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}

    clusters = {cluster["name"]: cluster for cluster in rendered_config(manifest)["clusters"]}
    assert clusters["prod"]["inventory"] == {"path": f"{OUTPUT_DIR}/prod"}
    assert clusters["staging.eu"]["inventory"] == {"path": f"{OUTPUT_DIR}/staging.eu"}
    assert "inventory" not in clusters["dev"]
    assert clusters["lab"]["inventory"] == {"path": "/srv/lab-inventory", "max_identity_series": 50}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(rendered_config(manifest)))
    settings = load_settings(config)
    paths = {cluster.name: cluster.inventory and str(cluster.inventory.path) for cluster in settings.clusters}
    assert paths == {
        "prod": f"{OUTPUT_DIR}/prod",
        "staging.eu": f"{OUTPUT_DIR}/staging.eu",
        "dev": None,
        "lab": "/srv/lab-inventory",
    }
    # The path the user chose over the job's output is worth a warning.
    notes = helm("install", "kce", CHART, "--values", VALUES, "--dry-run=client", "--namespace", "monitoring")
    assert notes.returncode == 0, notes.stderr
    assert "create job --from=cronjob/kce-kafka-client-exporter-inventory-prod" in notes.stdout
    # The series the exporter serves (exporter/collectors/catalog.py), by its name.
    assert 'kafka_client_exporter_up{source="inventory"} 0' in notes.stdout
    assert f"lab reads its inventory from /srv/lab-inventory, not from {OUTPUT_DIR}/lab" in notes.stdout


def test_a_shared_claim_lets_the_jobs_run_anywhere(helm: Helm) -> None:
    manifest = render(
        helm,
        "--values",
        VALUES,
        "--set",
        "inventory.persistence.existingClaim=kafka-inventory,inventory.persistence.accessModes={ReadWriteMany}",
    )
    assert not by_kind(manifest, "PersistentVolumeClaim")
    (deployment,) = by_kind(manifest, "Deployment")
    # The server's defaults, applied by the chart so that a server-side apply can take them back (test_chart.py).
    assert deployment["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
    }
    assert {"name": "inventory", "persistentVolumeClaim": {"claimName": "kafka-inventory"}} in deployment["spec"][
        "template"
    ]["spec"]["volumes"]
    for job in cron_jobs(manifest).values():
        pod = job_pod(job)
        assert "affinity" not in pod
        assert {"name": "inventory", "persistentVolumeClaim": {"claimName": "kafka-inventory"}} in pod["volumes"]


def test_the_jobs_accept_no_connection(helm: Helm) -> None:
    manifest = render(helm, "--values", VALUES, "--set", "networkPolicy.enabled=true")
    policies = {doc["metadata"]["name"]: doc for doc in by_kind(manifest, "NetworkPolicy")}
    policy = policies["kce-kafka-client-exporter-inventory"]
    assert policy["spec"]["policyTypes"] == ["Ingress"] and "ingress" not in policy["spec"]
    selector = policy["spec"]["podSelector"]["matchLabels"]
    template_labels = cron_jobs(manifest)["prod"]["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= template_labels.items()
    # The exporter's own policy does not select the job's pods.
    exporter_policy = policies["kce-kafka-client-exporter"]
    assert not exporter_policy["spec"]["podSelector"]["matchLabels"].items() <= template_labels.items()


def test_a_job_for_a_cluster_that_is_not_configured_fails_naming_the_clusters(helm: Helm) -> None:
    result = helm("template", "kce", CHART, "--values", VALUES, "--set", "inventory.jobs[1].cluster=stagign")
    assert result.returncode != 0
    assert (
        'inventory.jobs[1].cluster "stagign" is not the name of a cluster in config.clusters '
        "(names: prod, staging.eu, dev, lab)"
    ) in result.stderr
    for args, complaint in (
        (("--set", "inventory.jobs[2].cluster=prod"), 'cluster "prod" has two jobs'),
        (("--set", "inventory.jobs=null"), "inventory.enabled needs inventory.jobs"),
    ):
        result = helm("template", "kce", CHART, "--values", VALUES, *args)
        assert result.returncode != 0 and complaint in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("setting", "complaint"),
    [
        ("inventory.schedul=@daily", "additional properties 'schedul' not allowed"),
        ("inventory.persistence.sise=1Gi", "additional properties 'sise' not allowed"),
        ("inventory.jobs[0].extraArg[0]=x", "additional properties 'extraArg' not allowed"),
        ("inventory.jobs[1].input.path=/logs", "/inventory/jobs/1/input"),  # a path and a uri
        ("inventory.jobs[0].input.volume=null", "/inventory/jobs/0/input"),  # a path without its volume
        ("inventory.schedule=hourly", "/inventory/schedule"),
        ("inventory.persistence.accessModes={ReadOnlyMany}", "/inventory/persistence/accessModes/0"),
        ("inventory.jobs[0].cluster=..", "/inventory/jobs/0/cluster"),
        # Volume sources the restricted Pod Security Standard refuses: their Pods would never be admitted.
        ("inventory.jobs[0].input.volume.nfs.server=logs.example", "invalid propertyName 'nfs'"),
        ("inventory.jobs[2].input.volume.hostPath.path=/var/log/kafka", "invalid propertyName 'hostPath'"),
    ],
)
def test_wrong_inventory_values_are_rejected(helm: Helm, setting: str, complaint: str) -> None:
    result = helm("template", "kce", CHART, "--values", VALUES, "--set", setting)
    assert result.returncode != 0
    assert complaint in result.stderr, result.stderr
