"""`GET /api/clients`: every live version with its connections and, where the cluster has an inventory, who runs
it (all loaded identities, beyond the series limit too)."""

from __future__ import annotations

from exporter.web.clients_api import clients_document
from tests.unit.collectors.rich_snapshot import rich_snapshot


def test_live_versions_carry_their_identities_and_the_inventory_its_state() -> None:
    document = clients_document(rich_snapshot())
    prod = document["clusters"]["prod"]
    assert prod["inventory"]["up"] is True and prod["inventory"]["run_id"] == "20260101T120000Z-abcdef"
    by_pair = {(c["software_name"], c["software_version"]): c for c in prod["clients"]}
    java = by_pair[("apache-kafka-java", "3.7.0")]
    # Over the series limit of one, still listed here.
    assert java["connections"] == 5 and [i["client_id"] for i in java["identities"]] == ["orders"]
    assert by_pair[("librdkafka", "1.5.0")]["identities"][0]["source_host"] == "2001:db8::7"
    # A folded version is listed under its real version; not in the inventory: an empty list, total 0.
    odd = by_pair[('odd "client"\\\nname', "9.9")]
    assert odd["identities"] == [] and odd["identities_total"] == 0
    # 2.0.0 is in the inventory but not connected: not listed.
    assert ("apache-kafka-java", "2.0.0") not in by_pair
    assert document["clusters"]["old"] == {
        "inventory": None,
        "clients": [],
        "brokers_own": {"channels_read": {}, "listeners": []},
    }


def test_before_the_first_cycle_nothing_is_ready() -> None:
    assert clients_document(None) == {"ready": False, "clusters": {}}
