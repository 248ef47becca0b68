"""The prometheus source against in-process HTTP(S) endpoints: readings, auth, TLS and each failure's reason."""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import trustme
from aiohttp import web

from exporter.config.settings import ClusterConfig
from exporter.snapshot import ChannelConnections, ClientConnections, JmxReading
from exporter.sources.base import Reason, SourceError
from exporter.sources.prometheus_endpoint import PrometheusEndpointSource
from harness.ports import free_port

GAUGES = (
    'kafka_server_socketservermetrics_connections{client_software_name="kcat",client_software_version="1.7.1",'
    'listener="PLAINTEXT",network_processor="0"} 4.0\n'
)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def metrics(request: web.Request) -> web.Response:
    return web.Response(text=GAUGES, content_type="text/plain", charset="utf-8")


def closed_port() -> int:
    # From this worker's own slice: no other test binds it meanwhile.
    return free_port()


async def serve(handler: Handler, ssl_context=None) -> tuple[web.AppRunner, int]:
    app = web.Application()
    app.router.add_get("/metrics", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]


def source(prometheus: dict, urls: dict[int, str], deadline: float = 2.0) -> PrometheusEndpointSource:
    cluster = ClusterConfig.model_validate(
        {
            "name": "prod",
            "prometheus": {"preset": "confluent", **prometheus},
            "brokers": [{"id": i, "metrics_url": url} for i, url in urls.items()],
        }
    )
    return PrometheusEndpointSource(cluster, deadline, None)


async def read_all(src: PrometheusEndpointSource) -> dict[str, JmxReading | SourceError]:
    out: dict[str, JmxReading | SourceError] = {}
    for poll in src.polls({}):
        try:
            reading = await poll.read()
            assert isinstance(reading, JmxReading)
            out[poll.broker] = reading
        except SourceError as error:
            out[poll.broker] = error
    return out


def reason(outcome: JmxReading | SourceError) -> str:
    assert isinstance(outcome, SourceError), outcome
    return outcome.reason


def test_reads_each_endpoint_and_a_down_one_fails_alone() -> None:
    async def run() -> dict[str, JmxReading | SourceError]:
        runner, port = await serve(metrics)
        try:
            down = f"http://127.0.0.1:{closed_port()}/metrics"
            return await read_all(source({}, {1: f"http://127.0.0.1:{port}/metrics", 2: down}))
        finally:
            await runner.cleanup()

    outcome = asyncio.run(run())
    assert outcome["1"] == JmxReading(
        clients=(ClientConnections("PLAINTEXT", "0", "kcat", "1.7.1", 4),),
        suites=outcome["1"].suites,  # type: ignore[union-attr]
    )
    assert reason(outcome["2"]) == Reason.CONNECTION and "127.0.0.1" in str(outcome["2"])


def test_the_reporter_preset_reads_the_channels_and_the_jmx_exporter_presets_do_not() -> None:
    # What the Strimzi Metrics Reporter serves: the same text read under each preset.
    text = (
        'kafka_server_socket_server_metrics_connections{clientSoftwareName="kcat",clientSoftwareVersion="1.7.1",'
        'listener="PLAINTEXT",networkProcessor="0"} 4.0\n'
        "# TYPE kafka_server_raft_channel_metrics_connection_count gauge\n"
        "kafka_server_raft_channel_metrics_connection_count 1.0\n"
        "# TYPE kafka_server_app_info_version_info gauge\n"
        'kafka_server_app_info_version_info{version="4.3.0"} 1\n'
    )

    async def reporter(request: web.Request) -> web.Response:
        return web.Response(text=text, content_type="text/plain", charset="utf-8")

    async def run(preset: str) -> JmxReading:
        runner, port = await serve(reporter)
        try:
            outcome = await read_all(source({"preset": preset}, {1: f"http://127.0.0.1:{port}/metrics"}))
        finally:
            await runner.cleanup()
        assert isinstance(outcome["1"], JmxReading)
        return outcome["1"]

    reading = asyncio.run(run("strimzi_reporter"))
    assert reading.clients == (ClientConnections("PLAINTEXT", "0", "kcat", "1.7.1", 4),)
    assert reading.channels == (ChannelConnections("raft-channel", None, 1),)
    assert reading.release == "4.3.0" and reading.channels_read
    for preset in ("strimzi", "confluent"):
        other = asyncio.run(run(preset))
        assert not other.channels_read and other.channels == () and other.release is None


