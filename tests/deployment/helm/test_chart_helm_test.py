"""The `helm test` pod: how it is rendered, and its script run here against local servers standing in for the
exporter's Service (there is no cluster in the test bench)."""

from __future__ import annotations

import http.server
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import trustme

from harness.ports import free_port
from tests.deployment.helm.chart import Helm, by_kind, render

TLS = ("--set", "webConfig.enabled=true,webConfig.tls.enabled=true,webConfig.tls.secretName=exporter-tls")


def readyz_pod(manifest: str) -> dict:
    (pod,) = by_kind(manifest, "Pod")
    return pod


def env_of(pod: dict) -> dict[str, str]:
    (container,) = pod["spec"]["containers"]
    return {entry["name"]: entry["value"] for entry in container["env"]}


def test_the_test_pod_is_a_helm_test_hook_running_the_exporter_image(helm: Helm) -> None:
    manifest = render(helm, "--set", "image.registry=registry.example,image.tag=1.2.3")
    pod = readyz_pod(manifest)
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    # Hooks are not part of the release: a Pod the policy kept would outlive helm uninstall (test_chart_on_kubernetes
    # checks it on a cluster). A failed run's log is printed before it goes.
    assert pod["metadata"]["annotations"]["helm.sh/hook-delete-policy"] == (
        "before-hook-creation,hook-succeeded,hook-failed"
    )
    assert pod["metadata"]["annotations"]["helm.sh/hook-output-log-policy"] == "hook-failed"
    assert pod["spec"]["restartPolicy"] == "Never" and pod["spec"]["automountServiceAccountToken"] is False
    (container,) = pod["spec"]["containers"]
    (deployment,) = by_kind(manifest, "Deployment")
    assert container["image"] == deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    assert container["image"] == "registry.example/kafka-client-exporter:1.2.3"
    assert container["command"][:2] == ["python", "-c"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert env_of(pod) == {
        "URL": "http://kce-kafka-client-exporter.monitoring.svc:9784/readyz",
        "TIMEOUT_SECONDS": "120",
    }


def test_the_test_pod_follows_the_web_config(helm: Helm) -> None:
    assert env_of(readyz_pod(render(helm, *TLS)))["URL"].startswith("https://")
    mtls = env_of(readyz_pod(render(helm, *TLS, "--set", "webConfig.tls.clientAuthType=RequireAndVerifyClientCert")))
    assert mtls["TCP_ONLY"] == "1"


def test_the_test_pod_can_be_switched_off(helm: Helm) -> None:
    assert not by_kind(render(helm, "--set", "helmTest.enabled=false"), "Pod")


class Readyz(http.server.BaseHTTPRequestHandler):
    """/readyz answers 503 `not_ready_for` times, then 200."""

    not_ready_for = 0
    requests = 0

    def do_GET(self) -> None:
        type(self).requests += 1
        ready = self.path == "/readyz" and type(self).requests > self.not_ready_for
        self.send_response(200 if ready else 503)
        self.end_headers()
        self.wfile.write(b"ready\n" if ready else b"not ready\n")

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def readyz_server(not_ready_for: int, context: ssl.SSLContext | None = None) -> Iterator[int]:
    handler = type("Handler", (Readyz,), {"not_ready_for": not_ready_for, "requests": 0})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def run_script(pod: dict, **env: str) -> subprocess.CompletedProcess:
    (container,) = pod["spec"]["containers"]
    return subprocess.run(
        [sys.executable, "-c", container["command"][2]],
        env={**env_of(pod), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_script_waits_for_readyz(helm: Helm) -> None:
    pod = readyz_pod(render(helm))
    with readyz_server(not_ready_for=1) as port:
        result = run_script(pod, URL=f"http://127.0.0.1:{port}/readyz", TIMEOUT_SECONDS="20")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "answered 200" in result.stdout


def test_the_script_fails_when_readyz_never_answers_200(helm: Helm) -> None:
    pod = readyz_pod(render(helm))
    with readyz_server(not_ready_for=1000) as port:
        result = run_script(pod, URL=f"http://127.0.0.1:{port}/readyz", TIMEOUT_SECONDS="1")
    assert result.returncode == 1
    assert "not ready within 1s; last answer: HTTP 503" in result.stdout


def test_the_script_speaks_https_without_verifying_the_certificate(helm: Helm) -> None:
    pod = readyz_pod(render(helm, *TLS))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    trustme.CA().issue_cert("exporter.example").configure_cert(context)
    with readyz_server(not_ready_for=0, context=context) as port:
        result = run_script(pod, URL=f"https://127.0.0.1:{port}/readyz", TIMEOUT_SECONDS="20")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_script_only_connects_when_client_certificates_are_required(helm: Helm) -> None:
    pod = readyz_pod(render(helm, *TLS, "--set", "webConfig.tls.clientAuthType=RequireAndVerifyClientCert"))
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        result = run_script(pod, URL=f"https://127.0.0.1:{port}/readyz", TIMEOUT_SECONDS="20")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "accepts connections" in result.stdout
    port = free_port()  # closed, and from this worker's own slice: no other test binds it meanwhile
    result = run_script(pod, URL=f"https://127.0.0.1:{port}/readyz", TIMEOUT_SECONDS="1")
    assert result.returncode == 1 and "refused" in result.stdout
