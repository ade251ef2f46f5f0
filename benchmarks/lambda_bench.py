"""The Lambda side's cold start on this machine: the built layer's size, and each handler's cold import as a ratio.

Run with `make bench` (after plan_bench), or `python benchmarks/lambda_bench.py [--root DIR] [--build DIR]
[--baseline DIR]`; --baseline measures another checkout (e.g. the main branch before a change) in the same run, its
interpreters interleaved with this one's, so before and after share the machine's load.

- Layer: `sam build` of root's template (no Docker; about a minute) unless --build names an existing build; bytes of
  CoreLayer's files unzipped, and zipped with deflate as `sam deploy` uploads it.
- Imports: `import app` of functions/<name>/app.py, timed inside a fresh interpreter (-S: the standard library and the
  layer only). The layer's compiled wheels are aarch64, so the interpreter sees the built layer with its compiled
  packages taken from this venv (rebalancer_tools.packaging.layer.importable). The environment is a Lambda's
  (LAMBDA_TASK_ROOT
  set, so Powertools' Tracer is on and patches what X-Ray patches). A first round writes the .pyc files into a scratch
  PYTHONPYCACHEPREFIX (never into the build); then --runs rounds each start one fresh interpreter per handler and one
  for the floor, in turn, so a burst of load on a shared machine falls on all of them alike. CPU is the process's CPU
  time, steadier than wall time. "as shipped" is the CPU time with only the .pyc files the layer ships (none
  written): what a Lambda, whose /opt is read-only, pays; a layer without .pyc compiles every module each time.
- Each handler is shown as a ratio beside its milliseconds (an absolute figure on a shared machine is noise): its
  median CPU ÷ the floor's, where the floor is what any handler pays whatever it does: boto3, pydantic, and
  Powertools' Logger, Metrics and a Tracer patching botocore and http.client only (as rebalancer.app.observability
  has it). The floor is the same code whatever --root is. There is no target: the one deadline a cold start meets is
  Slack's 3 s, measured where the user waits by benchmarks/why_bench.py. On a busy machine the ratio moves by ±0.1
  from run to run; the last column, how many more modules than the floor a handler loads, does not.
- `--instructions` counts instead of timing: the instructions each cold import executes (valgrind's callgrind,
  `Collected` Ir, less a bare interpreter's), once per subject since the count is the same on every run. It is blind
  to memory stalls and page faults, so its ratios read lower than the CPU ones, but a change's effect shows to the
  last module on a machine whose load moves the CPU figures by ±0.1. About a minute per subject.
- "(floor + one model)" is the floor defining and validating one two-field pydantic model: `import pydantic` defers
  its model machinery to the first model, which every handler has (the event parser, its config, its state), so that
  row's ratio is the part of every handler's ratio that is pydantic's, not ours.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from rebalancer_tools.packaging import layer  # noqa: E402

RUNS = 9
SHIPPED_RUNS = 3
MB = 1_000_000
FLOOR_LABEL = "(floor)"
MODEL_LABEL = "(floor + one model)"
LAYER_TARGET_BYTES = 60 * MB
FLOOR = ("import boto3, pydantic\nfrom aws_lambda_powertools import Logger, Metrics, Tracer\n"
         "Logger(service='floor'); Tracer(service='floor', patch_modules=('botocore', 'httplib')); "
         "Metrics(namespace='floor')\n")
# The floor imports pydantic, whose model machinery loads at the first model: what any handler that validates its
# input with a pydantic model (the event parser, the config, every step's state) pays before its own code.
ONE_MODEL = FLOOR + "class Probe(pydantic.BaseModel):\n    x: int\nProbe(x=1)\n"
TIMED_IMPORT = ("import time; w, c = time.perf_counter(), time.process_time(); import app; "
                "print((time.perf_counter() - w) * 1000, (time.process_time() - c) * 1000, len(sys.modules))")


def lambda_env(function_dir: Path, pycache: Path | None) -> dict[str, str]:
    """pycache: where .pyc files are written and read; None for only those the layer ships, writing none."""
    cache = {"PYTHONPYCACHEPREFIX": str(pycache)} if pycache else {"PYTHONDONTWRITEBYTECODE": "1"}
    return {**cache, "PATH": os.environ.get("PATH", ""), "LAMBDA_TASK_ROOT": str(function_dir),
            "AWS_REGION": "us-east-1", "AWS_LAMBDA_FUNCTION_NAME": f"bench-{function_dir.name}",
            "POWERTOOLS_SERVICE_NAME": "hyperpod-rebalancer", "POWERTOOLS_METRICS_NAMESPACE": "HyperPodRebalancer",
            "TABLE_NAME": "bench", "MANAGED_CLUSTERS": "bench01"}


def import_ms(function_dir: Path, path: list[Path], pycache: Path | None) -> tuple[float, float, int]:
    """(wall, CPU) milliseconds of one cold `import app`, and the number of modules loaded then."""
    proc = subprocess.run(layer.python_command([function_dir, *path], TIMED_IMPORT), capture_output=True, text=True,
                          check=False, env=lambda_env(function_dir, pycache))
    if proc.returncode != 0:
        raise SystemExit(f"importing {function_dir}/app.py failed:\n{proc.stderr}")
    wall, cpu, modules = proc.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu), int(modules)


def instructions(function_dir: Path, path: list[Path], pycache: Path, code: str = "import app") -> int:
    """Instructions executed by `code` in a fresh interpreter, as callgrind counts them (the .pyc files written)."""
    setup = f"import sys; sys.path[:0] = {[str(p) for p in [function_dir, *path]]!r}\n"
    command = [sys.executable, "-S", "-c", setup + code]
    env = lambda_env(function_dir, pycache)
    subprocess.run(command, capture_output=True, check=True, env=env)
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
                          capture_output=True, text=True, check=False, env=env)
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode != 0 or found is None:
        raise SystemExit(f"callgrind of {function_dir}/app.py failed:\n{proc.stderr[-2000:]}")
    return int(found.group(1))


def instruction_table(every: list[Subject], pycache: Path) -> Table:
    bare = instructions(every[0].function_dir, every[0].path, pycache, code="pass")
    counts = {s.label: instructions(s.function_dir, s.path, pycache) - bare for s in every}
    floor = counts[FLOOR_LABEL]
    out = Table(title="cold import of functions/<name>/app.py: instructions ÷ the floor's (callgrind, once each)")
    for column in ("handler", "ratio", "million instructions"):
        out.add_column(column, justify="left" if column == "handler" else "right")
    for label, n in counts.items():
        out.add_row(label, f"{n / floor:.3f}", f"{n / 1e6:,.0f}")
    return out


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


@dataclass(frozen=True)
class Subject:
    """One `functions/<name>/app.py` to import (the floor is one too), with the sys.path it sees."""

    label: str
    function_dir: Path
    path: list[Path]


@dataclass
class Timings:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    shipped: list[float] = field(default_factory=list)
    modules: int = 0


def subjects(label: str, root: Path, path: list[Path]) -> list[Subject]:
    handlers = sorted(p for p in (root / "functions").iterdir() if (p / "app.py").is_file())
    return [Subject(f"{d.name}{label}", d, path) for d in handlers]


def measure(every: list[Subject], runs: int, shipped_runs: int, pycache: Path | None) -> dict[str, Timings]:
    """Interleaved: each round imports every subject once, in turn; the first round only writes the .pyc files into
    `pycache` (None, as --smoke has it: no such round, the .pyc files beside the sources are read)."""
    out = {s.label: Timings() for s in every}
    warm = pycache is not None
    for round_ in range(runs + warm):
        for s in every:
            wall, cpu, out[s.label].modules = import_ms(s.function_dir, s.path, pycache)
            if round_ or not warm:
                out[s.label].wall.append(wall)
                out[s.label].cpu.append(cpu)
    for _ in range(shipped_runs):
        for s in every:
            out[s.label].shipped.append(import_ms(s.function_dir, s.path, None)[1])
    return out


def layer_path(root: Path, build: Path | None, scratch: Path, console: Console) -> list[Path]:
    """What a handler of root sees on sys.path: the built layer (and its size printed), or the source and this venv."""
    core = built_layer(root, build, scratch / root.name)
    if core is None:
        return [root / "layers" / "core", layer.site_packages()]
    s = layer.size(core)
    verdict = "ok" if s.unzipped <= LAYER_TARGET_BYTES else "OVER"
    console.print(f"layer {core}: {s.unzipped / MB:.1f} MB unzipped ({s.unzipped / 2**20:.1f} MiB), "
                  f"{s.zipped / MB:.1f} MB zipped; target <= {LAYER_TARGET_BYTES / MB:.0f} MB: {verdict}")
    biggest = sorted(s.by_entry.items(), key=lambda kv: -kv[1])[:8]
    console.print("  largest: " + ", ".join(f"{name} {n / MB:.1f}" for name, n in biggest))
    return [layer.importable(core / "python", scratch / root.name / "layer")]


def table(timings: dict[str, Timings], runs: int) -> Table:
    floor = statistics.median(timings[FLOOR_LABEL].cpu)
    floor_modules = timings[FLOOR_LABEL].modules
    out = Table(title=f"cold import of functions/<name>/app.py: CPU ÷ the floor's, medians of {runs} interleaved "
                      "fresh interpreters")
    for column in ("handler", "ratio", "CPU ms", "wall ms", "min-max wall", "as shipped CPU ms",
                   "modules beyond the floor's"):
        out.add_column(column, justify="left" if column == "handler" else "right")
    for label, t in timings.items():
        cpu = statistics.median(t.cpu)
        out.add_row(label, f"{cpu / floor:.2f}", f"{cpu:.0f}", f"{statistics.median(t.wall):.0f}",
                    f"{min(t.wall):.0f}-{max(t.wall):.0f}", f"{statistics.median(t.shipped):.0f}" if t.shipped else "-",
                    f"{t.modules - floor_modules:+d}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to measure (default: this one)")
    parser.add_argument("--build", type=Path, help="an existing `sam build -b` folder of --root instead of building")
    parser.add_argument("--baseline", type=Path, help="another checkout, measured in the same run (interleaved)")
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--instructions", action="store_true",
                        help="count each import's instructions under valgrind instead of timing them")
    parser.add_argument("--shipped-runs", type=int, default=SHIPPED_RUNS,
                        help="rounds without the scratch .pyc files (0: skip the \"as shipped\" column)")
    parser.add_argument("--smoke", action="store_true",
                        help="once, small (the test suite runs it so): one handler, no layer build, one round, "
                             "no scratch .pyc files")
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.shipped_runs = 1, 0
    console = Console(width=120)
    with tempfile.TemporaryDirectory(prefix="lambda-bench-") as tmp:
        scratch = Path(tmp)
        root: Path = args.root.resolve()
        path = ([root / "layers" / "core", layer.site_packages()] if args.smoke
                else layer_path(root, args.build, scratch, console))
        every = subjects("", root, path)[:1 if args.smoke else None]
        if args.baseline is not None:
            baseline: Path = args.baseline.resolve()
            before = subjects(" (baseline)", baseline, layer_path(baseline, None, scratch / "baseline", console))
            every = [s for pair in zip(every, before, strict=True) for s in pair]
        floor_dir = scratch / "floor"
        floor_dir.mkdir()
        (floor_dir / "app.py").write_text(FLOOR)
        every.append(Subject(FLOOR_LABEL, floor_dir, every[0].path))
        model_dir = scratch / "one-model"
        model_dir.mkdir()
        (model_dir / "app.py").write_text(ONE_MODEL)
        every.append(Subject(MODEL_LABEL, model_dir, every[0].path))
        if args.instructions:
            if shutil.which("valgrind") is None:
                raise SystemExit("--instructions needs valgrind on PATH")
            console.print(instruction_table(every, scratch / "pycache"))
        else:
            pycache = None if args.smoke else scratch / "pycache"  # --smoke: its figures mean nothing
            console.print(table(measure(every, args.runs, args.shipped_runs, pycache), args.runs))


if __name__ == "__main__":
    main()
