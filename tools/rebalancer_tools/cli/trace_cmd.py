"""`rebalancer trace`: a seeded synthetic job trace (steady, diurnal, bursty and heavy-tailed teams) for
`rebalancer simulate`, so that a policy is judged on more than one real trace."""

from __future__ import annotations

from pathlib import Path

import click

from rebalancer_tools.simulator import synthetic


@click.command()
@click.option("--teams", "count", type=click.IntRange(1, 200), default=8, show_default=True)
@click.option("--gpus", type=click.IntRange(1), default=512, show_default=True, help="The cluster the load is for.")
@click.option("--load", type=click.FloatRange(0.01, 10), default=1.0, show_default=True,
              help="Average demand ÷ capacity (above 1: sustained overload).")
@click.option("--days", type=click.FloatRange(0.1, 365), default=30, show_default=True)
@click.option("--gpus-per-node", type=click.IntRange(1), default=8, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False, writable=True))
def trace(count: int, gpus: int, load: float, days: float, gpus_per_node: int, seed: int, output: str) -> None:
    """Write a synthetic trace (CSV: job_id,team,submit_s,duration_s,gpus)."""
    teams = synthetic.default_teams(count, gpus, load)
    jobs = synthetic.generate(teams, days=days, seed=seed, gpus_per_node=gpus_per_node)
    synthetic.write_csv(jobs, Path(output))
    kinds = ", ".join(f"{t.name} {t.kind} {t.gpus:.0f} GPUs" for t in teams)
    click.echo(f"{len(jobs)} jobs over {days:g} days for {count} teams ({kinds}) written to {output}", err=True)
