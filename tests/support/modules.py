"""Loading the project's scripts (bench/, samples/), which live outside any installed package, as modules."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_script(path: Path, name: str) -> ModuleType:
    """Execute ``path`` as module ``name``, registered in ``sys.modules`` (its dataclasses resolve annotations
    through it)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
