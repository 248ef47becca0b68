"""The demo is the whole product: the scenario `scripts/demo.sh` runs, with the inventory job and a live Prometheus
loading the shipped rules, makes the alerts it is built for pending, every rule evaluate without error, and every
panel and variable query of every shipped dashboard return data the way Grafana asks for it with each variable at
"All" - except the panels listed below with the reason they are empty in a healthy demo. Alertmanager, with the
example configuration, sends the alerts' messages, which name the clients the inventory found behind them: on Apache
Kafka's own brokers, the product's whole alert path.

The scenario (demo/scenario.py: Apache Kafka 3.9.2 and 4.4.0 in one cluster mid-upgrade, a real 0.10.2.2 Java
producer as the legacy client, a client that connects after the inventory job) is started once for all the module's
tests."""

from __future__ import annotations

import html
import json
import re
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from demo.common import CLUSTER, LEGACY_CLIENT_ID, RunningDemo
from demo.scenario import NODES, running_demo
from harness.alertmanager_process import Notification
from harness.ports import free_port
from tests.support.promql import DASHBOARDS
from tests.support.waiting import eventually

pytestmark = [pytest.mark.slow, pytest.mark.real_kafka]

#: Alerts the scenario is built to trigger: below minimum (librdkafka 1.6.0), denied version (2.0.2), unknown
#: software (aiokafka, kafkajs, the legacy producer), upgrade-blocking requests (the legacy producer's Produce v2
#: on the 3.9 broker), release skew (4.4.0 brokers beside a 3.9 one).
EXPECTED_ALERTS = {
    ("KafkaClientBelowMinimumVersion", "librdkafka", "1.6.0"),
    ("KafkaClientDeniedVersion", "librdkafka", "2.0.2"),
    ("KafkaClientUnknownSoftware", None, None),
    ("KafkaClientDeprecatedRequests", "unknown", "unknown"),
    ("KafkaBrokerReleaseSkew", None, None),
}
#: The client alerts' receivers (by severity, alerts/alertmanager.example.yaml) and a clientId of the demo's that
#: each message names once the inventory job has run (None: any clientId; the unnamed clients are several).
NOTIFIED: dict[str, tuple[str, str | None]] = {
    "KafkaClientBelowMinimumVersion": ("kafka-clients-tickets", "orders-ingest"),
    "KafkaClientDeniedVersion": ("kafka-clients-tickets", "payments-audit"),
    "KafkaClientUnknownSoftware": ("kafka-clients-info", None),
    "KafkaClientDeprecatedRequests": ("kafka-clients-tickets", LEGACY_CLIENT_ID),
}
#: How a message introduces the clients it names, where not "Run by": an upgrade blocker names who sent it.
NAMED_AS = {"KafkaClientDeprecatedRequests": "Sent by"}
RUNBOOK = "https://github.com/kafka-client-exporter/kafka-client-exporter/blob/main/alerts/runbook.md#"
#: metadata.version 3.9-IV0 as a KIP-584 feature level (MetadataVersion.IBP_3_9_IV0), what Kafka 3.9.2 formats a
#: new cluster with.
METADATA_VERSION_3_9_IV0 = 21
#: Panels (by title) or queries (by a metric they read) that may have no series in a healthy demo, and why.
EMPTY_IN_A_HEALTHY_DEMO = {
    "Errors by reason": "no poll fails in the demo once the inventory job has published",
    "kafka_client_unverified_connections": "every broker's own channels are read: nothing is in doubt",
}
# Grafana's values for its macros with the dashboards' defaults: a 6 h range, and the data source's default scrape
# interval (15 s), which makes $__rate_interval 1 m.
MACROS = {"$__rate_interval": "1m", "$__interval": "15s", "$__range": "6h"}
VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)")
LABEL_VALUES = re.compile(r"^label_values\((.*),\s*(\w+)\s*\)$", re.S)


def get(base: str, path: str, **params: str) -> Any:
    query = urllib.parse.urlencode(params)
    with urllib.request.urlopen(f"{base}{path}?{query}", timeout=10) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    return body["data"]


