"""Build the CoreLayer into ARTIFACTS_DIR/python: `sam build` runs it through this folder's Makefile
(BuildMethod: makefile), in a copy of this folder, with python3.13 first on PATH. Not shipped itself.

1. pip installs requirements.txt (every pin, transitive ones too, `--no-deps`) as the Lambda platform's wheels:
   aarch64 manylinux, CPython 3.13, binary only, no .pyc (compile_pyc below writes them).
2. copies the `rebalancer` package (the runtime, nothing else: the tools never ship).
3. prunes what the runtime can never load:
   - botocore's (and boto3's) service data for every service but SERVICES: ~21 MB of the 23 MB of JSON models;
   - `kubernetes.aio`, the asyncio copy of the whole client (~20 MB), which the synchronous reader never imports
     (aiohttp, its only user, is not installed either);
   - console scripts (`bin/`), tests shipped inside packages (`tests/`, `*_test.py`), type stubs, botocore's
     `examples-1.json` (documentation only), and each dist-info's RECORD (the list pip uninstalls by; 0.6 MB, read
     by nothing at run time: a version or an entry point comes from METADATA and entry_points.txt).
4. compiles every module to unchecked-hash .pyc. The layer's /opt is read-only, so without them every cold start
   compiles what it imports from source: `import kubernetes.client` alone takes 4.2 s of CPU that way and 0.6 s from
   .pyc (measured on the dev machine). kubernetes.client's generated `api/` and `models/` (about 1,600 modules, 19.6
   MB of source, mostly docstrings) ship as their bytecode only, in place of the source: that is what keeps the
   layer under 60 MB with every module compiled, and a traceback through them still names file and line.
"""

from __future__ import annotations

import compileall
import py_compile
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Every AWS service the runtime creates a client or resource for: the adapters and steps (sagemaker, cloudwatch, eks,
# sts, sns, stepfunctions), the store (dynamodb), and Powertools' utilities: Parameters (ssm; secretsmanager for
# get_secret; appconfigdata for get_app_config, the policy of PolicySource=appconfig) and Idempotency (dynamodb); and
# the X-Ray SDK, whose recorder makes an xray client for its sampling rules when Powertools' Tracer starts.
# tests/infra checks the list against the code and the built layer.
SERVICES = frozenset({"sagemaker", "cloudwatch", "eks", "sts", "sns", "stepfunctions", "dynamodb", "ssm",
                      "secretsmanager", "appconfigdata", "xray"})
# boto3 resource definitions the runtime uses (boto3.resource("dynamodb") in the store).
RESOURCES = frozenset({"dynamodb"})
# Requirements of the pinned packages that requirements.txt leaves out, and why.
LEFT_OUT = {"aiohttp": "kubernetes requires it for kubernetes.aio only, which prune() removes"}
PLATFORMS = ("manylinux2014_aarch64", "manylinux_2_28_aarch64")  # the python3.13 runtime is Amazon Linux 2023
PRUNED_PACKAGES = ("kubernetes/aio", "wrapt-stubs", "bin")  # bin: console scripts, never on a Lambda's PATH
PRUNED_DIRS = ("tests", "test")
PRUNED_FILES = ("examples-1.json", "RECORD")  # RECORD: the installed files, for pip to uninstall; nothing reads it
SOURCELESS = ("kubernetes/client/api", "kubernetes/client/models")


def pip_install(target: Path, requirements: Path) -> None:
    platform = [arg for p in PLATFORMS for arg in ("--platform", p)]
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "--root-user-action=ignore", "--no-deps", "--no-compile", "--only-binary=:all:", *platform,
                    "--python-version", "3.13", "--implementation", "cp", "--target", str(target),
                    "-r", str(requirements)], check=True)


def prune_service_data(target: Path) -> None:
    for data, keep in ((target / "botocore" / "data", SERVICES), (target / "boto3" / "data", RESOURCES)):
        for service in data.iterdir():
            if service.is_dir() and service.name not in keep:
                shutil.rmtree(service)


def prune(target: Path) -> None:
    prune_service_data(target)
    for relative in PRUNED_PACKAGES:
        shutil.rmtree(target / relative, ignore_errors=True)
    for path in sorted(target.rglob("*"), reverse=True):
        if path.is_dir() and path.name in PRUNED_DIRS and path.parent != target:
            shutil.rmtree(path)
        elif path.is_file() and (path.name in PRUNED_FILES or path.suffix == ".pyi" or path.name.endswith("_test.py")):
            path.unlink()


def compile_pyc(target: Path) -> None:
    unchecked = py_compile.PycInvalidationMode.UNCHECKED_HASH
    for relative in SOURCELESS:  # legacy layout: pkg/module.pyc, imported when pkg/module.py is absent
        folder = target / relative
        if not compileall.compile_dir(folder, quiet=1, legacy=True, invalidation_mode=unchecked):
            raise SystemExit(f"compileall failed in {folder}")
        for source in folder.rglob("*.py"):
            source.unlink()
    if not compileall.compile_dir(target, quiet=1, invalidation_mode=unchecked):
        raise SystemExit(f"compileall failed in {target}")


def build(artifacts: Path) -> Path:
    target = artifacts / "python"
    pip_install(target, HERE / "requirements.txt")
    shutil.copytree(HERE / "rebalancer", target / "rebalancer",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    prune(target)
    compile_pyc(target)
    return target


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: build_layer.py ARTIFACTS_DIR")
    build(Path(sys.argv[1]))
