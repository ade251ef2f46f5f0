"""The laptop install: the wheel builds from the sources alone (no network: the shared venv's setuptools), installs
into a fresh venv, and from there — outside any checkout — `rebalancer` runs, finds the files `demo` and the sandbox
read (template, state machine, handlers, events, examples) inside the installed package, and plans the shipped
example. Without the [tools] extra the command says so in one line. Dependencies come from the shared venv's
site-packages (a path in a .pth file: its own .pth files, the editable install among them, are not read)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")


def run(*args: str | Path, cwd: Path, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(cwd)})
    if ok:
        assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    # symlinks=False: the package's _assets links become the files they point at, as in a wheel built from a sdist
    shutil.copytree(ROOT / "layers/core/rebalancer", src / "layers/core/rebalancer", ignore=SKIP)
    shutil.copytree(ROOT / "tools/rebalancer_tools", src / "tools/rebalancer_tools", ignore=SKIP, symlinks=False)
    dist = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", dist,
        src, cwd=src)
    [built] = dist.glob("hyperpod_rebalancer-*.whl")
    return built


def fresh_venv(where: Path, wheel: Path, *, with_dependencies: bool) -> Path:
    run(sys.executable, "-m", "venv", "--without-pip", where, cwd=where.parent)
    python = where / "bin" / "python"
    run(sys.executable, "-m", "pip", "--python", python, "install", "--no-index", "--no-deps", "-q", wheel,
        cwd=where.parent)
    if with_dependencies:
        [site] = (where / "lib").glob("python3*/site-packages")
        (site / "shared-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return where


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fresh_venv(tmp_path_factory.mktemp("venv") / "fresh", wheel, with_dependencies=True)


def test_the_installed_command_runs_outside_a_checkout(installed: Path, tmp_path: Path) -> None:
    rebalancer = installed / "bin" / "rebalancer"
    assert run(rebalancer, "--version", cwd=tmp_path).stdout.startswith("rebalancer, version ")
    where = json.loads(run(installed / "bin" / "python", "-c", (
        "import json, rebalancer, rebalancer_tools\n"
        "from rebalancer_tools.packaging.template import find_root, load_template\n"
        "root = find_root(); tpl = load_template(root)\n"
        "print(json.dumps({'runtime': rebalancer.__file__, 'tools': rebalancer_tools.__file__, 'root': str(root),"
        " 'handlers': sorted(p.parent.name for p in (root / 'functions').glob('*/app.py')),"
        " 'functions': len([r for r in tpl['Resources'].values() if r['Type'] == 'AWS::Serverless::Function'])}))"),
        cwd=tmp_path).stdout)
    site = str(installed)
    assert where["runtime"].startswith(site)
    assert where["tools"].startswith(site)  # the wheel's package, not the checkout's editable one
    assert where["root"].startswith(site)
    assert len(where["handlers"]) == where["functions"]  # every function of the template has its handler shipped
    assets = Path(where["root"])
    planned = run(rebalancer, "plan", "--snapshot", assets / "examples/snapshot.json", "--policy",
                  assets / "examples/policy.yaml", "--format", "json", cwd=tmp_path)
    assert json.loads(planned.stdout)["cluster"]
    demo_help = run(rebalancer, "demo", "--help", cwd=tmp_path).stdout
    assert "six demo scenarios" in " ".join(demo_help.split())


def test_without_the_tools_extra_the_command_says_so_in_one_line(wheel: Path, tmp_path: Path) -> None:
    bare = fresh_venv(tmp_path / "bare", wheel, with_dependencies=False)
    done = run(bare / "bin" / "rebalancer", "--version", cwd=tmp_path, ok=False)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "error: the rebalancer command line needs click, rich, which the [tools] extra installs: pipx install "
        "'hyperpod-rebalancer[tools]' (see README \"Install on a laptop\")"]
