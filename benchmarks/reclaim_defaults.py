"""The runs behind docs/simulation.md "Reclaim to fair share": one bench scenario, builtin and pooled once, and the
rebalancer under each `reclaim` setting given (off, and the candidate defaults), with issue 40's goals and the
figures the defaults are chosen on (entitlement deficit, small teams' p95 wait, lost work).

    PYTHONPATH=layers/core:tools .venv/bin/python benchmarks/reclaim_defaults.py synthetic-overload \
        off 30:16 15:16 60:32

Each setting is `MAX_AGE_MINUTES:MAX_GPU_HOURS` (`off`: max_gpu_hours 0). Scenarios: bench-sim's
(rebalancer_tools.simulator.bench.SCENARIOS); `--trace` the Philly trace. `--smoke`: off and 15:16 on a tiny
scenario (the test suite runs it so; the figures mean nothing)."""

from __future__ import annotations

import argparse
import dataclasses
import pickle
import statistics
import time
from pathlib import Path

from smoke import SMOKE_HELP, tiny_scenario

from rebalancer_tools.simulator import run_strategy
from rebalancer_tools.simulator.bench import SCENARIOS, goals, scenario
from rebalancer_tools.simulator.run import effective_policy


def _setting(text: str) -> tuple[str, dict[str, float]]:
    if text == "off":
        return text, {"max_gpu_hours": 0.0}
    age, hours = text.split(":")
    return text, {"max_age_minutes": float(age), "max_gpu_hours": float(hours)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", nargs="?", choices=[s.key for s in SCENARIOS])
    ap.add_argument("settings", nargs="*", type=_setting)
    ap.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    ap.add_argument("--trace", default="../shared/traces/philly-vc/jobs.csv")
    ap.add_argument("--base", type=Path, help="Keep builtin's and pooled's results in this file, and read them back.")
    args = ap.parse_args()
    if args.smoke:
        args.scenario, args.settings = "smoke", [_setting("off"), _setting("15:16")]
    elif args.scenario is None or not args.settings:
        ap.error("give a scenario and at least one setting, or --smoke")
    sc = dataclasses.replace(tiny_scenario() if args.smoke else scenario(args.scenario, args.trace), eta=False)
    if args.base is not None and args.base.exists():
        base = pickle.loads(args.base.read_bytes())
    else:
        base = {name: run_strategy(sc, name) for name in ("builtin", "pooled")}
        if args.base is not None:
            args.base.write_bytes(pickle.dumps(base))
    small = [t for t, r in base["builtin"].teams.items() if 3 <= r.jobs <= 19]
    print(f"{args.scenario}: builtin deficit {base['builtin'].entitlement_deficit_gpu_hours:,.0f} GPU-h, lost "
          f"{base['builtin'].lost_gpu_hours:,.0f} GPU-h; small teams {len(small)}", flush=True)
    policy = effective_policy(sc)
    for label, reclaim in args.settings:
        t0 = time.perf_counter()
        pol = policy.model_copy(update={"reclaim": policy.reclaim.model_copy(update=reclaim)})
        r = run_strategy(dataclasses.replace(sc, policy=pol), "rebalancer")
        seconds = time.perf_counter() - t0
        p95 = statistics.median(r.teams[t].wait_p95_s for t in small) / 3600 if small else float("nan")
        print(f"\n## reclaim {label} ({seconds:.0f} s): deficit {r.entitlement_deficit_gpu_hours:,.0f} GPU-h "
              f"({r.entitlement_deficit_gpu_hours / max(base['builtin'].entitlement_deficit_gpu_hours, 1e-9):.3f} × "
              f"builtin), lost {r.lost_gpu_hours:,.0f} GPU-h, preemptions "
              f"{r.preemptions:,}, small teams' median p95 {p95:.2f} h, p95 "
              f"{r.wait_p95_s / 3600:.2f} h, utilization {r.utilization:.3f}", flush=True)
        print("\n".join(goals({**base, "rebalancer": r})), flush=True)


if __name__ == "__main__":
    main()