def grafana(expr: str, variables: dict[str, str]) -> str:
    """The query Grafana sends: its macros, then the dashboard's variables (each at its "All" value)."""
    for macro, value in MACROS.items():
        expr = expr.replace(macro, value)

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return variables.get(name, match.group(0))

    return VARIABLE.sub(substitute, expr)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningDemo]:
    with running_demo(
        tmp_path_factory.mktemp("demo"),
        free_port(),
        prometheus_port=free_port(),
        alertmanager_port=free_port(),
        # Alerts that fire in seconds, and Alertmanager's reminders (which carry the inventory's names once it has
        # run) every few: the demo's minute is for people watching.
        alert_wait="10s",
        alert_timings={"group_wait": "2s", "group_interval": "5s", "repeat_interval": "10s"},
        interval_seconds=2,
        say=lambda _: None,
    ) as running:
        assert running.prometheus_url and running.inventory and running.alerting
        yield running


def test_the_summary_says_which_brokers_run_and_the_real_ones_are_mid_upgrade(demo: RunningDemo) -> None:
    summary = "\n".join(demo.brokers)
    assert "Apache Kafka's own brokers" in summary
    for plan in NODES:
        assert f"broker {plan.node_id}: Apache Kafka {plan.release}," in summary
    # The brokers' own connections are live as soon as the exporter has run a cycle.
    assert demo.first_series is not None and demo.first_series.seen.wait(30)
    # What each broker itself answers in ApiVersions: the cluster runs at 3.9-IV0, which the 4.4.0 brokers accept
    # although they support newer levels.
    with urllib.request.urlopen(f"{demo.exporter_url}/metrics", timeout=10) as response:
        exposition = response.read().decode()
    levels = {
        (sample.name, sample.labels["broker"]): sample.value
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
        if sample.labels.get("feature") == "metadata.version"
    }
    for plan in NODES:
        finalized = levels[("kafka_broker_finalized_feature_level", str(plan.node_id))]
        supported = levels[("kafka_broker_supported_feature_max_level", str(plan.node_id))]
        assert finalized == METADATA_VERSION_3_9_IV0, plan
        assert (supported > finalized) == (plan.release != "3.9.2"), plan


def test_the_inventory_job_names_the_legacy_client_in_prometheus(demo: RunningDemo) -> None:
    assert demo.inventory is not None and demo.prometheus_url is not None
    base = demo.prometheus_url
    assert demo.inventory.done.wait(240), "the inventory job did not finish in 4 minutes"
    assert demo.inventory.returncode == 0, demo.inventory.log_file.read_text()[-3000:]
    query = f'kafka_client_identity_info{{client_id="{LEGACY_CLIENT_ID}"}}'
    [series] = eventually(lambda: get(base, "/api/v1/query", query=query)["result"], 60, query)
    assert series["metric"]["client_software_name"] == "unknown"


def test_the_scenarios_alerts_are_pending_or_firing_and_every_rule_evaluates(demo: RunningDemo) -> None:
    assert demo.prometheus_url is not None
    base = demo.prometheus_url

    def active() -> set[tuple[str, str | None, str | None]]:
        alerts = get(base, "/api/v1/alerts")["alerts"]
        found = {
            (
                a["labels"]["alertname"],
                a["labels"].get("client_software_name"),
                a["labels"].get("client_software_version"),
            )
            for a in alerts
            if a["state"] in ("pending", "firing")
        }
        return found if found >= EXPECTED_ALERTS else set()

    eventually(active, 120, f"the alerts {sorted(n for n, _, _ in EXPECTED_ALERTS)}")

    def blocker_description() -> str:
        alerts = {a["labels"]["alertname"]: a for a in get(base, "/api/v1/alerts")["alerts"]}
        return alerts["KafkaClientDeprecatedRequests"]["annotations"]["description"]

    # The inventory names who is behind the upgrade blocker (annotations are rendered anew at each evaluation).
    eventually(lambda: LEGACY_CLIENT_ID in blocker_description(), 60, f"{LEGACY_CLIENT_ID} in the blocker's alert")
    rules = [rule for group in get(base, "/api/v1/rules")["groups"] for rule in group["rules"]]
    assert rules and all(rule["lastEvaluation"] != "0001-01-01T00:00:00Z" for rule in rules)
    broken = {rule["name"]: rule.get("lastError") for rule in rules if rule["health"] != "ok"}
    assert not broken, broken


