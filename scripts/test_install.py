"""`make test-install`: the laptop install as a user makes it, on the oldest and the newest supported Python.

Builds the wheel from the sources (as tests/infra/test_wheel_install.py does, the package's _assets links followed),
installs it with the `[tools]` extra into a fresh virtualenv of each Python named on the command line, with
requirements/dev.lock as constraints (the versions the tests ran), from the package index, and runs the installed
`rebalancer` outside the checkout: `--version`, a plan of the shipped example policy and snapshot, the sandbox
(the plan it prints run as printed, then stopped with Ctrl-C's SIGINT: no traceback) and the demo (every scenario as
expected). Needs the package index; `make test` stays offline and checks the same wheel against
the shared virtualenv. On 3.11 the constraints' environment markers pick the last numpy, contourpy and networkx that
support it.

    python scripts/test_install.py 11 12 13
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc")


def run(*args: str | Path, cwd: Path) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"test-install: {' '.join(map(str, args))} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done.stdout


def build_wheel(work: Path) -> Path:
    src = work / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "layers/core/rebalancer", src / "layers/core/rebalancer", ignore=SKIP)
    shutil.copytree(ROOT / "tools/rebalancer_tools", src / "tools/rebalancer_tools", ignore=SKIP, symlinks=False)
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w",
        work / "dist", src, cwd=src)
    [wheel] = (work / "dist").glob("hyperpod_rebalancer-*.whl")
    return wheel


def check(minor: str, wheel: Path, work: Path) -> None:
    interp = run(ROOT / "scripts/find-python", minor, cwd=ROOT).strip()
    run(interp, "-c", f"import sys; assert sys.version_info[:2] == (3, {minor}), sys.version", cwd=work)
    venv = work / f"py3{minor}"
    run(interp, "-m", "venv", venv, cwd=work)
    run(venv / "bin/python", "-m", "pip", "install", "-q", "--disable-pip-version-check", f"{wheel}[tools]",
        "-c", ROOT / "requirements/dev.lock", cwd=work)
    rebalancer = venv / "bin/rebalancer"
    version = run(rebalancer, "--version", cwd=work).strip()
    examples = Path(run(venv / "bin/python", "-c", "import pathlib, rebalancer_tools; "
                        "print(pathlib.Path(rebalancer_tools.__file__).parent / '_assets' / 'examples')",
                        cwd=work).strip())
    plan = run(rebalancer, "plan", "--policy", examples / "policy.yaml", "--snapshot", examples / "snapshot.json",
               "--format", "json", cwd=work)
    sandbox(rebalancer, work)
    demo = work / f"demo-3{minor}"
    run(rebalancer, "demo", "--out", demo, cwd=work)
    verdict = (demo / "demo-report.md").read_text().splitlines()[2]
    if not verdict.startswith("**Every scenario ended as expected**"):
        sys.exit(f"test-install: the installed demo on Python 3.{minor}: {verdict}")
    print(f"python 3.{minor}: {version}; plan of the shipped example: {len(plan)} bytes of JSON; demo: {verdict}")


def sandbox(rebalancer: Path, work: Path) -> None:
    """The sandbox as a user starts it: the plan it prints runs as printed, and Ctrl-C stops it without a traceback
    (before 3.13 threading.Thread has a `_stop` of its own, which a thread of the sandbox once hid)."""
    served = subprocess.Popen([str(rebalancer), "emulator", "--seed-demo", "--port", "0"], cwd=work, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert served.stdout is not None
    env, plan = dict(os.environ), None
    try:
        for line in served.stdout:
            if line.startswith("  export "):
                env.update(pair.split("=", 1) for pair in shlex.split(line.removeprefix("  export ")))
            elif line.startswith("  rebalancer plan "):
                plan = shlex.split(line)[1:]
            elif line.startswith("Ctrl-C stops it."):
                break
        if plan is None:
            sys.exit("test-install: the sandbox printed no plan command")
        done = subprocess.run([str(rebalancer), *plan], cwd=work, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            sys.exit(f"test-install: the sandbox's printed plan failed ({done.returncode}):\n{done.stderr}")
    finally:
        served.send_signal(signal.SIGINT)
        _, err = served.communicate(timeout=60)
    if served.returncode != 0 or "Traceback" in err:
        sys.exit(f"test-install: the sandbox stopped by SIGINT exited {served.returncode}:\n{err}")


def main() -> None:
    minors = sys.argv[1:] or ["11", "12", "13"]
    with tempfile.TemporaryDirectory(prefix="rebalancer-install-") as tmp:
        work = Path(tmp)
        wheel = build_wheel(work)
        for minor in minors:
            check(minor, wheel, work)


if __name__ == "__main__":
    main()
