"""The pictures under docs/images/, taken from the real demo (scripts/screenshots.sh runs this).

It starts the demo (`python -m demo`, on its own ports and data directory) and reads the URLs it prints, waits until
what each picture shows is there, takes the pictures with headless Chromium, driven over its DevTools protocol so
that a picture can be cut to one part of a page and taken only once the page holds what it should, and stops the
browser and the demo by their pids (the demo stops what it started itself, on SIGINT).

Prometheus 3 as the set-up builds it from the Go module proxy has no web UI (the UI's assets are not in the module:
`/alerts` answers an error), so its rules and alerts are read from its API and drawn as a page of our own.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import html
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from docs_gen.regions import REPO_ROOT

IMAGES = REPO_ROOT / "docs" / "images"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
WIDTH = 1200
#: The client alerts the demo makes fire (its summary says so); the Prometheus picture waits for all of them.
CLIENT_ALERTS = (
    "KafkaClientBelowMinimumVersion",
    "KafkaClientDeniedVersion",
    "KafkaClientUnknownSoftware",
    "KafkaClientDeprecatedRequests",
    "KafkaBrokerReleaseSkew",
)
#: What the legacy producer is called in the demo: once the status page names it behind the blocker, the inventory
#: has been joined with the live connections.
LEGACY_CLIENT_ID = "legacy-billing-producer"


def say(message: str) -> None:
    print(f"screenshots: {message}", file=sys.stderr, flush=True)


def wait_for(what: str, check: Callable[[], bool], timeout: float, poll: float = 1.0) -> None:
    """Return once ``check()`` holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError):
            if check():
                return
        time.sleep(poll)
    raise TimeoutError(f"{what}: not seen within {timeout:.0f} s")


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return str(response.read().decode("utf-8"))


def fetch_json(url: str) -> Any:
    return json.loads(fetch(url))


# --- the demo ------------------------------------------------------------------------------------------------------


@dataclass
class DemoUrls:
    exporter: str | None = None
    prometheus: str | None = None
    alertmanager: str | None = None
    inventory: Path | None = None


#: The lines of the demo's summary that carry what the pictures need (demo/__main__.py and demo/common.py print them).
_PRINTED = (
    ("exporter", re.compile(r"the exporter is live at (http://\S+?)/? ")),
    ("prometheus", re.compile(r"Prometheus at (http://\S+?)/alerts")),
    ("alertmanager", re.compile(r"Alertmanager at (http://[^\s/]+)")),
    ("inventory", re.compile(r"the inventory job read the request logs.*\(its output: (\S+)\)")),
)


