"""layers/core/requirements.txt is the one place the layer's packages are pinned: dev.lock agrees with it, and it is
closed under the pinned packages' own requirements (read from this venv's metadata, which has the same versions), so
build_layer's `--no-deps` install misses nothing but what it leaves out on purpose."""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version
from support.layer_build import build_layer
from support.template import ROOT

LAYER_REQUIREMENTS = ROOT / "layers" / "core" / "requirements.txt"
DEV_LOCK = ROOT / "requirements" / "dev.lock"
# The Lambda's platform, for the environment markers of the packages' requirements.
LAMBDA_ENV = {**default_environment(), "python_version": "3.13", "python_full_version": "3.13.0",
              "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "aarch64",
              "implementation_name": "cpython", "platform_python_implementation": "CPython", "os_name": "posix"}


def requirements(path: Path) -> list[Requirement]:
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [Requirement(line) for line in lines if line and not line.startswith("-")]


def pins(path: Path) -> dict[str, Version]:
    out = {}
    for r in requirements(path):
        (spec,) = r.specifier
        assert spec.operator == "==", f"{path.name}: {r} is not pinned with =="
        out[canonicalize_name(r.name)] = Version(spec.version)
    return out


def test_dev_lock_pins_every_layer_package_at_the_same_version() -> None:
    lock = pins(DEV_LOCK)
    for name, version in pins(LAYER_REQUIREMENTS).items():
        assert lock.get(name) == version, f"dev.lock pins {name}=={lock.get(name)}, the layer {version}"


def test_dev_in_takes_the_layer_pins_from_the_layer_file_only() -> None:
    dev_in = ROOT / "requirements" / "dev.in"
    assert "-r ../layers/core/requirements.txt" in dev_in.read_text().splitlines()
    layer = set(pins(LAYER_REQUIREMENTS))
    again = {canonicalize_name(r.name) for r in requirements(dev_in)} & layer
    assert not again, f"dev.in pins {sorted(again)} a second time; layers/core/requirements.txt is the one place"


def test_the_layer_requirements_are_closed_under_their_dependencies() -> None:
    layer = {canonicalize_name(r.name): r for r in requirements(LAYER_REQUIREMENTS)}
    versions = pins(LAYER_REQUIREMENTS)
    left_out = {canonicalize_name(n) for n in build_layer().LEFT_OUT}
    missing = []
    for name, req in layer.items():
        dist = metadata.distribution(name)
        assert Version(dist.version) == versions[name], f"this venv has {name}=={dist.version}"
        for raw in dist.requires or []:
            dep = Requirement(raw)
            extras = req.extras or {""}
            if dep.marker and not any(dep.marker.evaluate({**LAMBDA_ENV, "extra": e}) for e in extras):
                continue
            dep_name = canonicalize_name(dep.name)
            if dep_name in left_out:
                continue
            if dep_name not in versions:
                missing.append(f"{name} requires {dep}")
            elif not dep.specifier.contains(versions[dep_name], prereleases=True):
                missing.append(f"{name} requires {dep}, the layer pins {versions[dep_name]}")
    assert not missing, "; ".join(missing)


@pytest.mark.parametrize("name", ["aiohttp"])
def test_what_the_layer_leaves_out_is_only_required_by_what_it_prunes(name: str) -> None:
    """aiohttp is kubernetes' requirement for kubernetes.aio alone: the synchronous client never imports it."""
    assert name in build_layer().LEFT_OUT
    kubernetes = Path(str(metadata.distribution("kubernetes").locate_file("kubernetes")))
    users = {p.relative_to(kubernetes).parts[0] for p in kubernetes.rglob("*.py")
             if re.search(rf"^\s*(import|from) {name}\b", p.read_text(errors="replace"), re.MULTILINE)}
    assert users <= {"aio"}, users
