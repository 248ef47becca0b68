"""A real Kubernetes control plane on 127.0.0.1 for the chart's tests: etcd, kube-apiserver and
kube-controller-manager built by the set-up (scripts/setup.d/07-kubernetes.sh), the Prometheus Operator's CRDs of
the chart's custom resources applied, every file under one directory, every process stopped by its pid.

There is no kubelet and no scheduler: the controllers create Pods (Deployments, Jobs) and admission judges them
(PodSecurity above all), and they stay Pending. Helm talks to it through a kubeconfig with an admin token; the tests
read it with `ControlPlane.get` and friends (plain HTTPS, no client library)."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import http.client
import itertools
import json
import secrets
import signal
import ssl
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from harness.ports import free_ports
from harness.processes import stop_process

ROOT = Path(__file__).resolve().parents[3]
TOOLS = ROOT / ".tools" / "kubernetes"
CRDS = TOOLS / "crds"
#: The chart's tests say what they ran on (docs/helm.md names the same).
KUBERNETES_VERSION = "v1.37.2"

T = TypeVar("T")


class KubernetesError(RuntimeError):
    """An API call answered with an error status: ``status`` is the HTTP code, ``body`` the Status object."""

    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {body[:2000]}")
        self.status = status
        self.body = body


@dataclass
class ControlPlane:
    """A running control plane: its API's base URL, the admin token and CA helm and the tests use."""

    base: str
    token: str
    ca_file: Path
    kubeconfig: Path
    workdir: Path
    logs: dict[str, Path] = field(default_factory=dict)
    _context: ssl.SSLContext | None = None
    _connection: http.client.HTTPSConnection | None = None

    def request(self, method: str, path: str, body: object | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        # 429 is the API server asking to come back (a CRD's storage still starting, priority and fairness).
        for attempt in itertools.count(1):
            status, reason, payload, retry_after = self._exchange(method, path, data, headers)
            if status < 400:
                return json.loads(payload) if payload else None
            if status != 429 or attempt == 20:
                raise KubernetesError(method, path, status, payload.decode(errors="replace") or reason)
            time.sleep(float(retry_after or 1))
        raise AssertionError("unreachable")

    def _exchange(
        self, method: str, path: str, data: bytes | None, headers: dict[str, str]
    ) -> tuple[int, str, bytes, str | None]:
        """One request over the kept connection (a new TLS handshake per request costs both sides more CPU than
        the request), opened again once if the server closed it."""
        for attempt in (1, 2):
            if self._connection is None:
                if self._context is None:
                    self._context = ssl.create_default_context(cafile=str(self.ca_file))
                parts = urllib.parse.urlsplit(self.base)
                self._connection = http.client.HTTPSConnection(
                    parts.hostname or "127.0.0.1", parts.port, timeout=30, context=self._context
                )
            try:
                self._connection.request(method, path, body=data, headers=headers)
                response = self._connection.getresponse()
                return response.status, response.reason, response.read(), response.getheader("Retry-After")
            except (http.client.HTTPException, OSError):
                self._connection.close()
                self._connection = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def exists(self, path: str) -> bool:
        try:
            self.get(path)
        except KubernetesError as error:
            if error.status == 404:
                return False
            raise
        return True

    def items(self, path: str, **selectors: str) -> list[dict[str, Any]]:
        """The items of a list: ``labelSelector=...``, ``fieldSelector=...`` as keyword arguments."""
        query = urllib.parse.urlencode(selectors)
        return list(self.get(f"{path}?{query}" if query else path)["items"])

    def create(self, path: str, body: dict[str, Any]) -> Any:
        return self.request("POST", path, body)

    def delete(self, path: str) -> None:
        with contextlib.suppress(KubernetesError):
            self.request("DELETE", path, {"propagationPolicy": "Background"})

    def create_namespace(self, name: str, labels: dict[str, str] | None = None) -> None:
        self.create("/api/v1/namespaces", {"metadata": {"name": name, "labels": labels or {}}})

    def wait(self, check: Callable[[], T | None], what: str, timeout: float = 60.0, poll: float = 0.2) -> T:
        """``check()``'s first truthy value: the controllers act asynchronously (no fixed sleeps)."""
        deadline = time.monotonic() + timeout
        last: object = None
        while True:
            try:
                found = check()
            except (KubernetesError, OSError) as error:
                last = error
            else:
                if found:
                    return found
                last = found
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not within {timeout:.0f} s; last: {last!r}"[:4000])
            time.sleep(poll)


class _CrdLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """YAML 1.1's `=` (the "value" type) appears as a plain string in the CRDs' descriptions; PyYAML refuses it."""


_CrdLoader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))