class Demo:
    """`python -m demo` in the background, its output kept (shown if it fails) and scanned for the URLs it prints."""

    def __init__(self, data_dir: Path, ports: tuple[int, int, int]) -> None:
        port, prometheus_port, alertmanager_port = ports
        self.command = [
            sys.executable,
            "-m",
            "demo",
            "--data-dir",
            str(data_dir),
            "--port",
            str(port),
            "--prometheus-port",
            str(prometheus_port),
            "--alertmanager-port",
            str(alertmanager_port),
        ]
        self.urls = DemoUrls()
        self.log: list[str] = []
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            self.command,
            cwd=REPO_ROOT,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        say(f"started the demo (pid {self.process.pid}): {' '.join(self.command[1:])}")
        threading.Thread(target=self._read, name="demo-output", daemon=True).start()

    def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            self.log.append(line.rstrip("\n"))
            for name, pattern in _PRINTED:
                found = pattern.search(line)
                if found and getattr(self.urls, name) is None:
                    value = found.group(1).rstrip("/")
                    setattr(self.urls, name, Path(value) if name == "inventory" else value)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def wait_urls(self, timeout: float) -> DemoUrls:
        def printed() -> bool:
            if not self.running():
                raise RuntimeError("the demo exited:\n" + "\n".join(self.log[-30:]))
            return None not in (self.urls.exporter, self.urls.prometheus, self.urls.alertmanager)

        wait_for("the demo's URLs", printed, timeout, poll=0.5)
        return self.urls

    def stop(self) -> None:
        """SIGINT, as Ctrl-C: the demo stops its brokers, clients, exporter, Prometheus and Alertmanager by pid."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            say(f"the demo (pid {self.process.pid}) did not stop within 60 s of SIGINT: killing it")
            self.process.kill()
            self.process.wait(timeout=10)
        say(f"stopped the demo (pid {self.process.pid}, exit code {self.process.returncode})")


# --- the browser ---------------------------------------------------------------------------------------------------


class Browser:
    """Headless Chromium with its DevTools endpoint on a free port, and one page driven over it."""

    def __init__(self, profile: Path) -> None:
        self.profile = profile
        self.process: subprocess.Popen[bytes] | None = None
        self._session: aiohttp.ClientSession | None = None
        self._socket: aiohttp.ClientWebSocketResponse | None = None
        self._next_id = 0

    async def __aenter__(self) -> Browser:
        chromium = shutil.which("chromium")
        if chromium is None:
            raise RuntimeError("chromium is missing: run scripts/setup.sh (scripts/setup.d/40-chromium.sh)")
        # A profile used before keeps the port file of its last browser.
        active = self.profile / "DevToolsActivePort"
        active.unlink(missing_ok=True)
        self.process = subprocess.Popen(
            [
                chromium,
                *CHROMIUM_FLAGS,
                "--hide-scrollbars",
                f"--user-data-dir={self.profile}",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            await self._connect(active)
        except BaseException:
            await self.__aexit__()
            raise
        return self

    async def _connect(self, active: Path) -> None:
        # Chromium writes the port it chose into the profile once its endpoint listens.
        await asyncio.to_thread(wait_for, "Chromium's DevTools endpoint", active.exists, 30, 0.1)
        port = active.read_text().split()[0]
        self._session = aiohttp.ClientSession()
        async with self._session.get(f"http://127.0.0.1:{port}/json/list") as response:
            targets = await response.json()
        page = next(target for target in targets if target.get("type") == "page")
        self._socket = await self._session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)

    async def __aexit__(self, *_: object) -> None:
        if self._socket is not None:
            await self._socket.close()
        if self._session is not None:
            await self._session.close()
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            say(f"stopped Chromium (pid {self.process.pid})")

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        """One DevTools command and its result (the events in between are not needed here)."""
        assert self._socket is not None
        self._next_id += 1
        await self._socket.send_json({"id": self._next_id, "method": method, "params": params})
        while True:
            message = await self._socket.receive_json(timeout=60)
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result

    async def evaluate(self, expression: str) -> Any:
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:60]}...: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def open(self, url: str, width: int = WIDTH) -> None:
        await self.call(
            "Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1, mobile=False
        )
        await self.call("Page.navigate", url=url)
        deadline = time.monotonic() + 30
        while await self.evaluate("document.readyState") != "complete":
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not finish loading within 30 s")
            await asyncio.sleep(0.1)

    async def wait_text(self, text: str, timeout: float = 30) -> None:
        """Wait until the page's text holds ``text`` (a page built by scripts, as Alertmanager's, comes later)."""
        deadline = time.monotonic() + timeout
        while not await self.evaluate(f"document.body.innerText.includes({json.dumps(text)})"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{text!r} did not show within {timeout:.0f} s")
            await asyncio.sleep(0.3)

    async def shoot(self, path: Path, clip_script: str, width: int = WIDTH) -> None:
        """Save the part of the page ``clip_script`` (JavaScript giving {top, bottom} in page pixels) selects."""
        clip = await self.evaluate(clip_script)
        if not clip:
            raise RuntimeError(f"{path.name}: the part to picture is not on the page")
        top, bottom = max(0, int(clip["top"]) - 12), int(clip["bottom"]) + 12
        shot = await self.call(
            "Page.captureScreenshot",
            format="png",
            captureBeyondViewport=True,
            clip={"x": 0, "y": top, "width": width, "height": bottom - top, "scale": 1},
        )
        path.write_bytes(base64.b64decode(shot["data"]))
        say(f"took {path} ({width}x{bottom - top})")


# JavaScript helpers: a page part runs from one element to another, cut at the last table row under a height.
_JS_HELPERS = """
const pageTop = (e) => e.getBoundingClientRect().top + window.scrollY;
const pageBottom = (e) => e.getBoundingClientRect().bottom + window.scrollY;
const heading = (text) => [...document.querySelectorAll('h1, h2, h3')].find((h) => h.textContent.trim() === text);
const nextTable = (e) => {
  let n = e.nextElementSibling;
  while (n && n.tagName !== 'TABLE') n = n.nextElementSibling;
  return n;
};
const lastRowWithin = (table, limit) => {
  const rows = [...table.tBodies[0].rows].filter((r) => pageBottom(r) <= limit);
  return rows.length ? pageBottom(rows[rows.length - 1]) : pageBottom(table);
};
"""


def _part(body: str) -> str:
    return "(() => {" + _JS_HELPERS + body + "})()"


#: The status page from its title to the row of the connected-software table that ends within 1,250 pixels.
STATUS_TOP = _part(
    """
  const table = document.querySelector('table[id^="inventory-"]');
  if (!table) return null;
  return {top: 0, bottom: lastRowWithin(table, 1250)};