def test_status_content_type_and_text_failures_have_their_reasons() -> None:
    # The slow endpoint answers only once the reads are over, so the deadline can be long enough for the others to
    # answer within it on a loaded machine (at 0.5 s, a stall there would have made any of them a timeout).
    released = asyncio.Event()

    async def answer(request: web.Request) -> web.Response:
        kind = request.query.get("kind")
        if kind == "403":
            return web.Response(status=403)
        if kind == "404":
            return web.Response(status=404)
        if kind == "redirect":
            raise web.HTTPFound("http://elsewhere.example/metrics")
        if kind == "html":
            return web.Response(text="<html>hello</html>", content_type="text/html")
        if kind == "slow":
            await released.wait()
        return web.Response(
            text='kafka_server_socketservermetrics_connections{listener="P" oops\n', content_type="text/plain"
        )

    async def run() -> dict[str, JmxReading | SourceError]:
        runner, port = await serve(answer)
        try:
            kinds = ["403", "404", "html", "garbage", "slow", "redirect"]
            urls = {i: f"http://127.0.0.1:{port}/metrics?kind={k}" for i, k in enumerate(kinds)}
            return await read_all(source({}, urls, deadline=2.0))
        finally:
            released.set()
            await runner.cleanup()

    outcome = asyncio.run(run())
    assert [reason(outcome[str(i)]) for i in range(6)] == [
        Reason.AUTHORIZATION,
        Reason.INVALID_RESPONSE,
        Reason.INVALID_RESPONSE,
        Reason.INVALID_RESPONSE,
        Reason.TIMEOUT,
        Reason.INVALID_RESPONSE,
    ]
    assert "redirects (HTTP 302) to http://elsewhere.example/metrics" in str(outcome["5"])
    assert "text/html" in str(outcome["2"]) and "within 2 s" in str(outcome["4"])


def require_auth(expected: str) -> Handler:
    async def handler(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != expected:
            return web.Response(status=401)
        return await metrics(request)

    return handler


def test_basic_auth_and_a_wrong_password(tmp_path: Path) -> None:
    expected = "Basic " + base64.b64encode(b"scraper:s3cret").decode()

    async def run() -> tuple[JmxReading | SourceError, JmxReading | SourceError]:
        runner, port = await serve(require_auth(expected))
        url = {1: f"http://127.0.0.1:{port}/metrics"}
        try:
            right = await read_all(source({"basic_auth": {"username": "scraper", "password": "s3cret"}}, url))
            wrong = await read_all(source({"basic_auth": {"username": "scraper", "password": "nope"}}, url))
            return right["1"], wrong["1"]
        finally:
            await runner.cleanup()

    right, wrong = asyncio.run(run())
    assert isinstance(right, JmxReading) and right.clients
    assert reason(wrong) == Reason.AUTHENTICATION and "nope" not in str(wrong)


def test_bearer_token_is_read_from_its_file_every_poll(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first\n")

    async def run() -> list[JmxReading | SourceError]:
        runner, port = await serve(require_auth("Bearer second"))
        try:
            src = source({"bearer_token_file": str(token)}, {1: f"http://127.0.0.1:{port}/metrics"})
            before = (await read_all(src))["1"]
            token.write_text("second\n")  # rotated under the running exporter
            return [before, (await read_all(src))["1"]]
        finally:
            await runner.cleanup()

    before, after = asyncio.run(run())
    assert reason(before) == Reason.AUTHENTICATION
    assert isinstance(after, JmxReading) and after.clients


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def test_https_with_the_cluster_ca_and_with_a_wrong_one(tmp_path: Path, ca: trustme.CA) -> None:
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)
    right_ca, wrong_ca = tmp_path / "ca.pem", tmp_path / "other-ca.pem"
    ca.cert_pem.write_to_path(str(right_ca))
    trustme.CA().cert_pem.write_to_path(str(wrong_ca))

    async def run() -> tuple[JmxReading | SourceError, JmxReading | SourceError]:
        runner, port = await serve(metrics, server_context)
        url = {1: f"https://127.0.0.1:{port}/metrics"}
        try:
            good = await read_all(source({"scheme": "https", "tls": {"ca_file": str(right_ca)}}, url))
            bad = await read_all(source({"scheme": "https", "tls": {"ca_file": str(wrong_ca)}}, url))
            return good["1"], bad["1"]
        finally:
            await runner.cleanup()

    good, bad = asyncio.run(run())
    assert isinstance(good, JmxReading) and good.clients
    assert reason(bad) == Reason.CONNECTION and "TLS" in str(bad)
