from __future__ import annotations

import pytest

from tests.deployment.helm.chart import Helm, make_helm


@pytest.fixture(scope="session")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Helm:
    return make_helm(tmp_path_factory.mktemp("helm-home"))
