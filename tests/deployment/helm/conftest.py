from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.deployment.helm.chart import Helm, make_helm
from tests.deployment.helm.control_plane import ControlPlane, running_control_plane


@pytest.fixture(scope="session")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Helm:
    return make_helm(tmp_path_factory.mktemp("helm-home"))


@pytest.fixture(scope="module")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """One Kubernetes control plane per module that asks for it (one does): held for the session, its etcd, API
    server and controller manager kept a tenth of a core busy for the twenty minutes after that module ended."""
    with running_control_plane(tmp_path_factory.mktemp("kubernetes")) as plane:
        yield plane


@pytest.fixture(scope="module")
def cluster_helm(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    """helm installing into the session's control plane."""
    return make_helm(tmp_path_factory.mktemp("cluster-helm-home"), control_plane.kubeconfig)
