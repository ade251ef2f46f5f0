"""In an interpreter that has only the layer's requirements (and not the tools package, moto, click, rich...),
every runtime module and every handler imports: what the Lambdas run does not lean on anything installed for
development. The environment is a venv whose site-packages holds links to exactly the distributions of the layer's
requirement closure, taken from the development venv (offline; the layer's own wheels are aarch64)."""

from __future__ import annotations

import os
import subprocess
import venv
from pathlib import Path

from support.layer import FUNCTIONS, ROOT, RUNTIME, closure

IMPORT_ALL = """
import importlib, importlib.util, pkgutil, runpy, sys
import rebalancer
names = [m.name for m in pkgutil.walk_packages(rebalancer.__path__, "rebalancer.")]
for name in names:
    importlib.import_module(name)
for app in sys.argv[1:]:
    assert callable(runpy.run_path(app)["handler"]), app
# Budget periods use named zones; the Lambda image need not have the system's tz database, the layer ships tzdata.
assert importlib.util.find_spec("tzdata") is not None, "tzdata is not in the layer"
for absent in ("rebalancer_tools", "moto", "click", "rich"):
    try:
        importlib.import_module(absent)
    except ImportError:
        continue
    raise SystemExit(f"{absent} is importable: the environment is not clean")
print(len(names))
"""


def _clean_env(where: Path) -> Path:
    venv.EnvBuilder(with_pip=False, symlinks=True).create(where)
    python = where / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    for dist in closure().values():
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops:
            source = Path(str(dist.locate_file(top)))
            if source.exists() and not (site / top).exists():
                (site / top).symlink_to(source)
    return python


def test_every_runtime_module_and_handler_imports_with_only_the_layers_requirements(tmp_path: Path) -> None:
    python = _clean_env(tmp_path / "venv")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(RUNTIME.parent)
    apps = [str(p) for p in sorted(FUNCTIONS.glob("*/app.py"))]
    proc = subprocess.run([str(python), "-c", IMPORT_ALL, *apps], capture_output=True, text=True, env=env,
                          cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert int(proc.stdout.strip()) >= 20  # the walk found the package's modules