def test_the_unknown_software_alert_is_the_unnamed_clients_never_the_brokers_replica_fetchers(
    demo: RunningDemo,
) -> None:
    assert demo.prometheus_url is not None
    base = demo.prometheus_url

    def total(query: str) -> float:
        return sum(float(series["value"][1]) for series in get(base, "/api/v1/query", query=query)["result"])

    seen: list[dict[str, float]] = []

    def accounted() -> bool:
        # The raw unknown count is the brokers' own share of it (replica fetchers, which send no ApiVersions) plus
        # what the policy judges (aiokafka, kafkajs and the 0.10.2.2 producer), each present.
        counts = {
            "raw": total('sum(kafka_client_connections{kafka_cluster="demo",client_software_name="unknown"})'),
            "own": total(
                'sum(kafka_client_inter_broker_connections{kafka_cluster="demo",client_software_name="unknown"})'
            ),
            "judged": total(
                'sum(kafka_client_policy_violation_connections{kafka_cluster="demo",reason="unknown_software"})'
            ),
            "unverified": total('sum(kafka_client_unverified_connections{kafka_cluster="demo"})'),
        }
        seen[:] = [counts]
        return counts["own"] > 0 and counts["judged"] > 0 and counts["raw"] == counts["own"] + counts["judged"]

    try:
        eventually(accounted, 60, "the unknown connections split into the brokers' own and the clients'")
    except pytest.fail.Exception:
        pytest.fail(f"the unknown connections are not the brokers' own plus the clients' judged ones: {seen}")
    fetchers = total('sum(kafka_client_inter_broker_connections{kafka_cluster="demo",channel="replica-fetcher"})')
    assert fetchers > 0, "the demo's replicated topics have replica fetchers, counted as the brokers' own"
    assert not total('sum(kafka_client_unverified_connections{kafka_cluster="demo"})'), "every broker's channels read"


def test_a_client_connected_after_the_job_shows_as_not_in_the_inventory(demo: RunningDemo) -> None:
    late = demo.late_client
    assert late is not None, "the real scenario has a client that connects after the job"
    assert late.connected.wait(300), "the late client did not connect within 5 minutes"
    assert late.client is not None
    name, version = late.client.expected.software_name, late.client.expected.software_version

    def who_runs_it() -> list[Any] | None:
        with urllib.request.urlopen(f"{demo.exporter_url}/api/clients", timeout=10) as response:
            clients = json.load(response)["clusters"]["demo"]["clients"]
        found = [c for c in clients if (c["software_name"], c["software_version"]) == (name, version)]
        return [found[0]["identities"]] if found else None

    # Live, but in no publication: no identity behind it (null before the exporter joined it with the inventory).
    assert eventually(who_runs_it, 30, f"{name} {version} in /api/clients") in ([None], [[]])
    with urllib.request.urlopen(f"{demo.exporter_url}/", timeout=10) as response:
        page = response.read().decode()
    assert "not in the inventory: connected since its last run" in who_row(page, name, version)


def who_row(page: str, name: str, version: str) -> str:
    """The HTML of the row under a version's line of the status page, which says who runs that version."""
    line = re.search(
        rf"<td data-col='software'[^>]*>{re.escape(html.escape(name))}</td>\s*"
        rf"<td data-col='version'[^>]*>{re.escape(html.escape(version))}</td>",
        page,
    )
    assert line, f"no line for {name} {version} on the status page"
    start = page.index("<tr class='who'>", line.end())
    return page[start : page.index("</tr>", start)]


