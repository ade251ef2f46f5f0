"""Every benchmark runs, once, at a small size (`--smoke`): a bench that nothing runs rots (a constructor changes,
a module moves) and is found broken only when someone needs its figure. Their figures are printed here (`pytest -s`
shows them), never asserted: they mean nothing at that size, and timings on a shared machine are noise."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _scripts() -> list[Path]:
    """The files under benchmarks/ that run as a program (`if __name__ == "__main__":`); the rest are their helpers."""
    def runs(path: Path) -> bool:
        return any(isinstance(node, ast.If) and ast.unparse(node.test) == "__name__ == '__main__'"
                   for node in ast.parse(path.read_text()).body)

    return sorted(p for p in BENCHMARKS.glob("*.py") if runs(p))


def test_every_benchmark_is_found() -> None:
    names = {p.name for p in _scripts()}
    assert {"plan_bench.py", "why_bench.py", "lambda_bench.py"} <= names, names


@pytest.mark.slow
@pytest.mark.parametrize("script", _scripts(), ids=lambda p: p.stem)
def test_benchmark_runs_once_small(script: Path) -> None:
    assert "--smoke" in script.read_text(), f"{script.name} takes no --smoke: the suite would run it at full size"
    proc = subprocess.run([sys.executable, str(script), "--smoke"], capture_output=True, text=True, check=False,
                          cwd=BENCHMARKS.parent, timeout=600)
    print(proc.stdout)
    assert proc.returncode == 0, f"{script.name} --smoke failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    assert proc.stdout.strip(), f"{script.name} --smoke printed nothing"
