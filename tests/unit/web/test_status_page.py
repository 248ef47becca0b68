"""The status page at `/` (issue 4, part 5), rendered from hand-built snapshots (a real browser opens the served page
in tests/e2e/test_status_page_in_chromium.py)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from exporter.freshness import judge_freshness, stale_view
from exporter.snapshot import (
    BrokerFacts,
    ClientMetricsReading,
    JmxReading,
    JudgedClient,
    Snapshot,
    SourceKey,
    SourceResult,
    Subscription,
)
from exporter.web.status_page import render_status_page
from tests.support.status_page import tables_of, titles_of

NOW = 1_700_000_100.0


def row(broker: str, name: str, version: str, connections: int, **verdict: object) -> JudgedClient:
    real = str(verdict.pop("real", version))
    return JudgedClient("prod", broker, "PLAINTEXT", "0", name, version, real, connections, **verdict)  # type: ignore[arg-type]


def facts(host: str, release: str) -> BrokerFacts:
    return BrokerFacts(host, 4, (4,), (), (), (), 0, release)


def snapshot(inventory: tuple[JudgedClient, ...] = (), results: tuple[SourceResult, ...] = (), **extra) -> Snapshot:
    settings = {"clusters": ("prod",), "interval_seconds": 30.0, "cycle_duration_seconds": 1.25, **extra}
    return Snapshot(sequence=7, taken_at=NOW - 12.5, results=results, clients=inventory, **settings)


def test_before_the_first_cycle_the_page_says_so_and_still_links_the_endpoints() -> None:
    page = render_status_page(None, NOW)
    assert "first collection cycle has not finished" in page
    for href in ("/metrics", "/api/client-metrics", "/healthz", "/readyz"):
        assert f"href='{href}'" in page
    assert "<table" not in page


def test_inventory_is_summed_over_brokers_and_listeners_with_violations_first() -> None:
    inventory = (
        row("1", "apache-kafka-java", "3.9.0", 4),
        row("2", "apache-kafka-java", "3.9.0", 2),
        row("2", "librdkafka", "1.5.0", 1, violation="below_minimum", violation_detail="1.5.0 is below 1.8.2"),
        row("3", "librdkafka", "1.5.0", 2, violation="below_minimum", violation_detail="1.5.0 is below 1.8.2"),
        row("1", "librdkafka", "1.5.0", 0, violation="below_minimum", violation_detail="1.5.0 is below 1.8.2"),
        row("1", "kafka-python", "nightly", 3, unparseable=True),
        row("10", "sarama", "1.40.0", 1),
    )
    page = render_status_page(snapshot(inventory), NOW)
    assert tables_of(page)["inventory-prod"] == [
        {
            "software": "librdkafka",
            "version": "1.5.0",
            "connections": "3",
            "policy": "below_minimum",
            "brokers": "2, 3",
        },
        {
            "software": "kafka-python",
            "version": "nightly",
            "connections": "3",
            "policy": "unparseable version",
            "brokers": "1",
        },
        {"software": "apache-kafka-java", "version": "3.9.0", "connections": "6", "policy": "OK", "brokers": "1, 2"},
        {"software": "sarama", "version": "1.40.0", "connections": "1", "policy": "OK", "brokers": "10"},
    ]
    assert titles_of(page, "inventory-prod")[0]["policy"] == "1.5.0 is below 1.8.2"


def test_folded_versions_show_as_one_other_row_naming_what_was_folded() -> None:
    inventory = (
        row("1", "kgo", "other", 2, real="1.0.1"),
        row("2", "kgo", "other", 1, real="1.0.2", violation="denied_version", violation_detail="1.0.2 is denied"),
        row("1", "kgo", "1.17.0", 5),
    )
    page = render_status_page(snapshot(inventory, folded_total={"prod": 2}), NOW)
    rows = tables_of(page)["inventory-prod"]
    assert rows[0] == {
        "software": "kgo",
        "version": "other",
        "connections": "3",
        # Only the 1.0.2 connection is denied; the 1.0.1 ones folded beside it are not.
        "policy": "denied_version: 1 of 3 connections",
        "brokers": "1, 2",
    }
    assert rows[1]["version"] == "1.17.0" and rows[1]["policy"] == "OK"
    assert "1.0.1, 1.0.2" in (titles_of(page, "inventory-prod")[0]["version"] or "")
    assert tables_of(page)["exporter-health"][2] == {"folded-total": "2"}


def test_hostile_names_and_error_messages_are_escaped() -> None:
    hostile = "<script>alert('x')</script>"
    inventory = (row("1", hostile, '1.0"><img src=x onerror=alert(1)>', 1, violation="unknown_software"),)
    results = (
        SourceResult(SourceKey("prod", "1", "jmx"), False, 0.5, NOW, "timeout", "<b>no answer</b> from 'host'"),
        SourceResult(SourceKey("prod", "1", "api_versions"), True, 0.1, NOW, reading=facts("<h>", "4.1.0")),
    )
    page = render_status_page(snapshot(inventory, results), NOW)
    assert "<script" not in page.lower() and "<img" not in page and "<b>" not in page and "<h>" not in page
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page
    inventory_row = tables_of(page)["inventory-prod"][0]
    assert inventory_row["software"] == hostile  # the parser unescapes: a browser shows the name as sent
    assert tables_of(page)["brokers-prod"][0]["host"] == "<h>"


def test_each_cluster_section_names_its_kafka_cluster_label() -> None:
    results = (SourceResult(SourceKey("prod", "1", "api_versions"), True, 0.1, NOW, reading=facts("k1", "4.1.0")),)
    page = render_status_page(snapshot((), results), NOW)
    # The label value to paste into PromQL: the series carry kafka_cluster, not cluster.
    assert "Kafka cluster prod <code class='muted'>kafka_cluster=&quot;prod&quot;</code>" in page


class Markup(HTMLParser):
    """Every tag and attribute name on a page, and the title attributes by data-col (by tag where there is none)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()
        self.titles: dict[str, list[str]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes.update(name for name, _ in attrs)
        attributes = dict(attrs)
        if attributes.get("title") is not None:
            self.titles.setdefault(attributes.get("data-col") or tag, []).append(attributes["title"] or "")


def test_quotes_in_client_and_broker_values_cannot_leave_their_attribute() -> None:
    breakout = "x' onmouseover='alert(1)' data-x=\"y"
    inventory = (
        row("1", "kgo", "other", 1, real="1.0'><script>alert(2)</script>"),
        row("1", "librdkafka", "1.5.0", 1, violation="denied_version", violation_detail=breakout),
    )
    results = (
        SourceResult(SourceKey("prod", "1", "jmx"), False, 0.5, NOW, "timeout", breakout),
        SourceResult(SourceKey("prod", "1", "api_versions"), True, 0.1, NOW, reading=facts(breakout, "4.1.0")),
    )
    page = render_status_page(snapshot(inventory, results, clusters=("prod", breakout)), NOW)
    markup = Markup()
    markup.feed(page)
    assert "script" not in markup.tags
    assert markup.attributes == {"lang", "charset", "name", "content", "href", "id", "data-col", "class", "title"}
    assert markup.titles["policy"] == [breakout]
    assert markup.titles["span"] == [breakout]  # the down status of jmx
    assert markup.titles["version"] == ["1 versions folded by the cardinality cap: 1.0'><script>alert(2)</script>"]


def test_page_references_no_external_asset_and_runs_no_script() -> None:
    results = (
        SourceResult(SourceKey("prod", "1", "api_versions"), True, 0.1, NOW, reading=facts("https://evil", "3.9.0")),
        SourceResult(
            SourceKey("prod", "bootstrap", "client_metrics"),
            True,
            0.2,
            NOW,
            reading=ClientMetricsReading(True, True, "ListConfigResources", (Subscription("s", 1000, (), ()),)),
        ),
    )
    page = render_status_page(snapshot((row("1", "librdkafka", "2.3.0", 1),), results), NOW)
    assert "<script" not in page.lower()
    assert not re.search(r"""(src|href)\s*=\s*['"]?(https?:)?//""", page)
    assert not re.search(r"<link|@import|url\(", page)
    # The one absolute URL on the page is a broker host taken from the snapshot, shown as text.
    assert tables_of(page)["brokers-prod"][0]["host"] == "https://evil"


def test_brokers_show_release_and_every_source_status_with_the_error() -> None:
    results = (
        SourceResult(SourceKey("prod", "2", "jmx"), True, 0.3, NOW),
        SourceResult(SourceKey("prod", "2", "api_versions"), True, 0.1, NOW, reading=facts("kafka-2", "3.9.0")),
        SourceResult(SourceKey("prod", "10", "api_versions"), True, 0.1, NOW, reading=facts("kafka-10", "4.1.0")),
        SourceResult(SourceKey("prod", "10", "jmx"), False, 2.0, NOW, "auth", "JMX authentication failed"),
        SourceResult(SourceKey("prod", "bootstrap", "discovery"), True, 0.05, NOW),
    )
    errors = {(SourceKey("prod", "10", "jmx"), "auth"): 3, (SourceKey("other", "1", "jmx"), "timeout"): 9}
    page = render_status_page(snapshot(results=results, errors_total=errors), NOW)
    tables = tables_of(page)
    assert [(r["broker"], r["host"], r["release"], r["api-versions"]) for r in tables["brokers-prod"]] == [
        ("2", "kafka-2", "3.9.0", "v4"),
        ("10", "kafka-10", "4.1.0", "v4"),
    ]
    assert tables["brokers-prod"][0]["jmx"].startswith("up")
    assert tables["brokers-prod"][1]["jmx"].startswith("down: auth") and "JMX authentication failed" in page
    assert tables["errors-prod"] == [{"source": "jmx", "reason": "auth", "errors": "3"}]
    assert "discovery <span class='ok'>up" in page
    health = tables["exporter-health"]
    assert health[0]["snapshot-age"].startswith("12.5 s old (cycle 7")
    assert health[1]["cycle-duration"] == "1.25 s of a 30 s interval"


def test_an_overrunning_cycle_and_a_late_snapshot_are_flagged() -> None:
    # Past half the 90 s staleness limit, not yet over it.
    page = render_status_page(snapshot(cycle_duration_seconds=45.0, stale_after_seconds=90.0), NOW + 40)
    health = tables_of(page)["exporter-health"]
    assert health[1]["cycle-duration"].endswith("(longer than the interval)")
    assert page.count("class='warn'") == 2
    assert "id='stale'" not in page


def test_a_stale_view_says_so_and_shows_no_inventory() -> None:
    results = (SourceResult(SourceKey("prod", "1", "jmx"), True, 0.5, NOW, reading=JmxReading()),)
    fresh = snapshot((row("1", "librdkafka", "2.3.0", 4),), results, stale_after_seconds=90.0)
    freshness = judge_freshness(fresh, 0.0, 90.0, NOW + 100)
    page = render_status_page(stale_view(fresh, freshness), NOW + 100)
    assert "Stale: no collection cycle has completed for 112.5 s, over the 90 s limit." in page
    assert "librdkafka" not in page
    tables = tables_of(page)
    jmx = tables["brokers-prod"][0]["jmx"]
    assert jmx.startswith("down: stale")
    assert jmx.endswith("cycle is 112 s old, over the 90 s limit: its data is withheld")
    assert "class='bad'>112.5 s old" in page


def test_the_metrics_link_follows_the_telemetry_path() -> None:
    for page in (render_status_page(None, NOW, "/prom"), render_status_page(snapshot(), NOW, "/prom")):
        assert "<a href='/prom'>metrics</a>" in page and "href='/metrics'" not in page


def test_subscriptions_are_listed_with_the_rpc_used() -> None:
    subscription = Subscription("producers", 60000, ("org.apache.kafka.producer.",), ("client_software_name=x",))
    reading = ClientMetricsReading(True, True, "ListConfigResources", (subscription,))
    results = (SourceResult(SourceKey("prod", "bootstrap", "client_metrics"), True, 0.2, NOW, reading=reading),)
    page = render_status_page(snapshot(results=results), NOW)
    assert "Client-metrics subscriptions (via ListConfigResources)" in page
    assert "<td data-col='interval' class='num'>60000</td>" in page
    assert "client_software_name=x" in page


def test_who_runs_each_live_version_is_listed_under_it_from_the_inventory() -> None:
    from tests.unit.collectors.rich_snapshot import rich_snapshot

    page = render_status_page(rich_snapshot(), NOW)
    assert tables_of(page)["who-prod-librdkafka-1.5.0"] == [
        {
            "client-id": 'billing "ledger",v2',
            "principal": "User:CN=app",
            "host": "2001:db8::7",
            "listener": "PLAINTEXT",
            "last-seen": "2026-01-01T11:00:00.000",
            "requests": "900",
        }
    ]
    # The inventory table itself still reads as before, one row per live version.
    assert [r["software"] for r in tables_of(page)["inventory-prod"]][:2] == ["librdkafka", 'odd "client"\\\nname']
    # A live version the inventory does not know, and the publication's summary above the table.
    assert "not in the inventory: connected since its last run" in page
    assert "run 20260101T120000Z-abcdef, log lines from 2026-01-01 10:00:00.000 to 2026-01-01 11:00:00.000" in page


def test_a_failed_inventory_read_shows_the_reason_and_the_last_good_run() -> None:
    from dataclasses import replace

    from tests.unit.collectors.rich_snapshot import PROD_INVENTORY, rich_snapshot

    rich = rich_snapshot()
    results = tuple(
        replace(r, ok=False, error_reason="invalid_data", error_message="publication.json is not JSON")
        if r.key == PROD_INVENTORY
        else r
        for r in rich.results
    )
    page = render_status_page(replace(rich, results=results), NOW)
    assert "invalid_data" in page and "publication.json is not JSON" in page and "showing the last good run" in page
    assert "who-prod-librdkafka-1.5.0" in tables_of(page)


def test_upgrade_blockers_are_listed_with_who_runs_them() -> None:
    from dataclasses import replace

    from exporter.snapshot import BlockingRequests, InventoryReading
    from tests.unit.collectors.rich_snapshot import PROD_INVENTORY, rich_snapshot

    def inventory_of(snapshot: Snapshot) -> InventoryReading:
        return next(r.reading for r in snapshot.results if isinstance(r.reading, InventoryReading))

    rich = rich_snapshot()
    live = [BlockingRequests("prod", broker, "Fetch", "3", "librdkafka", "1.5.0", 5, "4.0.0") for broker in "21"]
    page = render_status_page(replace(rich, blocking_requests=(*rich.blocking_requests, *live)), NOW)
    rows = tables_of(page)["blockers-prod"]
    assert [(r["software"], r["version"], r["request"], r["requests"], r["brokers"], r["run-by"]) for r in rows] == [
        # Both brokers' counts summed; the version is connected and its clients are in the inventory.
        ("librdkafka", "1.5.0", "Fetch v3", "10", "1, 2", 'billing "ledger",v2 on 2001:db8::7'),
        # Counted by a broker; of the two clients in the inventory that name no software, the one the job saw
        # sending it.
        ("unknown", "unknown", "Produce v1", "7", "1", "legacy-billing on 10.0.0.9"),
    ]
    assert {r["target"] for r in rows} == {"4.0.0"}
    # A publication without senders (a job older than its upgrade_impact table) names everyone running the version.
    older = replace(inventory_of(rich), blocking_senders={})
    results = tuple(replace(r, reading=older) if r.key == PROD_INVENTORY else r for r in rich.results)
    rows = tables_of(render_status_page(replace(rich, results=results), NOW))["blockers-prod"]
    assert rows[-1]["request"] == "Produce v1", rows
    assert rows[-1]["run-by"] == "legacy-billing on 10.0.0.9, kafkajs-app on 10.0.0.8", rows
    # Without any blocking request there is no section.
    assert "blockers-prod" not in tables_of(render_status_page(replace(rich, blocking_requests=()), NOW))


def test_a_blocker_is_run_by_those_the_inventory_saw_send_it_not_everyone_on_its_version() -> None:
    # A real three-broker cluster: the replica fetchers send no ApiVersions, so their brokers record them as
    # `unknown` like the 0.10 producers, and they are far more active. Only the producers sent Produce v2.
    from dataclasses import replace

    from exporter.judging.identities import join_identities
    from exporter.judging.upgrade import UpgradeJudge
    from exporter.snapshot import DeprecatedRequests
    from tests.unit.collectors.rich_snapshot import PROD_1_JMX, PROD_INVENTORY, identity, inventory, judged

    fetchers = [identity(f"broker-{n}-fetcher-0", "unknown", "unknown", 900 + n) for n in (2, 3)]
    producers = [identity(name, "unknown", "unknown", 40) for name in ("legacy-0.10.2", "legacy-0.10.1")]
    reading = replace(
        inventory(*fetchers, *producers),
        blocking_senders={
            ("unknown", "unknown", "Produce", "2"): frozenset(
                (p.client_id, p.principal, p.source_host, p.listener) for p in producers
            )
        },
    )
    meter = JmxReading(deprecated_requests=(DeprecatedRequests("Produce", "2", "unknown", "unknown", 12),))
    results = (
        SourceResult(PROD_1_JMX, True, 0.1, 1000.0, reading=meter),
        SourceResult(PROD_INVENTORY, True, 0.01, 1000.0, reading=reading),
    )
    clients = (judged("1", "0", "unknown", "unknown", 4, violation="unknown_software"),)
    identities, _ = join_identities(results, clients, {"prod": 10})
    page = render_status_page(
        snapshot(
            clients,
            results,
            blocking_requests=UpgradeJudge("4.0.0").judge(results),
            identities=identities,
        ),
        NOW,
    )
    [row] = tables_of(page)["blockers-prod"]
    assert row["run-by"] == "legacy-0.10.2 on 10.0.0.1, legacy-0.10.1 on 10.0.0.1"
    # The version's own line lists the clients the inventory has behind it: the fetchers are the brokers' own
    # channels (their clientId says so), not clients running `unknown`, and no identity series names them either.
    who = [r["client-id"] for r in tables_of(page)["who-prod-unknown-unknown"]]
    assert who == ["legacy-0.10.2", "legacy-0.10.1"]
    [pair] = identities
    assert (pair.identities_total, pair.exported) == (2, 2)


def test_the_kind_of_each_request_log_is_shown_beside_who_with_what_it_cannot_tell() -> None:
    from dataclasses import replace

    from exporter.request_logs.log_kinds import LogKind
    from exporter.snapshot import InventoryReading
    from tests.unit.collectors.rich_snapshot import PROD_INVENTORY, rich_snapshot

    rich = rich_snapshot()
    brokers = [(f"file:/var/log/kafka/broker-{n}", LogKind.IDENTITIES_AND_INFO) for n in range(1, 8)]
    logs = (*brokers, ("file:/var/log/kafka/old-<b>", LogKind.INFO_ONLY))

    def with_logs(result):
        reading = result.reading
        assert isinstance(reading, InventoryReading)
        return replace(result, reading=replace(reading, request_logs=logs))

    page = render_status_page(
        replace(rich, results=tuple(with_logs(r) if r.key == PROD_INVENTORY else r for r in rich.results)), NOW
    )
    section = page.split("<ul id='request-logs-prod'>", 1)[1].split("</ul>", 1)[0]
    filtered, info_only = section.split("<li>")[1:]
    # One line per kind, however many brokers: five directories named, the rest counted.
    assert filtered.startswith("identities + INFO request logs: <code>file:/var/log/kafka/broker-1</code>")
    assert "broker-5</code> and 2 more" in filtered and "broker-6" not in filtered
    assert "cannot tell: request counts per API and version" in filtered
    assert "old-&lt;b&gt;" in info_only and "clients that only use current API versions" in info_only
    # A publication from before log kinds were recorded shows none.
    assert "request-logs-prod" not in render_status_page(rich, NOW)