def resolve_variables(base: str, dashboard: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """Each query variable's "All" value, in the dashboard's order (each may use those before it), and the
    variables whose query returned no value."""
    values: dict[str, str] = {}
    empty: list[str] = []
    for variable in dashboard["templating"]["list"]:
        if variable["type"] != "query":
            continue
        match = LABEL_VALUES.match(grafana(variable["definition"], values))
        assert match, f"{variable['name']}: not a label_values() query: {variable['definition']}"
        selector, label = match.groups()
        found = get(base, f"/api/v1/label/{label}/values", **{"match[]": selector})
        if not found:
            empty.append(variable["name"])
        # The dashboards' includeAll variables send their allValue for "All" (a regex).
        values[variable["name"]] = variable.get("allValue") or "|".join(re.escape(value) for value in found)
    return values, empty


def test_every_panel_and_variable_query_of_every_dashboard_returns_data(demo: RunningDemo) -> None:
    assert demo.prometheus_url is not None and demo.inventory is not None
    base = demo.prometheus_url
    # The identity panels need the inventory, and the rates a few minutes of samples' worth.
    assert demo.inventory.done.wait(240) and demo.inventory.returncode == 0
    eventually(lambda: get(base, "/api/v1/query", query="kafka_client_identity_info")["result"], 60, "identities")
    rate = 'rate(kafka_client_upgrade_blocking_requests_total{job="kafka-client-exporter"}[1m]) > 0'
    eventually(lambda: get(base, "/api/v1/query", query=rate)["result"], 90, "a blocking-request rate")
    if demo.late_client is not None:
        assert demo.late_client.connected.wait(120), "the late client did not connect"
        late = (
            "kafka_client_connections unless on (client_software_name, client_software_version) "
            "kafka_client_identity_info"
        )
        eventually(
            lambda: get(base, "/api/v1/query", query=late)["result"], 30, "a connected version not in the inventory"
        )
    now = time.time()
    empty_variables: list[str] = []
    empty_panels: list[tuple[str, str, str]] = []  # dashboard, panel title, query as sent
    checked = 0
    for path in DASHBOARDS:
        dashboard = json.loads(path.read_text())
        variables, no_values = resolve_variables(base, dashboard)
        empty_variables += [f"{path.name} {name}" for name in no_values]
        for panel in dashboard["panels"]:
            for target in panel.get("targets", []):
                query = grafana(target["expr"], variables)
                if target.get("instant"):
                    result = get(base, "/api/v1/query", query=query, time=str(now))["result"]
                else:
                    params = {"query": query, "start": str(now - 600), "end": str(now), "step": "15"}
                    result = get(base, "/api/v1/query_range", **params)["result"]
                checked += 1
                if not result:
                    empty_panels.append((path.name, panel["title"], query))
    assert checked > 30
    assert not empty_variables, f"variables with no values: {empty_variables}"
    allowed = EMPTY_IN_A_HEALTHY_DEMO
    unexpected = [
        f"  {name} {title!r}: {query}"
        for name, title, query in empty_panels
        if title not in allowed and not any(metric in query for metric in allowed)
    ]
    assert not unexpected, "panel queries with no data:\n" + "\n".join(unexpected)


def test_alertmanager_sends_each_alert_to_its_receiver_naming_the_clients(demo: RunningDemo) -> None:
    """What the on-call person gets: one message per cluster and alert, on the receiver of its severity, with its
    description naming who runs the client (a reminder carries the names once the inventory job has run) and the
    runbook linked."""
    assert demo.alerting is not None
    receiver = demo.alerting.receiver

    def named(_: object) -> dict[str, Notification] | None:
        found = {}
        for name, (receiver_name, client_id) in NOTIFIED.items():
            messages = [
                message
                for message in receiver.notifications("slack", receiver_name)
                if f"] {name} on Kafka cluster {CLUSTER}" in message.slack_title
                and f"{NAMED_AS.get(name, 'Run by')} (up to five, from the inventory): " in message.slack_text
                and (client_id is None or f"{client_id} (" in message.slack_text)
            ]
            if not messages:
                return None
            found[name] = messages[-1]
        return found

    messages = receiver.wait_for(named, 300, "a message naming the clients of each client alert")
    for name, message in messages.items():
        assert message.status == "firing"
        assert f"Runbook: {RUNBOOK}{name.lower()}" in message.slack_text
    # The legacy producer sent Produce v2; aiokafka and kafkajs name no software either, but never sent it.
    sent_by = messages["KafkaClientDeprecatedRequests"].slack_text.split("Sent by", 1)[1].split("\n", 1)[0]
    assert "aiokafka" not in sent_by and "kafkajs" not in sent_by, sent_by
    for name, (receiver_name, _) in NOTIFIED.items():
        hooks = [n for n in receiver.notifications("webhook", receiver_name) if n.group_labels.get("alertname") == name]
        assert hooks and all(n.group_labels == {"alertname": name, "kafka_cluster": CLUSTER} for n in hooks), name
        severity = {hook["labels"]["severity"] for n in hooks for hook in n.body["alerts"]}
        assert severity == {"info" if receiver_name == "kafka-clients-info" else "warning"}, name
    assert not receiver.notifications("pagerduty"), "nothing in the demo is critical"
