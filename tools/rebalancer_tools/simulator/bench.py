"""`make bench-sim`: every bench scenario (the Philly trace at two sizes and with node failures, and seeded synthetic
traces) under every strategy; times it and writes, between docs/simulation.md's BENCH markers, one results table
per scenario and one goal table over all scenarios.

The goal table reports what the code does: its thresholds are the project's goals, fixed here, never fitted to a
run. Runs are independent (scenario × strategy), so they go to a process pool (`--workers`, default 2).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import platform
import re
import statistics
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from rebalancer.catalog import specs as catalog
from rebalancer.domain.policy import Fairness
from rebalancer_tools.simulator import (
    STRATEGIES,
    Failures,
    Scenario,
    StrategyResult,
    run_strategy,
    synthetic,
    worse_off,
)
from rebalancer_tools.simulator.report import eta_table, markdown_table, pool_tables
from rebalancer_tools.simulator.run import effective_policy
from rebalancer_tools.simulator.teams import TeamSpec, default_pool_teams, default_teams
from rebalancer_tools.simulator.trace import load_trace

BEGIN, END = "<!-- BENCH:BEGIN -->", "<!-- BENCH:END -->"
P5, TRN1 = "ml.p5.48xlarge", "ml.trn1.32xlarge"


@dataclass(frozen=True, slots=True)
class Synthetic:
    """A generated trace: `synthetic.pool_teams` over the bench scenario's pools."""

    teams: int
    load: float
    days: float
    kinds: tuple[synthetic.Kind, ...]
    seed: int


@dataclass(frozen=True, slots=True)
class BenchScenario:
    key: str
    title: str
    pools: tuple[tuple[str, int], ...]  # (instance type, nodes)
    mtbf_hours: float | None = None
    seed: int = 0
    generated: Synthetic | None = None  # None: the Philly trace

    def describe(self, sc: Scenario) -> str:
        source = ("the Philly trace" if self.generated is None else
                  f"`rebalancer trace` {self.generated.teams} teams ({', '.join(self.generated.kinds)}), load "
                  f"{self.generated.load:g} × capacity, {self.generated.days:g} days, seed {self.generated.seed}")
        failures = (f"node MTBF {self.mtbf_hours:g} h, 4 h repairs, seed {self.seed}" if self.mtbf_hours
                    else "no node failures")
        return (f"{source}: {len(sc.jobs):,} jobs, {len(sc.teams)} teams, {sc.capacity:,} accelerators "
                f"({sc.describe_pools()}); {failures}")


SCENARIOS: tuple[BenchScenario, ...] = (
    BenchScenario("philly-512", "Philly, 512 GPUs (sustained overload)", ((P5, 64),)),
    BenchScenario("philly-1024-mtbf", "Philly, 1,024 GPUs, node MTBF 720 h", ((P5, 128),), mtbf_hours=720, seed=1),
    BenchScenario("philly-1024", "Philly, 1,024 GPUs", ((P5, 128),)),
    BenchScenario("synthetic-overload", "Synthetic, overloaded: bursty + diurnal + heavy-tailed", ((P5, 32),),
                  generated=Synthetic(8, 1.2, 30, ("bursty", "diurnal", "heavy_tailed"), 1)),
    BenchScenario("synthetic-mixed", "Synthetic, mixed GPU + Trainium", ((P5, 24), (TRN1, 8)),
                  generated=Synthetic(8, 1.2, 30, synthetic.KINDS, 1)),
)


@dataclass(frozen=True, slots=True)
class Variant:
    """Fields laid over each scenario's default policy (`--gang-steps`, `--window-hours`, `--quota-weights`); the
    empty variant is the bench itself, the only one that writes the doc. `quota_weights`: each team's weight in
    proportion to its hand-set quota, as `rebalancer policy init` writes it from today's quotas (the default teams
    have equal weights while builtin's quotas follow accelerator-hours)."""

    gang_steps: bool = False
    window_hours: float | None = None
    quota_weights: bool = False
    window_form: str | None = None  # None: the policy's default form
    window_k: float | None = None
    eta: bool = True  # measure the estimated starts (`--no-eta`: not, and the doc is then left alone)

    def updates(self) -> dict[str, object]:
        return {k: v for k, v in (("gang_steps", self.gang_steps), ("window_hours", self.window_hours),
                                  ("window_form", self.window_form), ("window_k", self.window_k))
                if v is not None and v is not False}

    def label(self) -> str:
        over = "".join(f", fairness.{k}: {v}" for k, v in self.updates().items())
        return over + (", weights ∝ hand-set quotas" if self.quota_weights else "")