"""
)
#: From the "Upgrade blockers" heading to the end of the brokers' table that follows it.
BLOCKERS = _part(
    """
  const start = heading('Upgrade blockers'), brokers = heading('Brokers');
  if (!start || !brokers) return null;
  return {top: pageTop(start), bottom: pageBottom(nextTable(brokers))};
"""
)
#: The brokers' own connections: the heading, its explanation and its table.
OWN_CONNECTIONS = _part(
    """
  const start = heading("The brokers' own connections");
  if (!start) return null;
  return {top: pageTop(start), bottom: pageBottom(nextTable(start))};
"""
)
#: The inventory job's report, from its title to the end of its "who blocks the upgrade" table.
INVENTORY_REPORT = _part(
    """
  const blockers = [...document.querySelectorAll('h2')].find((h) => h.textContent.startsWith('Who blocks'));
  if (!blockers) return null;
  let n = blockers.nextElementSibling;
  let bottom = pageBottom(blockers);
  while (n && n.tagName !== 'H2') { bottom = Math.max(bottom, pageBottom(n)); n = n.nextElementSibling; }
  return {top: 0, bottom: bottom};
"""
)
WHOLE_PAGE = _part("return {top: 0, bottom: document.documentElement.scrollHeight - 12};")
#: A page built by scripts (Alertmanager's): from the top to the lowest element that shows something.
CONTENT = _part(
    """
  const boxes = [...document.body.querySelectorAll('*')].map((e) => e.getBoundingClientRect())
    .filter((r) => r.width > 0 && r.height > 0);
  return {top: 0, bottom: Math.max(...boxes.map((r) => r.bottom + window.scrollY))};