def load_crd(path: Path) -> dict[str, Any]:
    return dict(yaml.load(path.read_text(), Loader=_CrdLoader))


def _established(plane: ControlPlane, path: str) -> bool:
    conditions = (plane.get(path).get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def _built(name: str) -> str:
    path = TOOLS / name
    if not path.is_file():
        raise RuntimeError(f"{path} is missing: run bash scripts/setup.sh (scripts/setup.d/07-kubernetes.sh builds it)")
    return str(path)


def _kubeconfig(path: Path, base: str, ca_file: Path, user: str, token: str) -> None:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "local", "cluster": {"server": base, "certificate-authority": str(ca_file)}}],
                "users": [{"name": user, "user": {"token": token}}],
                "contexts": [{"name": "local", "context": {"cluster": "local", "user": user}}],
                "current-context": "local",
            }
        )
    )
    path.chmod(0o600)


def _wait_http(
    name: str,
    process: subprocess.Popen[bytes],
    log: Path,
    url: str,
    context: Callable[[], ssl.SSLContext | None],
    timeout: float,
) -> None:
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
            raise RuntimeError(f"{name} exited with {process.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(url, timeout=2, context=context()) as response:
                if response.status == 200:
                    return
        except (OSError, ValueError) as error:
            last = error
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer 200 within {timeout:.0f} s (last: {last!r}); see {log}")


def _die_with_parent() -> None:
    """Runs in the child before exec: a test run killed outright (no finally runs) takes its control plane along
    (PR_SET_PDEATHSIG), instead of leaving it holding memory and ports. SIGKILL: its data is thrown away anyway, and
    a kube-apiserver told to stop while etcd stops too waits for it forever."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


@contextlib.contextmanager
def running_control_plane(workdir: Path) -> Iterator[ControlPlane]:
    """etcd, kube-apiserver and kube-controller-manager with their data, keys, certificates and logs under
    ``workdir``; yields once the API is ready, the controllers run and the CRDs are established."""
    etcd, apiserver, controller_manager = _built("etcd"), _built("kube-apiserver"), _built("kube-controller-manager")
    workdir.mkdir(parents=True, exist_ok=True)
    etcd_port, etcd_peer_port, api_port = free_ports(3)
    sa_key, sa_pub = workdir / "sa.key", workdir / "sa.pub"
    subprocess.run(["openssl", "genrsa", "-out", sa_key, "2048"], check=True, capture_output=True, timeout=60)
    subprocess.run(["openssl", "rsa", "-in", sa_key, "-pubout", "-out", sa_pub], check=True, capture_output=True)
    admin_token, kcm_token = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    tokens = workdir / "tokens.csv"
    tokens.write_text(f'{admin_token},admin,admin,"system:masters"\n{kcm_token},system:kube-controller-manager,kcm\n')
    tokens.chmod(0o600)
    certs = workdir / "certs"
    base = f"https://127.0.0.1:{api_port}"
    ca_file = certs / "apiserver.crt"
    plane = ControlPlane(base, admin_token, ca_file, workdir / "admin.kubeconfig", workdir)
    processes: list[subprocess.Popen[bytes]] = []

    def start(name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        log = workdir / f"{name}.log"
        plane.logs[name] = log
        with log.open("wb") as out:
            process = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, cwd=workdir, preexec_fn=_die_with_parent
            )
        processes.append(process)
        return process

    try:
        etcd_process = start(
            "etcd",
            [
                etcd,
                "--name=default",
                f"--data-dir={workdir / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{etcd_port}",
                f"--advertise-client-urls=http://127.0.0.1:{etcd_port}",
                f"--listen-peer-urls=http://127.0.0.1:{etcd_peer_port}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer_port}",
                f"--initial-cluster=default=http://127.0.0.1:{etcd_peer_port}",
                # A test cluster's data dies with it: no fsync on every write (CPU and disk time on a shared box).
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
        )
        _wait_http("etcd", etcd_process, plane.logs["etcd"], f"http://127.0.0.1:{etcd_port}/health", lambda: None, 30)
        api_process = start(
            "kube-apiserver",
            [
                apiserver,
                f"--etcd-servers=http://127.0.0.1:{etcd_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={api_port}",
                # A self-signed serving certificate for 127.0.0.1, written here (ca_file is its chain).
                f"--cert-dir={certs}",
                f"--token-auth-file={tokens}",
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={sa_pub}",
                f"--service-account-signing-key-file={sa_key}",
                "--service-cluster-ip-range=10.96.0.0/24",
                # The default reconciler would publish 127.0.0.1 as the kubernetes Service's endpoint, which it
                # refuses; nothing here needs that Service's endpoints.
                "--endpoint-reconciler-type=none",
                "--profiling=false",
            ],
        )

        def api_context() -> ssl.SSLContext | None:
            return ssl.create_default_context(cafile=str(ca_file)) if ca_file.is_file() else None

        _wait_http("kube-apiserver", api_process, plane.logs["kube-apiserver"], f"{base}/readyz", api_context, 90)
        _kubeconfig(plane.kubeconfig, base, ca_file, "admin", admin_token)
        kcm_kubeconfig = workdir / "kube-controller-manager.kubeconfig"
        _kubeconfig(kcm_kubeconfig, base, ca_file, "system:kube-controller-manager", kcm_token)
        start(
            "kube-controller-manager",
            [
                controller_manager,
                f"--kubeconfig={kcm_kubeconfig}",
                # Only what the tests watch: Deployments and CronJobs making Pods (judged by admission), the
                # namespaces' default ServiceAccounts, the garbage collector that removes what an uninstalled object
                # owned, and the claims' deletion once no Pod uses them.
                "--controllers=deployment-controller,replicaset-controller,cronjob-controller,job-controller,"
                "serviceaccount-controller,garbage-collector-controller,persistentvolumeclaim-protection-controller",
                "--use-service-account-credentials",
                f"--service-account-private-key-file={sa_key}",
                f"--root-ca-file={ca_file}",
                "--leader-elect=false",
                # No serving port: nothing here reads its health or metrics.
                "--secure-port=0",
            ],
        )
        crds = [load_crd(path) for path in sorted(CRDS.glob("*.yaml"))]
        for crd in crds:
            plane.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        for crd in crds:
            path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}"
            plane.wait(functools.partial(_established, plane, path), f"{path} established")
            # Established is announced before the resource's storage serves: list it once.
            group, plural = crd["spec"]["group"], crd["spec"]["names"]["plural"]
            for version in crd["spec"]["versions"]:
                plane.get(f"/apis/{group}/{version['name']}/{plural}")
        # The controller manager is running once it has given the default namespace its ServiceAccount.
        plane.wait(
            lambda: plane.exists("/api/v1/namespaces/default/serviceaccounts/default"),
            "kube-controller-manager running (the default namespace's ServiceAccount)",
        )
        yield plane
    finally:
        for process in reversed(processes):
            stop_process(process)
