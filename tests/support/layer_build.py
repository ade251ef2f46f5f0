"""layers/core/build_layer.py (the CoreLayer build, not a package module) loaded by path, for its lists."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from support.template import ROOT


def build_layer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_layer", ROOT / "layers" / "core" / "build_layer.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
