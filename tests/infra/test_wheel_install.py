"""The laptop install: the wheel builds from the sources alone (no network: the shared venv's setuptools), installs
into a fresh venv, and from there — outside any checkout — `rebalancer` runs, finds the files `demo` and the sandbox
read (template, state machine, handlers, events, examples) inside the installed package, and plans the shipped
example. Without the [tools] extra the command says so in one line. Dependencies come from the shared venv's
site-packages (a path in a .pth file: its own .pth files, the editable install among them, are not read)."""

from __future__ import annotations

import json
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
from pathlib import Path

import pytest

from rebalancer_tools.emulator.demo_cluster import DEMO

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
    assert (assets / "examples/history-week.jsonl.gz").is_file()  # the week `recommend` can be seen at work on
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
        "error: the rebalancer command line needs click, rich, which the [tools] extra installs: from a checkout of "
        "hyperpod-rebalancer, pipx install --force --pip-args \"-c requirements/dev.lock\" '.[tools]' (README "
        "\"Install on a laptop\")"]


def start_sandbox(rebalancer: Path, cwd: Path) -> tuple[subprocess.Popen[str], list[str]]:
    """`rebalancer emulator --seed-demo` on a free port, and what it prints up to "Ctrl-C stops it."."""
    sandbox = subprocess.Popen([str(rebalancer), "emulator", "--seed-demo", "--port", "0"], cwd=cwd, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "PYTHONUNBUFFERED": "1"})
    assert sandbox.stdout is not None
    watchdog = threading.Timer(120, sandbox.kill)  # a sandbox that never comes up fails the test, not hangs it
    watchdog.start()
    banner: list[str] = []
    try:
        while not banner or banner[-1] != "Ctrl-C stops it.":
            line = sandbox.stdout.readline()
            assert line, ("the sandbox ended before it was ready", banner, sandbox.stderr and sandbox.stderr.read())
            banner.append(line.rstrip("\n"))
    finally:
        watchdog.cancel()
    return sandbox, banner


def test_the_sandbox_from_an_install_prints_commands_that_run_there_and_stops_on_ctrl_c(
        installed: Path, tmp_path: Path) -> None:
    rebalancer = installed / "bin" / "rebalancer"
    sandbox, banner = start_sandbox(rebalancer, tmp_path)
    try:
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
        for line in banner:
            if line.startswith("  export "):
                env.update(pair.split("=", 1) for pair in shlex.split(line.removeprefix("  export ")))
        printed = [shlex.split(line.split("#")[0]) for line in banner
                   if line.startswith(("  rebalancer snapshot ", "  rebalancer plan "))]
        assert [words[1] for words in printed] == ["snapshot", "plan"]
        for words in printed:  # as printed, from a folder with no checkout above it
            done = subprocess.run([str(rebalancer), *words[1:]], cwd=tmp_path, capture_output=True, text=True,
                                  timeout=120, env=env)
            assert done.returncode == 0, (words, done.stdout, done.stderr)
        snapshot = json.loads((tmp_path / "snap.json").read_text())
        assert {q["Name"] for q in snapshot["quotas"]} == {t.quota_name for t in DEMO.teams}  # the demo, seeded
    finally:
        sandbox.send_signal(signal.SIGINT)
        out, err = sandbox.communicate(timeout=60)
    assert sandbox.returncode == 0, err
    assert "Traceback" not in err
    assert out.splitlines()[-1] == "stopping"
