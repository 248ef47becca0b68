"""A real Alertmanager (built by the set-up: scripts/setup.d/06-alertmanager.sh) on loopback, configured from the
shipped example (alerts/alertmanager.example.yaml) with its receivers pointed at a local endpoint: for the demo and
the tests that follow an alert from the exporter to what a receiver gets."""

from __future__ import annotations

import contextlib
import copy
import json
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import yaml

from harness.exporter_process import REPO_ROOT
from harness.ports import free_port
from harness.prometheus_process import built, serving

T = TypeVar("T")

ALERTMANAGER = REPO_ROOT / ".tools" / "alertmanager" / "alertmanager"
AMTOOL = REPO_ROOT / ".tools" / "alertmanager" / "amtool"
EXAMPLE_CONFIG = REPO_ROOT / "alerts" / "alertmanager.example.yaml"


def example_config() -> dict[str, Any]:
    return dict(yaml.safe_load(EXAMPLE_CONFIG.read_text()))


def local_receivers(config: Mapping[str, Any], base_url: str) -> dict[str, Any]:
    """`config` with every receiver's integrations sent to `base_url` instead of Slack and PagerDuty: Slack's
    incoming webhook to ``{base_url}/slack/<receiver>`` and PagerDuty's events API to ``{base_url}/pagerduty/
    <receiver>`` (each gets the message its template renders), plus a plain webhook to ``{base_url}/webhook/
    <receiver>`` (the alerts' labels and annotations as Alertmanager holds them). Receivers with no integration
    (the example's null receiver) stay silent."""
    local = copy.deepcopy(dict(config))
    local.pop("global", None)  # the example's global holds the Slack URL file only
    for receiver in local["receivers"]:
        name = receiver["name"]
        for slack in receiver.get("slack_configs", []):
            slack.pop("api_url_file", None)
            slack["api_url"] = f"{base_url}/slack/{name}"
        for pagerduty in receiver.get("pagerduty_configs", []):
            pagerduty.pop("routing_key_file", None)
            pagerduty["routing_key"] = "local"
            pagerduty["url"] = f"{base_url}/pagerduty/{name}"
        if receiver.get("slack_configs") or receiver.get("pagerduty_configs"):
            receiver["webhook_configs"] = [{"url": f"{base_url}/webhook/{name}", "send_resolved": True}]
    return local


def with_timings(config: Mapping[str, Any], **timings: str) -> dict[str, Any]:
    """`config` with group_wait, group_interval or repeat_interval set on every route that sets it (the demo and the
    tests wait seconds where an operator waits minutes)."""
    changed = copy.deepcopy(dict(config))

    def visit(route: dict[str, Any]) -> None:
        for key, value in timings.items():
            if key in route or route is changed["route"]:
                route[key] = value
        for child in route.get("routes", []):
            visit(child)

    visit(changed["route"])
    return changed


@contextlib.contextmanager
def running_alertmanager(workdir: Path, config: Mapping[str, Any], port: int | None = None) -> Iterator[str]:
    """Alertmanager on 127.0.0.1 (a free port unless given) with `config`, its data and log under `workdir`, without
    clustering (a single instance: no gossip port); yields its base URL once it answers /-/ready, stops it on exit."""
    binary = built(ALERTMANAGER)
    workdir.mkdir(parents=True, exist_ok=True)
    config_file = workdir / "alertmanager.yml"
    config_file.write_text(yaml.safe_dump(dict(config), sort_keys=False))
    port = port or free_port()
    base = f"http://127.0.0.1:{port}"
    log_file = workdir / "alertmanager.log"
    with log_file.open("w") as log:
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={config_file}",
                f"--storage.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--cluster.listen-address=",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        with serving("alertmanager", base, process, log_file):
            yield base


def alert_groups(base: str) -> list[dict[str, Any]]:
    """Alertmanager's alert groups (API v2): each with its receiver, group labels and alerts (their status says
    whether they are active, suppressed by an inhibition, and by which alerts)."""
    with urllib.request.urlopen(f"{base}/api/v2/alerts/groups", timeout=5) as response:
        return list(json.load(response))


@dataclass(frozen=True)
class Notification:
    """One message Alertmanager sent: to which integration (slack, pagerduty or webhook) of which receiver, the
    JSON body as that integration gets it, and when it arrived (time.monotonic())."""

    kind: str
    receiver: str
    body: dict[str, Any]
    received_at: float

    @property
    def status(self) -> str:
        """firing or resolved (the group's, as Alertmanager says it: firing while one of its alerts fires)."""
        if self.kind == "webhook":
            return str(self.body["status"])
        if self.kind == "pagerduty":
            return "resolved" if self.body.get("event_action") == "resolve" else "firing"
        return "resolved" if self.slack_title.startswith("[RESOLVED") else "firing"

    @property
    def group_labels(self) -> dict[str, str]:
        """The webhook's group labels (alertname, kafka_cluster); the other integrations carry none."""
        return dict(self.body.get("groupLabels", {}))

    @property
    def slack_title(self) -> str:
        return str(self.body["attachments"][0]["title"]) if self.kind == "slack" else ""

    @property
    def slack_text(self) -> str:
        return str(self.body["attachments"][0]["text"]) if self.kind == "slack" else ""


class AlertReceiver:
    """Alertmanager's destinations on 127.0.0.1, for local_receivers(): a Slack incoming webhook, PagerDuty's events
    API and a plain webhook, each answering as the real one does and recording what it got. ``on_notification`` is
    called with each (the demo prints the Slack messages)."""

    def __init__(self, on_notification: Callable[[Notification], None] | None = None) -> None:
        self._notifications: list[Notification] = []
        self._changed = threading.Condition()
        self._on_notification = on_notification
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                parts = self.path.strip("/").split("/")
                if len(parts) != 2 or parts[0] not in ("slack", "pagerduty", "webhook"):
                    self.send_error(404)
                    return
                receiver._record(Notification(parts[0], parts[1], body, time.monotonic()))
                # PagerDuty's events API answers 202 with a status; Slack answers "ok"; both are 2xx for Alertmanager.
                answer = b'{"status":"success","message":"Event processed"}' if parts[0] == "pagerduty" else b"ok"
                self.send_response(202 if parts[0] == "pagerduty" else 200)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="alert-receiver", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> AlertReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

    def _record(self, notification: Notification) -> None:
        with self._changed:
            self._notifications.append(notification)
            self._changed.notify_all()
        if self._on_notification is not None:
            self._on_notification(notification)

    def notifications(self, kind: str | None = None, receiver: str | None = None) -> list[Notification]:
        with self._changed:
            return [
                n
                for n in self._notifications
                if (kind is None or n.kind == kind) and (receiver is None or n.receiver == receiver)
            ]

    def wait_for(self, check: Callable[[list[Notification]], T | None], timeout: float, what: str) -> T:
        """``check(every notification so far)``'s first truthy value, evaluated at each arrival; TimeoutError naming
        ``what`` and what did arrive when none comes within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = check(list(self._notifications))
                if found:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    arrived = [(n.kind, n.receiver, n.status, n.group_labels) for n in self._notifications]
                    raise TimeoutError(f"no {what} within {timeout:.0f} s; arrived: {arrived}")
                self._changed.wait(left)