@functools.cache
def scenario(key: str, philly: str, variant: Variant = Variant()) -> Scenario:
    """The bench scenario; under a variant, its default policy with the variant's fairness fields."""
    sc = _scenario(key, philly)
    if dataclasses.replace(variant, eta=True) == Variant():
        return sc
    if variant.quota_weights:
        sc = dataclasses.replace(sc, teams=_quota_weighted(sc))
    policy = effective_policy(sc)
    return dataclasses.replace(sc, policy=policy.model_copy(
        update={"fairness": policy.fairness.model_copy(update=variant.updates())}))


def _quota_weighted(sc: Scenario) -> tuple[TeamSpec, ...]:
    """Each team weighted by its hand-set accelerators over all types ÷ their greatest common divisor (1 for
    none): the weights `rebalancer policy init` gives quotas holding those amounts."""
    first = sc.instance_types[0]
    held = [sum(t.quota_in(it, first) for it in sc.instance_types) for t in sc.teams]
    divisor = functools.reduce(math.gcd, [n for n in held if n], 0) or 1
    return tuple(dataclasses.replace(t, weight=float(max(1, n // divisor))) for t, n in zip(sc.teams, held,
                                                                                          strict=True))


@functools.cache
def _scenario(key: str, philly: str) -> Scenario:
    spec = next(s for s in SCENARIOS if s.key == key)
    capacity = {t: n * catalog.spec(t).accelerators for t, n in spec.pools}
    if spec.generated is None:
        jobs = load_trace(philly)
    else:
        g = spec.generated
        jobs = synthetic.generate(synthetic.pool_teams(g.teams, list(capacity.items()), g.load, g.kinds),
                                  days=g.days, seed=g.seed)
    sc = Scenario(jobs=jobs, teams=(), pools=spec.pools, failures=Failures(mtbf_hours=spec.mtbf_hours),
                  seed=spec.seed)
    if len(spec.pools) == 1:
        teams = default_teams(sc.jobs, sc.capacity, sc.pool_specs[0].per_node)
    else:
        teams = default_pool_teams(sc.jobs_by_pool())
    return dataclasses.replace(sc, teams=teams)


def run_one(key: str, strategy: str, philly: str,
            variant: Variant = Variant()) -> tuple[str, str, StrategyResult, float]:
    sc = dataclasses.replace(scenario(key, philly, dataclasses.replace(variant, eta=True)), eta=variant.eta)
    t0 = time.perf_counter()
    result = run_strategy(sc, strategy)
    return key, strategy, dataclasses.replace(result, timeline=None), time.perf_counter() - t0


def _ratio(a: float, b: float) -> float:
    if b == 0:
        return 1.0 if a == 0 else math.inf
    return a / b


def _shown(x: float, threshold: float) -> str:
    """3 decimals, 4 where 3 would round a miss (or a hit) onto the threshold itself."""
    text = f"{x:.3f}"
    return f"{x:.4f}" if text == f"{threshold:.3f}" and x != threshold else text


@dataclass(frozen=True, slots=True)
class Goal:
    head: str
    check: Callable[[dict[str, StrategyResult]], tuple[str, bool]]


def _util(r: dict[str, StrategyResult]) -> tuple[str, bool]:
    x = _ratio(r["rebalancer"].utilization, r["pooled"].utilization)
    return _shown(x, 0.99), x >= 0.99


def _p95_pooled(r: dict[str, StrategyResult]) -> tuple[str, bool]:
    x = _ratio(r["rebalancer"].wait_p95_s, r["pooled"].wait_p95_s)
    return _shown(x, 1.05), r["rebalancer"].wait_p95_s <= 1.05 * r["pooled"].wait_p95_s


def _deficit(r: dict[str, StrategyResult]) -> tuple[str, bool]:
    a, b = r["rebalancer"].entitlement_deficit_gpu_hours, r["builtin"].entitlement_deficit_gpu_hours
    return _shown(_ratio(a, b), 0.2), a <= 0.2 * b


def _jain(r: dict[str, StrategyResult]) -> tuple[str, bool]:
    a, b = r["rebalancer"].jain_index, r["builtin"].jain_index
    return f"{a:.3f} vs {b:.3f}", a >= b


LOST_SHARE = 0.005  # of the GPU-hours the rebalancer delivered: lost work a reclaim to fair share may cost


def _lost(r: dict[str, StrategyResult]) -> tuple[str, bool]:
    """Lost work within builtin's, or within 0.5 % of the GPU-hours the rebalancer delivered."""
    a, b = r["rebalancer"].lost_gpu_hours, r["builtin"].lost_gpu_hours
    delivered = sum(t.received_gpu_hours for t in r["rebalancer"].teams.values())
    bound = max(b, LOST_SHARE * delivered)
    return f"{a:,.0f} vs {bound:,.0f}", a <= bound


PER_TEAM_JOBS = 5  # a p95 over fewer jobs is one job's luck
SMALL_JOBS = (3, 19)  # a small team: a new or occasional one


def _not_over_served(r: dict[str, StrategyResult]) -> tuple[str, bool]:
    """No team with 5 or more jobs that builtin did not over-serve (received ≤ entitled under builtin) waits longer
    at p95 than 1.1 × its builtin p95 + 10 min (the teams builtin over-serves are those whose volume its quotas
    follow: no quota controller keeps them whole)."""
    base = r["builtin"].teams
    found = sorted((t for t, mine in r["rebalancer"].teams.items()
                    if (b := base.get(t)) is not None and mine.jobs >= PER_TEAM_JOBS
                    and b.received_gpu_hours <= b.entitled_gpu_hours
                    and mine.wait_p95_s > worse_off.SLACK_RATIO * b.wait_p95_s + worse_off.SLACK_S),
                   key=lambda t: (-r["rebalancer"].teams[t].jobs, t))
    return (", ".join(found[:3]) + (f" +{len(found) - 3}" if len(found) > 3 else "")) or "none", not found


def _small_teams(r: dict[str, StrategyResult]) -> tuple[str, bool]:
    """The median of the small teams' (3-19 jobs) p95 waits within builtin's median of theirs + 1 h."""
    lo, hi = SMALL_JOBS
    small = [t for t, mine in r["rebalancer"].teams.items() if lo <= mine.jobs <= hi and t in r["builtin"].teams]
    if not small:
        return "no small team", True
    a = statistics.median(r["rebalancer"].teams[t].wait_p95_s for t in small) / 3600
    b = statistics.median(r["builtin"].teams[t].wait_p95_s for t in small) / 3600
    return f"{a:.1f} h vs {b:.1f} h", a <= b + 1


def _p10_week(r: dict[str, StrategyResult]) -> tuple[str, bool]:
    fw = r["rebalancer"].fairness
    x = fw.p10_ratio if fw else 1.0
    return _shown(x, 0.8), x >= 0.8


def _worst_week(r: dict[str, StrategyResult]) -> tuple[str, bool]:
    mine, base = r["rebalancer"].fairness, r["builtin"].fairness
    a, b = (mine.worst_ratio if mine else 1.0), (base.worst_ratio if base else 1.0)
    return f"{a:.3f} vs {b:.3f}", a >= b


def _eta(r: dict[str, StrategyResult]) -> tuple[str, bool]:
    e = r["rebalancer"].eta
    if e is None or e.within_2x is None:  # no estimator, or no job waited long enough to measure one
        return "not measured", False
    return _shown(e.within_2x, 0.7), e.within_2x >= 0.7


# The project's goals, each judged from one scenario's results. Withdrawn when they were set: "p95 wait ≤ 0.5 ×
# builtin's", "no team worse off than under builtin at all" and "worst team-week ≥ 0.8" (no quota controller
# reaches them: gangs larger than 1.5 × their team's share; builtin over-serves the teams whose volume its quotas
# follow).
GOALS = (
    Goal("util ÷ pooled ≥ 0.99", _util),
    Goal("p95 wait ÷ pooled ≤ 1.05", _p95_pooled),
    Goal("deficit ÷ builtin ≤ 0.2", _deficit),
    Goal("Jain ≥ builtin", _jain),
    Goal("lost GPU-h ≤ max(builtin, 0.5 % delivered)", _lost),
    Goal("no team (5+ jobs) builtin did not over-serve with p95 > 1.1 × builtin's + 10 min", _not_over_served),
    Goal("small teams (3-19 jobs): median p95 ≤ builtin's + 1 h", _small_teams),
    Goal("p10 team-week received ÷ min(entitled, demanded) ≥ 0.8", _p10_week),
    Goal("worst team-week ≥ builtin's worst", _worst_week),
    Goal("estimated start within 2× for ≥ 0.7 of jobs waiting ≥ 1 h", _eta),
)
MET, MISSED = "✓", "✗"


def goals(r: dict[str, StrategyResult]) -> list[str]:
    """One line per goal for one scenario: ✓ or ✗, the goal, the figures."""
    lines = []
    for g in GOALS:
        text, ok = g.check(r)
        lines.append(f"- {MET if ok else MISSED} {g.head}: {text}")
    return lines


def goal_table(results: dict[str, dict[str, StrategyResult]], scenarios: Sequence[BenchScenario]) -> list[str]:
    lines = ["| scenario | " + " | ".join(g.head for g in GOALS) + " |", "|---|" + "---|" * len(GOALS)]
    met = total = 0
    for s in scenarios:
        cells = []
        for g in GOALS:
            text, ok = g.check(results[s.key])
            cells.append(f"{text} {MET if ok else MISSED}")
            met += ok
            total += 1
        lines.append(f"| {s.title} | " + " | ".join(cells) + " |")
    return [*lines, "", f"{met} of {total} goals met."]


def run_all(scenarios: Sequence[BenchScenario], philly: str, workers: int,
            variant: Variant = Variant()) -> tuple[dict[str, dict[str, StrategyResult]], dict[tuple[str, str], float]]:
    tasks = [(s.key, n) for s in scenarios for n in STRATEGIES]
    # The slowest runs first (the rebalancer's, with the planner in the loop), so the pool's tail is short.
    tasks.sort(key=lambda t: t[1] != "rebalancer")
    results: dict[str, dict[str, StrategyResult]] = {s.key: {} for s in scenarios}
    timings: dict[tuple[str, str], float] = {}

    def record(key: str, name: str, result: StrategyResult, seconds: float) -> None:
        results[key][name] = result
        timings[(key, name)] = seconds
        print(f"{key} {name}: {seconds:.1f} s", flush=True)

    if workers <= 1:
        for key, name in tasks:
            record(*run_one(key, name, philly, variant))
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for out in [pool.submit(run_one, key, name, philly, variant) for key, name in tasks]:
                record(*out.result())
    ordered = {k: {n: results[k][n] for n in STRATEGIES} for k in results}
    return ordered, timings


def block(scenarios: Sequence[BenchScenario], philly: str, results: dict[str, dict[str, StrategyResult]],
          timings: dict[tuple[str, str], float], wall_s: float, workers: int, variant: Variant = Variant()) -> str:
    over = variant.label()
    lines = [BEGIN,
             f"`make bench-sim` — {len(scenarios)} scenarios × {len(STRATEGIES)} strategies; controller every 15 min, "
             f"apply delay 2 min, no checkpoints; default teams (equal weights, quotas ∝ accelerator-hours) and the "
             f"default policy{over}; {platform.python_implementation()} {platform.python_version()}, "
             f"{platform.machine()}; wall time {wall_s:.0f} s on {workers} worker process(es).", ""]
    for s in scenarios:
        sc = scenario(s.key, philly)
        times = ", ".join(f"{n} {timings[(s.key, n)]:.1f} s" for n in STRATEGIES)
        lines += [f"### {s.title}", "", f"{s.describe(sc)}. Run time: {times}.", "", markdown_table(results[s.key]),
                  ""]
        lines += pool_tables(results[s.key])
        lines += eta_table(results[s.key])
        lines += ["Goals (rebalancer against pooled and builtin):", "", *goals(results[s.key]), ""]
    lines += ["### Goals, per scenario (rebalancer against pooled and builtin)", "", *goal_table(results, scenarios),
              END]
    return "\n".join(lines)


def write_doc(doc: Path, text: str) -> None:
    old = doc.read_text() if doc.exists() else f"# Simulation\n\n{BEGIN}\n{END}\n"
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    doc.write_text(pattern.sub(lambda _: text, old) if pattern.search(old) else old + "\n" + text + "\n")


def _hours(text: str) -> float:
    """`--window-hours`, within the bounds the policy itself sets on `fairness.window_hours`."""
    try:
        return Fairness(window_hours=float(text)).window_hours or 0.0
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"fairness.window_hours must be a number of hours in (0, {24 * 92}], not {text!r}") from None


def _k(text: str) -> float:
    """`--window-k`, within the bounds the policy itself sets on `fairness.window_k`."""
    try:
        return Fairness(window_k=float(text)).window_k
    except ValueError:
        raise argparse.ArgumentTypeError(f"fairness.window_k must be a number in [0, 100], not {text!r}") from None


def options(argv: Sequence[str] | None = None) -> tuple[argparse.Namespace, Variant]:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", default="../shared/traces/philly-vc/jobs.csv", help="The Philly trace.")
    ap.add_argument("--doc", default="docs/simulation.md", help="Where the results go ('' : print only).")
    ap.add_argument("--workers", type=int, default=2, help="Processes running scenario × strategy runs.")
    ap.add_argument("--only", action="append", choices=[s.key for s in SCENARIOS],
                    help="Run only this scenario (repeatable); the doc is then left alone.")
    ap.add_argument("--gang-steps", action="store_true",
                    help="The default policy with fairness.gang_steps on (the doc is then left alone).")
    ap.add_argument("--window-hours", type=_hours, default=None, metavar="H",
                    help="The default policy with fairness.window_hours H (the doc is then left alone).")
    ap.add_argument("--window-form", choices=["exponential", "kai"], default=None,
                    help="With --window-hours: the window factor's form (the doc is then left alone).")
    ap.add_argument("--window-k", type=_k, default=None, metavar="K",
                    help="With --window-form kai: KAI's k (the doc is then left alone).")
    ap.add_argument("--no-eta", action="store_true",
                    help="Do not measure the estimated starts (faster; the doc is then left alone).")
    ap.add_argument("--quota-weights", action="store_true",
                    help="Weights in proportion to the hand-set quotas, as `policy init` writes them (the doc is "
                         "then left alone).")
    args = ap.parse_args(argv)
    return args, Variant(gang_steps=args.gang_steps, window_hours=args.window_hours, quota_weights=args.quota_weights,
                         window_form=args.window_form, window_k=args.window_k, eta=not args.no_eta)


def main() -> None:
    args, variant = options()
    scenarios = [s for s in SCENARIOS if not args.only or s.key in args.only]
    t0 = time.perf_counter()
    results, timings = run_all(scenarios, args.trace, args.workers, variant)
    wall = time.perf_counter() - t0
    text = block(scenarios, args.trace, results, timings, wall, args.workers, variant)
    print(text)
    print(f"bench-sim wall time: {wall:.1f} s ({args.workers} workers)", flush=True)
    if args.doc and not args.only and variant == Variant():
        write_doc(Path(args.doc), text)


if __name__ == "__main__":
    main()
