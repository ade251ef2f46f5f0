"""The Lambda side's cold start on this machine: the built layer's size, and each handler's cold import.

Run with `make bench` (after plan_bench), or `python benchmarks/lambda_bench.py [--root DIR] [--build DIR]` to measure
another checkout (e.g. the main branch before a change) with the same yardstick.

- Layer: `sam build` of root's template (no Docker; about a minute) unless --build names an existing build; bytes of
  CoreLayer's files unzipped, and zipped with deflate as `sam deploy` uploads it.
- Imports: `import app` of functions/<name>/app.py, timed inside a fresh interpreter (-S: the standard library and the
  layer only), median of --runs. The layer's compiled wheels are aarch64, so the interpreter sees the built layer with
  its compiled packages taken from this venv (rebalancer_tools.layer.importable). The environment is a Lambda's
  (LAMBDA_TASK_ROOT set, so Powertools' Tracer is on and patches what X-Ray patches). The first run writes the .pyc
  files of modules the layer ships without them, into a scratch PYTHONPYCACHEPREFIX (never into the build); the
  median is of warm-disk, compiled imports. The CPU column is the process's CPU time, steadier than wall time on a
  shared machine, and the verdict is on it. "as shipped" is the CPU time with only the .pyc files the layer ships
  (none written): what a Lambda, whose /opt is read-only, pays; a layer without .pyc compiles every module each time.

The "(floor)" row imports only what every handler needs (Powertools' Logger, Tracer and Metrics, boto3, pydantic):
a handler's own cost is its figure minus the floor's. "(floor, no pydantic)" is boto3 and Powertools alone, X-Ray
patching botocore and http.client only (as rebalancer.app.observability has it): what any handler would pay even
with no pydantic model on its path (the trigger reads its events with Powertools' parser, which is pydantic). Both
rows are the same code whatever --root is, so two checkouts measured back to back share them.

Targets: trigger < 300 ms, every other handler < 400 ms, layer <= 60 MB unzipped.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from rebalancer_tools import layer  # noqa: E402

RUNS = 7
SHIPPED_RUNS = 3
MB = 1_000_000
TARGET_MS = {"trigger": 300.0}
DEFAULT_TARGET_MS = 400.0
LAYER_TARGET_BYTES = 60 * MB
# What every handler pays whatever it does: Powertools' Logger, Tracer and Metrics, boto3 and pydantic.
FLOOR = ("import boto3, pydantic\nfrom aws_lambda_powertools import Logger, Metrics, Tracer\n"
         "Logger(service='floor'); Tracer(service='floor'); Metrics(namespace='floor')\n")
FLOOR_NO_PYDANTIC = ("import boto3\nfrom aws_lambda_powertools import Logger, Metrics, Tracer\n"
                     "Logger(service='floor'); Tracer(service='floor', patch_modules=('botocore', 'httplib')); "
                     "Metrics(namespace='floor')\n")
TIMED_IMPORT = ("import time; w, c = time.perf_counter(), time.process_time(); import app; "
                "print((time.perf_counter() - w) * 1000, (time.process_time() - c) * 1000)")


def lambda_env(function_dir: Path, pycache: Path | None) -> dict[str, str]:
    """pycache: where .pyc files are written and read; None for only those the layer ships, writing none."""
    cache = {"PYTHONPYCACHEPREFIX": str(pycache)} if pycache else {"PYTHONDONTWRITEBYTECODE": "1"}
    return {**cache, "PATH": os.environ.get("PATH", ""), "LAMBDA_TASK_ROOT": str(function_dir),
            "AWS_REGION": "us-east-1", "AWS_LAMBDA_FUNCTION_NAME": f"bench-{function_dir.name}",
            "POWERTOOLS_SERVICE_NAME": "hyperpod-rebalancer", "POWERTOOLS_METRICS_NAMESPACE": "HyperPodRebalancer",
            "TABLE_NAME": "bench", "MANAGED_CLUSTERS": "bench01"}


def import_ms(function_dir: Path, path: list[Path], pycache: Path | None) -> tuple[float, float]:
    """(wall, CPU) milliseconds of one cold `import app`."""
    proc = subprocess.run(layer.python_command([function_dir, *path], TIMED_IMPORT), capture_output=True, text=True,
                          check=False, env=lambda_env(function_dir, pycache))
    if proc.returncode != 0:
        raise SystemExit(f"importing {function_dir}/app.py failed:\n{proc.stderr}")
    wall, cpu = proc.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu)


def built_layer(root: Path, build: Path | None, scratch: Path) -> Path | None:
    if build is not None:
        return build / "CoreLayer"
    sam = layer.sam(root) or layer.sam(ROOT)
    if sam is None:
        print("no .venv-sam/bin/sam (make sam-venv): layer size not measured, imports use this venv's packages")
        return None
    proc = layer.sam_build(root, scratch / "build", sam_bin=sam)
    if proc.returncode != 0:
        raise SystemExit(f"sam build failed:\n{proc.stdout}\n{proc.stderr}")
    return scratch / "build" / "CoreLayer"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to measure (default: this one)")
    parser.add_argument("--build", type=Path, help="an existing `sam build -b` folder instead of building")
    parser.add_argument("--runs", type=int, default=RUNS)
    args = parser.parse_args()
    root: Path = args.root.resolve()
    console = Console(width=120)
    with tempfile.TemporaryDirectory(prefix="lambda-bench-") as tmp:
        scratch = Path(tmp)
        core = built_layer(root, args.build, scratch)
        if core is not None:
            s = layer.size(core)
            verdict = "ok" if s.unzipped <= LAYER_TARGET_BYTES else "OVER"
            console.print(f"layer {core}: {s.unzipped / MB:.1f} MB unzipped ({s.unzipped / 2**20:.1f} MiB), "
                          f"{s.zipped / MB:.1f} MB zipped; target <= {LAYER_TARGET_BYTES / MB:.0f} MB: {verdict}")
            biggest = sorted(s.by_entry.items(), key=lambda kv: -kv[1])[:8]
            console.print("  largest: " + ", ".join(f"{name} {n / MB:.1f}" for name, n in biggest))
            path = [layer.importable(core / "python", scratch / "layer")]
        else:
            path = [root / "layers" / "core", layer.site_packages()]
        table = Table(title=f"cold import of functions/<name>/app.py, median of {args.runs} fresh interpreters")
        for column in ("handler", "wall ms", "CPU ms", "min-max wall", "target ms", "", "as shipped CPU ms"):
            table.add_column(column, justify="left" if column == "handler" else "right")
        floors = []
        for name, code in (("(floor)", FLOOR), ("(floor, no pydantic)", FLOOR_NO_PYDANTIC)):
            floors.append(scratch / name)
            floors[-1].mkdir()
            (floors[-1] / "app.py").write_text(code)
        handlers = sorted(p for p in (root / "functions").iterdir() if (p / "app.py").is_file())
        for function_dir in [*handlers, *floors]:
            # the first run writes the .pyc files the others read
            runs = [import_ms(function_dir, path, scratch / "pycache") for _ in range(args.runs + 1)][1:]
            walls = [w for w, _ in runs]
            wall, cpu = statistics.median(walls), statistics.median(c for _, c in runs)
            shipped = statistics.median(import_ms(function_dir, path, None)[1] for _ in range(SHIPPED_RUNS))
            target = TARGET_MS.get(function_dir.name, DEFAULT_TARGET_MS)
            goal, verdict = ("", "") if function_dir in floors else (f"< {target:.0f}",
                                                                     "ok" if cpu < target else "OVER")
            table.add_row(function_dir.name, f"{wall:.0f}", f"{cpu:.0f}", f"{min(walls):.0f}-{max(walls):.0f}",
                          goal, verdict, f"{shipped:.0f}")
        console.print(table)


if __name__ == "__main__":
    main()
