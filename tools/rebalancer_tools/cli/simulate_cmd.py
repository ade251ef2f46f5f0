"""`rebalancer simulate`: replay a job trace under each quota strategy and compare them."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.markdown import Markdown
from rich.text import Text

from rebalancer.catalog import specs as catalog
from rebalancer.domain.policy import Policy
from rebalancer.errors import InvalidInput
from rebalancer.parsing.loading import load_model_file
from rebalancer.parsing.text import short
from rebalancer_tools.cli.output import console, format_option
from rebalancer_tools.cli.params import SEED, InputFile, Number, OutputDir, Whole, whole
from rebalancer_tools.reports.tables import Column, Listing, Record
from rebalancer_tools.simulator import STRATEGIES, Failures, Scenario, StrategyResult, run_strategy, worse_off
from rebalancer_tools.simulator.labels import renamed
from rebalancer_tools.simulator.node_events import load_node_events
from rebalancer_tools.simulator.teams import TeamSpec, default_pool_teams, default_teams, load_teams
from rebalancer_tools.simulator.trace import read_trace
from rebalancer_tools.simulator.warnings import scenario_warnings

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress


def _strategies(raw: str) -> list[str]:
    names = [s.strip() for s in raw.split(",") if s.strip()]
    for s in names:
        if s not in STRATEGIES:
            raise InvalidInput(f"unknown strategy {s!r} (choose from {', '.join(STRATEGIES)})",
                               field="--strategies", value=s)
    if not names:
        raise InvalidInput("no strategy given", field="--strategies", value=raw)
    return names


MAX_POOL_NODES = 100_000  # HyperPod clusters hold thousands of nodes, not hundreds of thousands


def _pools(raw: tuple[str, ...]) -> tuple[tuple[str, int], ...]:
    """`--pool TYPE=NODES` values, in the order given."""
    out: dict[str, int] = {}
    for value in raw:
        itype, sep, nodes = value.partition("=")
        itype = itype.strip()
        count = whole(nodes, 1, MAX_POOL_NODES)
        if not sep or count is None:
            raise InvalidInput(f"must be TYPE=NODES with NODES a whole number from 1 to {MAX_POOL_NODES:,}, got "
                               f"{short(value)}", field="--pool", value=value)
        spec = catalog.spec(itype, field="--pool")
        if not spec.accelerators:
            raise InvalidInput(f"{itype} has no accelerators to simulate", field="--pool", value=value)
        if itype in out:
            raise InvalidInput(f"{itype} given twice", field="--pool", value=value)
        out[itype] = count
    return tuple(out.items())


def results_table(title: str, results: dict[str, StrategyResult], pool: str = "") -> Listing:
    """One row per strategy, in the units people read; the records carry the JSON's figures (and the pool, for a
    CSV of every pool's rows)."""
    from rebalancer_tools.simulator.report import COLUMNS, cells

    shown = {r.name: cells(r) for r in results.values()}

    def column(i: int, head: str) -> Column:
        def cell(record: Record) -> str:
            return shown[record["strategy"]][i]

        return Column(head, cell=cell, wrap=False, numeric=i > 0)

    columns = tuple(column(i, head) for i, (_, head) in enumerate(COLUMNS))
    records = tuple({"pool": pool, "strategy": r.name,
                     **{k: v for k, v in r.output().items() if not isinstance(v, dict)}} for r in results.values())
    return Listing(title=title, columns=columns, records=records)


def labels_table(labels: dict[str, str]) -> Listing:
    return Listing(title="trace labels → team names", columns=(Column("label", wrap=False), Column("team",
                                                                                                   wrap=False)),
                   records=tuple({"label": label, "team": name} for label, name in renamed(labels).items()))


def _teams(teams_path: str | None, scenario: Scenario, labels: dict[str, str]) -> list[TeamSpec]:
    if teams_path:
        return load_teams(teams_path, labels)
    if len(scenario.pools) > 1:
        return default_pool_teams(scenario.jobs_by_pool())
    return default_teams(scenario.jobs, scenario.capacity, scenario.pool_specs[0].per_node)


@click.command()
@click.option("--trace", "trace_path", required=True, type=InputFile(),
              help="CSV: job_id,team,submit_s,duration_s,gpus[,instance_type]. Any team label (mapped to a valid "
                   "team name).")
@click.option("--gpus", type=Whole(1, 1_000_000), default=1024, show_default=True,
              help="Cluster size in GPUs (whole nodes).")
@click.option("--gpus-per-node", type=Whole(1, 64), default=8, show_default=True)
@click.option("--pool", "pool_values", multiple=True, metavar="TYPE=NODES",
              help="A capacity pool, e.g. ml.p5.48xlarge=64 (repeatable; instead of --gpus/--gpus-per-node). A job "
                   "runs on the pool its trace's instance_type names; without one, on the first pool.")
