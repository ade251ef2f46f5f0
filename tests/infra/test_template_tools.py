"""The template and state machine through the real tools: cfn-lint, statelint, `sam validate --lint` and `sam build`.
They start subprocesses (sam build takes about half a minute), so they live apart from the unit tests: `make test`
runs them, `make test-fast` does not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import template as t

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


def _sam_env() -> dict[str, str]:
    env = dict(os.environ, SAM_CLI_TELEMETRY="0")
    python = subprocess.run([str(ROOT / "scripts" / "find-python"), "13"], capture_output=True, text=True,
                            check=True).stdout.strip()
    env["PATH"] = f"{Path(python).parent}{os.pathsep}{env['PATH']}"
    return env


def test_sam_validate_lint() -> None:
    sam = _sam()
    proc = subprocess.run([str(sam), "validate", "--lint", "-t", str(t.TEMPLATE)], capture_output=True, text=True,
                          check=False, env=_sam_env(), cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
def test_sam_build_and_the_built_handlers_import(tmp_path: Path) -> None:
    sam = _sam()
    build = tmp_path / "build"
    proc = subprocess.run([str(sam), "build", "-t", str(t.TEMPLATE), "-b", str(build)], capture_output=True,
                          text=True, check=False, env=_sam_env(), cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    layer = build / "CoreLayer" / "python"
    assert (layer / "rebalancer" / "app" / "__init__.py").is_file()
    assert (layer / "rebalancer" / "app" / "templates" / "review.html.j2").is_file()  # package data ships too
    assert (layer / "aws_lambda_powertools").is_dir()
    for logical in ("TriggerFunction", "ApprovalFunction"):
        assert (build / logical / "app.py").is_file()
    # The layer's compiled wheels are for aarch64, so import our own package from the build with this machine's
    # dependencies: only `rebalancer` comes from the layer; -S keeps the editable install out of the way.
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "rebalancer").symlink_to(layer / "rebalancer")
    site = next(p for p in sys.path if p.endswith("site-packages"))
    code = (f"import sys; sys.path[:0] = [{str(pkg)!r}, {site!r}, {str(build / 'TriggerFunction')!r}]; "
            "import rebalancer.app.trigger, app; print(rebalancer.__file__, app.handler)")
    proc = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert str(pkg) in proc.stdout