"""
)
#: Alertmanager's "Expand all groups", so that each alert shows its labels.
EXPAND_GROUPS = """(() => {
  const link = [...document.querySelectorAll('button, a')].find((e) => e.textContent.includes('Expand all groups'));
  if (link) link.click();
  return Boolean(link);
})()"""


# --- Prometheus' alerts, drawn from its API ------------------------------------------------------------------------


_STATE_COLOURS = {"firing": "#c0392b", "pending": "#d68910", "inactive": "#1e8449"}


def alerts_page(rules: dict[str, Any], prometheus_url: str) -> str:
    """A page in the manner of Prometheus' own alert list: each alerting rule with its state and active alerts."""
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><style>",
        "body{font-family:sans-serif;font-size:14px;margin:20px;color:#222}",
        "h1{font-size:20px;margin:0 0 4px} p.note{color:#666;margin:0 0 16px}",
        "h2{font-size:15px;margin:18px 0 6px;color:#444} .rule{border:1px solid #ddd;border-radius:4px;",
        "margin:6px 0;padding:6px 10px} .name{font-weight:bold} .state{color:#fff;border-radius:3px;",
        "padding:1px 6px;font-size:12px;margin-left:8px} .alert{margin:6px 0 4px 16px;padding-left:8px;",
        "border-left:3px solid #eee} .label{display:inline-block;background:#eef;border-radius:3px;",
        "padding:0 5px;margin:1px 3px 1px 0;font-size:12px;font-family:monospace} .desc{color:#333;margin-top:3px}",
        "</style></head><body>",
        "<h1>Prometheus: alerting rules</h1>",
        f"<p class='note'>{html.escape(prometheus_url)}/api/v1/rules, drawn as a page: this Prometheus 3 build has "
        "no web UI.</p>",
    ]
    for group in rules["data"]["groups"]:
        alerting = [rule for rule in group["rules"] if rule.get("type") == "alerting"]
        if not alerting:
            continue
        parts.append(f"<h2>{html.escape(group['name'])}</h2>")
        for rule in alerting:
            state = rule.get("state", "inactive")
            colour = _STATE_COLOURS.get(state, "#555")
            count = f" ({len(rule['alerts'])})" if rule.get("alerts") else ""
            parts.append(
                f"<div class='rule'><span class='name'>{html.escape(rule['name'])}</span>"
                f"<span class='state' style='background:{colour}'>{state.upper()}{count}</span>"
            )
            for alert in rule.get("alerts", []):
                labels = "".join(
                    f"<span class='label'>{html.escape(key)}={html.escape(value)}</span>"
                    for key, value in sorted(alert["labels"].items())
                    if key not in ("alertname", "job")
                )
                description = html.escape(" ".join(alert.get("annotations", {}).get("description", "").split()))
                parts.append(f"<div class='alert'>{labels}<div class='desc'>{description}</div></div>")
            parts.append("</div>")
    parts.append("</body></html>")
    return "".join(parts)


# --- the pictures --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Picture:
    name: str
    shows: str


PICTURES = (
    Picture("status-page.png", "the status page: who runs each connected version, and the policy's verdicts"),
    Picture("upgrade-blockers.png", "the status page's upgrade blockers and brokers mid-upgrade"),
    Picture("own-connections.png", "the status page's brokers' own connections"),
    Picture("inventory-report.png", "the inventory job's report"),
    Picture("prometheus-alerts.png", "Prometheus' alerting rules, from its API"),
    Picture("alertmanager.png", "Alertmanager's UI"),
)


def _firing(prometheus: str) -> set[str]:
    alerts = fetch_json(f"{prometheus}/api/v1/alerts")["data"]["alerts"]
    return {alert["labels"]["alertname"] for alert in alerts if alert["state"] == "firing"}


def _named_in_inventory(prometheus: str) -> bool:
    """The firing client alerts' descriptions name their clients once the inventory has been joined."""
    alerts = fetch_json(f"{prometheus}/api/v1/alerts")["data"]["alerts"]
    return any(LEGACY_CLIENT_ID in alert.get("annotations", {}).get("description", "") for alert in alerts)


def _alertmanager_has(alertmanager: str) -> bool:
    alerts = fetch_json(f"{alertmanager}/api/v2/alerts")
    return set(CLIENT_ALERTS) <= {alert["labels"]["alertname"] for alert in alerts}


