"""The template and state machine through the real tools: cfn-lint, statelint, `sam validate --lint` and `sam build`.
They start subprocesses (sam build takes about half a minute), so they live apart from the unit tests: `make test`
runs them, `make test-fast` does not."""

from __future__ import annotations

import gc
import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import boto3.session
import botocore.credentials
import botocore.session
import jinja2
import pytest
from support import template as t
from support.layer_build import build_layer

from rebalancer_tools.packaging import layer

ROOT = t.ROOT
SAM_VENV = ROOT / ".venv-sam"
BIN = Path(sys.executable).parent


def test_cfn_lint_is_clean() -> None:
    proc = subprocess.run([str(BIN / "cfn-lint"), str(t.TEMPLATE)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _fake_arns() -> dict[str, str]:
    values = {name: f"arn:aws:lambda:us-east-1:123456789012:function:{fn}"
              for name, fn in t.function_of_substitution().items()}
    values["ApprovalApiUrl"] = "https://abc123.execute-api.us-east-1.amazonaws.com"
    return values


def test_statelint_is_clean_on_the_substituted_asl(tmp_path: Path) -> None:
    path = tmp_path / "rebalance.asl.json"
    path.write_text(t.substituted_asl(_fake_arns()))
    proc = subprocess.run([str(BIN / "statelint"), str(path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _sam() -> Path:
    sam = SAM_VENV / "bin" / "sam"
    if not sam.exists():
        pytest.skip(f"{sam} is absent: run `make sam-venv` (about 75 s) to run the sam-based checks")
    return sam


def _dist_version(site: Path, name: str) -> str | None:
    found = sorted(site.glob(f"lib/python3*/site-packages/{name}-*.dist-info"))
    return found[0].name.removeprefix(f"{name}-").removesuffix(".dist-info") if found else None


def test_sam_validate_lint() -> None:
    """`sam validate --lint` runs cfn-lint only, through its API, with the region as its one setting
    (samcli.commands.validate: --lint replaces the translator's check). With .venv-sam's cfn-lint the version the
    shared venv's is, that is test_cfn_lint_is_clean's run again (6 s): it runs when the pins differ."""
    sam = _sam()
    ours = _dist_version(BIN.parent, "cfn_lint")
    if ours is not None and _dist_version(SAM_VENV, "cfn_lint") == ours:
        pytest.skip(f"sam's cfn-lint is test_cfn_lint_is_clean's ({ours}): the same lint of the same template")
    proc = subprocess.run([str(sam), "validate", "--lint", "-t", str(t.TEMPLATE)], capture_output=True, text=True,
                          check=False, env=layer.sam_env(ROOT), cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One `sam build` (CoreLayer through layers/core/Makefile, about a minute) for the tests below."""
    sam = _sam()
    out = tmp_path_factory.mktemp("sam") / "build"
    proc = layer.sam_build(ROOT, out, sam_bin=sam)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.fixture(scope="module")
def importable(build: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built layer as this machine can import it: its compiled (aarch64) packages swapped for this venv's."""
    return layer.importable(build / "CoreLayer" / "python", tmp_path_factory.mktemp("layer") / "python")


def _run(path: list[Path], code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(layer.python_command(path, code), capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})})


@pytest.mark.slow
def test_sam_build_and_the_built_handlers_import(build: Path, importable: Path) -> None:
    python = build / "CoreLayer" / "python"
    assert (python / "rebalancer" / "app" / "__init__.py").is_file()
    assert (python / "rebalancer" / "app" / "approvals" / "templates" / "review.html.j2").is_file()  # package data too
    assert (python / "aws_lambda_powertools").is_dir()
    assert not (python / "rebalancer_tools").exists()
    apps = {f"{function.name.capitalize()}Function": build / f"{function.name.capitalize()}Function" / "app.py"
            for function in (ROOT / "functions").iterdir()}
    for logical, app in apps.items():
        assert app.is_file(), logical
    # One interpreter runs every handler's app.py in turn, each as Lambda imports it (from its function's folder,
    # LAMBDA_TASK_ROOT set): an interpreter each would pay the same imports nine times.
    code = ("import os, runpy\n"
            f"for logical, app in {[(k, str(v)) for k, v in apps.items()]!r}:\n"
            "    os.environ['LAMBDA_TASK_ROOT'] = os.path.dirname(app)\n"
            "    print('imported', logical, runpy.run_path(app, run_name='app')['handler'])\n")
    proc = _run([importable], code, env={"AWS_REGION": "us-east-1"})
    assert proc.returncode == 0, proc.stderr
    handlers = dict(line.split(" ", 2)[1:] for line in proc.stdout.splitlines() if line.startswith("imported "))
    assert set(handlers) == set(apps)
    for logical, shown in handlers.items():
        assert shown.startswith("<function handler"), (logical, shown)


@pytest.mark.slow
def test_every_runtime_module_imports_from_the_built_layer_alone(importable: Path) -> None:
    """Nothing the runtime imports was pruned or left out (kubernetes.aio, aiohttp, botocore data), and no runtime
    module needs the tools package, which is not on this path."""
    code = ("import pkgutil, rebalancer, kubernetes.client, boto3; "
            "names = [m.name for m in pkgutil.walk_packages(rebalancer.__path__, 'rebalancer.')]; "
            "[__import__(n) for n in names]; "
            "import sys; assert not [m for m in sys.modules if m.startswith('rebalancer_tools')]; "
            "print(len(names), rebalancer.__file__)")
    proc = _run([importable], code)
    assert proc.returncode == 0, proc.stderr
    count, where = proc.stdout.split()
    assert int(count) > 30
    assert where.startswith(str(importable))


def _runtime_sources() -> list[Path]:
    return [*(ROOT / "layers" / "core" / "rebalancer").rglob("*.py"), *(ROOT / "functions").glob("*/app.py")]


def _called_services() -> set[str]:
    """Services the runtime makes clients or resources for: `client("x")`, `boto3.resource("x")`."""
    pattern = re.compile(r"""\b(?:client|resource)\(\s*["']([a-z0-9-]+)["']""")
    return {m for p in _runtime_sources() for m in pattern.findall(p.read_text())}


def _service_operations(data: Path) -> dict[str, set[str]]:
    """Each service folder under a botocore/data → its operations as client method names."""
    from botocore import xform_name

    out = {}
    for service in sorted(p for p in data.iterdir() if p.is_dir()):
        version = max(v for v in service.iterdir() if (v / "service-2.json.gz").exists())
        model = json.loads(gzip.decompress((version / "service-2.json.gz").read_bytes()))
        out[service.name] = {xform_name(op) for op in model["operations"]}
    return out


def test_the_layer_keeps_the_data_of_every_service_the_runtime_calls() -> None:
    called = _called_services()
    assert {"sagemaker", "stepfunctions", "sns", "dynamodb"} <= called  # the scan finds what it should
    assert called <= build_layer().SERVICES, called - build_layer().SERVICES


@pytest.mark.slow
def test_the_built_botocore_has_every_operation_the_runtime_calls(build: Path) -> None:
    """A method called anywhere in the runtime whose name is an operation of some AWS service (in this venv's full
    botocore) must be an operation of a service the layer kept, or the pruning dropped a service we call."""
    kept = _service_operations(build / "CoreLayer" / "python" / "botocore" / "data")
    assert set(kept) == build_layer().SERVICES
    everywhere = set().union(*_service_operations(Path(botocore.__file__).parent / "data").values())
    sources = [p.read_text() for p in _runtime_sources()]
    called = {m for text in sources for m in re.findall(r"\.([a-z][a-z0-9_]*)\(", text)}
    called |= {m for text in sources for m in re.findall(r"""get_paginator\(\s*["']([a-z0-9_]+)["']""", text)}
    # Calls that share a name with some AWS operation but are not on a client: our own functions and methods, the
    # sessions', credentials' and botocore.session's, Jinja2's (get_template) and the standard library's (gc).
    own = {m for text in sources for m in re.findall(r"\bdef ([a-z][a-z0-9_]*)\(", text)}
    not_clients = own | {name for cls in (botocore.session.Session, boto3.session.Session,
                                          botocore.credentials.Credentials, botocore.session, jinja2.Environment, gc)
                         for name in dir(cls)}
    aws_calls = (called & everywhere) - not_clients
    assert {"update_compute_quota", "start_execution", "list_cluster_nodes", "get_metric_data"} <= aws_calls
    assert aws_calls <= set().union(*kept.values()), sorted(aws_calls - set().union(*kept.values()))


@pytest.mark.slow
def test_the_built_layer_is_at_most_60_mb(build: Path) -> None:
    unzipped = layer.unzipped_bytes(build / "CoreLayer")
    assert unzipped <= 60_000_000, f"{unzipped / 1e6:.1f} MB: benchmarks/lambda_bench.py shows the largest"