@click.option("--teams", "teams_path", type=InputFile(),
              help="CSV team,weight,guarantee. Default: equal weights, quotas proportional to GPU-hours.")
@click.option("--strategies", default=",".join(STRATEGIES), show_default=True)
@click.option("--policy", "policy_path", type=InputFile(),
              help="Policy for the rebalancer strategy. Default: the teams' weights, half their quota guaranteed.")
@click.option("--controller-interval-minutes", type=Number(1, 7 * 24 * 60), default=15, show_default=True)
@click.option("--apply-delay-minutes", type=Number(0, 24 * 60), default=2, show_default=True)
@click.option("--approval-minutes", type=Number(0, 7 * 24 * 60), default=0, show_default=True,
              help="Extra delay of a plan that requires approval (until an admin approves it).")
@click.option("--checkpoint-minutes", type=Number(0, 30 * 24 * 60), default=0, show_default=True,
              help="Checkpoint interval of jobs; 0: a preempted job loses all its work.")
@click.option("--node-mtbf-hours", type=Number(1, 1e7), help="Mean time between failures of each node (default: none).")
@click.option("--node-repair-hours", type=Number(0.01, 365 * 24), default=4, show_default=True)
@click.option("--node-events", "node_events_path", type=InputFile(),
              help="CSV time_s,node,event (fail|repair): explicit node failures and repairs.")
@click.option("--seed", type=SEED, default=0, show_default=True)
@format_option()
@click.option("--report", "report_dir", type=OutputDir(), help="Write report.md and PNG plots here.")
@click.option("--remedies", type=Whole(0, 10), default=0, show_default=True,
              help="For this many of the teams the rebalancer leaves worse off than the first strategy, search the "
                   "smallest policy change that keeps each whole (each try is one more simulation; 0: list them "
                   "only).")
@click.option("--no-progress", is_flag=True, help="No progress bar on stderr.")
@click.option("--eta/--no-eta", default=False, show_default=True,
              help="Also measure the estimated starts `rebalancer why` would have given (several times the "
                   "simulation's own time).")
def simulate(trace_path: str, gpus: int, gpus_per_node: int, pool_values: tuple[str, ...], teams_path: str | None,
             strategies: str,
             policy_path: str | None, controller_interval_minutes: float, apply_delay_minutes: float,
             approval_minutes: float, checkpoint_minutes: float, node_mtbf_hours: float | None,
             node_repair_hours: float, node_events_path: str | None, seed: int, fmt: str, report_dir: str | None,
             remedies: int, no_progress: bool, eta: bool) -> None:
    """Replay a job trace on a simulated HyperPod cluster under each quota strategy and compare the outcomes."""
    names = _strategies(strategies)
    pools = _pools(pool_values)
    _check_cluster_given(pools, pool_values, gpus, gpus_per_node)
    trace = read_trace(trace_path)
    jobs = trace.jobs
    policy = load_model_file(Policy, policy_path) if policy_path else None
    scenario = Scenario(
        jobs=jobs, teams=(), nodes=gpus // gpus_per_node, gpus_per_node=gpus_per_node, pools=pools,
        controller_interval_s=controller_interval_minutes * 60, apply_delay_s=apply_delay_minutes * 60,
        approval_delay_s=approval_minutes * 60,
        checkpoint_s=checkpoint_minutes * 60, seed=seed, policy=policy, eta=eta)
    nodes = sum(p.nodes for p in scenario.pool_specs)
    explicit = load_node_events(node_events_path, nodes) if node_events_path else ()
    teams = _teams(teams_path, scenario, trace.labels)
    scenario = dataclasses.replace(scenario, teams=teams, failures=Failures(
        mtbf_hours=node_mtbf_hours, repair_hours=node_repair_hours, explicit=explicit))
    scenario.check()
    for warning in scenario_warnings(scenario, policy):
        click.echo(f"warning: {warning}", err=True)
    with Phases(_stderr() if not no_progress and len(jobs) > 2000 else None) as phases:
        results = {n: phases.run(scenario, n, f"{n}: simulating" + (", estimating starts" if eta else ""))
                   for n in names}
        losers = _losers(scenario, results, remedies, phases)
    _show_results(fmt, scenario, results, losers, trace.labels)
    if report_dir:
        from rebalancer_tools.simulator.report import write_report

        setup = (f"Trace `{Path(trace_path).name}`: {len(jobs)} jobs, {len(teams)} teams; {scenario.capacity} "
                 f"accelerators ({scenario.describe_pools()}); controller every {controller_interval_minutes:g} "
                 f"min, apply delay {apply_delay_minutes:g} min, approval {approval_minutes:g} min; checkpoint "
                 f"{checkpoint_minutes:g} min; node MTBF {node_mtbf_hours or 'none'} h; seed {seed}.")
        path = write_report(results, report_dir, title="Simulation report", setup=setup, labels=trace.labels,
                            extra=worse_off.markdown(names[0], losers))
        click.echo(f"report: {path}", err=True)