async def take(urls: DemoUrls, work: Path, out: Path, timeout: float) -> None:
    assert urls.exporter and urls.prometheus and urls.alertmanager
    exporter, prometheus, alertmanager = urls.exporter, urls.prometheus, urls.alertmanager
    say("waiting for the inventory to be joined on the status page (the blocker named by its clientId)")
    await asyncio.to_thread(
        wait_for,
        "the legacy producer named behind the upgrade blocker on the status page",
        lambda: LEGACY_CLIENT_ID in fetch(f"{exporter}/") and "not in the inventory" in fetch(f"{exporter}/"),
        timeout,
    )
    async with Browser(work / "chromium-profile") as browser:
        await browser.open(f"{exporter}/")
        await browser.shoot(out / "status-page.png", STATUS_TOP)
        await browser.shoot(out / "upgrade-blockers.png", BLOCKERS)
        await browser.shoot(out / "own-connections.png", OWN_CONNECTIONS)
        if urls.inventory is None:
            raise RuntimeError("the demo did not print where the inventory job wrote its output")
        await browser.open((urls.inventory / "current" / "report.html").resolve().as_uri())
        await browser.shoot(out / "inventory-report.png", INVENTORY_REPORT)

        say(f"waiting for {', '.join(CLIENT_ALERTS)} to fire in Prometheus, with their clients named")
        await asyncio.to_thread(
            wait_for,
            "the client alerts firing",
            lambda: set(CLIENT_ALERTS) <= _firing(prometheus) and _named_in_inventory(prometheus),
            timeout,
            2.0,
        )
        page = work / "prometheus-alerts.html"
        page.write_text(alerts_page(fetch_json(f"{prometheus}/api/v1/rules"), prometheus), encoding="utf-8")
        await browser.open(page.as_uri())
        await browser.shoot(out / "prometheus-alerts.png", WHOLE_PAGE)

        say("waiting for Alertmanager to hold the client alerts")
        await asyncio.to_thread(
            wait_for, "the client alerts in Alertmanager", lambda: _alertmanager_has(alertmanager), timeout, 2.0
        )
        await browser.open(f"{alertmanager}/#/alerts")
        await browser.wait_text(CLIENT_ALERTS[0])
        if await browser.evaluate(EXPAND_GROUPS):
            await browser.wait_text("Collapse all groups")
        await browser.shoot(out / "alertmanager.png", CONTENT)


def shrink(paths: Sequence[Path]) -> None:
    """Palette PNGs (pngquant): screenshots of pages have few colours, so they lose nothing visible and most bytes."""
    pngquant = shutil.which("pngquant")
    if pngquant is None:
        say("pngquant is missing (scripts/screenshots.sh installs it): keeping the pictures as Chromium wrote them")
        return
    for path in paths:
        subprocess.run(
            [pngquant, "--force", "--skip-if-larger", "--strip", "--quality=70-95", "--output", str(path), str(path)],
            check=False,
        )


@contextlib.contextmanager
def running_demo(work: Path, ports: tuple[int, int, int], timeout: float) -> Iterator[DemoUrls]:
    demo = Demo(work / "demo-data", ports)
    demo.start()
    try:
        yield demo.wait_urls(timeout)
    finally:
        demo.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m docs_gen.screenshots", description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=IMAGES, help="where the pictures go (default: docs/images)")
    parser.add_argument(
        "--ports",
        type=int,
        nargs=3,
        default=(19784, 19090, 19093),
        metavar=("EXPORTER", "PROMETHEUS", "ALERTMANAGER"),
        help="the demo's ports (a port that is taken is replaced by a free one, which the demo prints)",
    )
    parser.add_argument("--timeout", type=float, default=300, help="seconds to wait for each condition")
    args = parser.parse_args(argv)
    started = time.monotonic()
    args.output.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kce-screenshots-") as scratch:
        work = Path(scratch)
        with running_demo(work, tuple(args.ports), args.timeout) as urls:
            asyncio.run(take(urls, work, args.output.resolve(), args.timeout))
    shrink([args.output / picture.name for picture in PICTURES])
    sizes = ", ".join(f"{p.name} {(args.output / p.name).stat().st_size // 1024} KB" for p in PICTURES)
    say(f"done in {time.monotonic() - started:.0f} s: {sizes}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