def _check_cluster_given(pools: tuple[tuple[str, int], ...], pool_values: tuple[str, ...], gpus: int,
                         gpus_per_node: int) -> None:
    """The cluster is given one way: as --pool TYPE=NODES, or as --gpus in whole nodes of --gpus-per-node."""
    ctx = click.get_current_context()
    given = [f for f in ("gpus", "gpus_per_node") if ctx.get_parameter_source(f) != click.core.ParameterSource.DEFAULT]
    if pools and given:
        raise InvalidInput("give the cluster either as --pool TYPE=NODES or as --gpus/--gpus-per-node, not both",
                           field="--pool", value=pool_values[0])
    if not pools and (gpus_per_node <= 0 or gpus < gpus_per_node or gpus % gpus_per_node):
        raise InvalidInput(f"must be a positive multiple of --gpus-per-node ({gpus_per_node}), got {gpus}",
                           field="--gpus", value=gpus)


def _show_results(fmt: str, scenario: Scenario, results: dict[str, StrategyResult],
                  losers: dict[str, list[worse_off.Loser]], labels: dict[str, str]) -> None:
    """Each strategy's outcome, for the whole cluster and per pool, and the teams left worse off than under the
    first strategy: as JSON, CSV, or tables with the estimated starts."""
    names = list(results)
    if fmt == "json":
        click.echo(json.dumps({"capacity_gpus": scenario.capacity,
                               "pools": {p.name: {"nodes": p.nodes, "accelerators": p.nodes * p.per_node}
                                         for p in scenario.pool_specs},
                               "team_labels": labels,
                               "strategies": {n: r.output() for n, r in results.items()},
                               "worse_off": {"baseline": names[0],
                                             "strategies": {n: [t.output() for t in ts] for n, ts in losers.items()}}},
                              indent=2))
    else:
        tables = [results_table(f"{scenario.capacity} accelerators ({scenario.describe_pools()})", results)]
        if len(scenario.pool_specs) > 1:
            tables += [results_table(f"pool {p.name}: {p.nodes * p.per_node} accelerators",
                                     {n: r.pools[p.name] for n, r in results.items()}, p.name)
                       for p in scenario.pool_specs]
        if fmt == "csv":  # every table's rows in one CSV, told apart by their pool ("" for the whole cluster)
            click.echo(Listing("", tables[0].columns, tuple(r for t in tables for r in t.records)).csv(), nl=False)
        else:
            out = console()
            if renamed(labels):
                out.print(labels_table(labels))
            for table in tables:
                out.print(table)
            from rebalancer_tools.simulator.report import eta_table

            print_markdown(out, [*eta_table(results), *worse_off.markdown(names[0], losers)])


def print_markdown(out: Console, lines: list[str]) -> None:
    """Markdown (tables, headings) as a terminal shows it: its tables drawn, long cells wrapped within their column;
    to a pipe or a file, the Markdown itself, line for line, as scripts and docs/simulation.md read it."""
    if lines and sys.stdout.isatty():
        out.print(Markdown("\n".join(lines)))
        return
    for line in lines:
        out.print(Text(line))


def _losers(scenario: Scenario, results: dict[str, StrategyResult], remedies: int,
            phases: Phases) -> dict[str, list[worse_off.Loser]]:
    """Per strategy after the first, the teams it leaves worse off; for the rebalancer, what keeps them whole."""
    names = list(results)
    searched: list[worse_off.Loser] = []
    if remedies and "rebalancer" in names[1:]:
        # each remedy tried is a simulation of its own, whose estimated starts nobody reads
        searched = worse_off.search(dataclasses.replace(scenario, eta=False), results["rebalancer"],
                                    results[names[0]], max_teams=remedies,
                                    run=lambda sc, what: phases.run(sc, "rebalancer", f"remedy {what}"))
    return worse_off.report(results, searched)


def _stderr() -> Console:
    from rich.console import Console

    return Console(stderr=True)


class Phases:
    """The runs of one `simulate`, each a phase that a progress bar on `console` names while it runs (cleared at
    the end); no console: the runs alone."""

    def __init__(self, console: Console | None) -> None:
        self.bar: Progress | None = None
        if console is not None:
            from rich.progress import Progress

            self.bar = Progress(console=console, transient=True)

    def __enter__(self) -> Phases:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *_: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def run(self, scenario: Scenario, strategy: str, phase: str) -> StrategyResult:
        bar = self.bar
        if bar is None:
            return run_strategy(scenario, strategy)
        task = bar.add_task(phase, total=1.0)
        return run_strategy(scenario, strategy, progress=lambda fraction: bar.update(task, completed=fraction))
