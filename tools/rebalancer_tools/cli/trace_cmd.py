"""`rebalancer trace`: a seeded synthetic job trace (steady, diurnal, bursty and heavy-tailed teams) for
`rebalancer simulate`, so that a policy is judged on more than one real trace."""

from __future__ import annotations

from typing import cast

import click

from rebalancer.errors import InvalidInput
from rebalancer_tools.cli.params import SEED, Number, OutputFile, Whole, atomic_output
from rebalancer_tools.cli.simulate_cmd import _pools
from rebalancer_tools.simulator import synthetic


def _kinds(raw: str) -> list[synthetic.Kind]:
    names = [k.strip() for k in raw.split(",") if k.strip()]
    for k in names:
        if k not in synthetic.KINDS:
            raise InvalidInput(f"unknown kind {k!r} (choose from {', '.join(synthetic.KINDS)})", field="--kinds",
                               value=k)
    if not names:
        raise InvalidInput("no kind given", field="--kinds", value=raw)
    return [cast(synthetic.Kind, k) for k in names]


@click.command()
@click.option("--teams", "count", type=Whole(1, 200), default=8, show_default=True)
@click.option("--gpus", type=Whole(1, 1_000_000), default=512, show_default=True, help="The cluster the load is for.")
@click.option("--pool", "pool_values", multiple=True, metavar="TYPE=NODES",
              help="Instead of --gpus: a pool of the cluster (repeatable, as for `simulate`). Teams are spread over "
                   "the pools in proportion to their capacity; each team's jobs carry its pool's instance_type.")
@click.option("--load", type=Number(0.01, 10), default=1.0, show_default=True,
              help="Average demand ÷ capacity (above 1: sustained overload).")
@click.option("--kinds", default=",".join(synthetic.KINDS), show_default=True,
              help="The kinds of team, assigned in turn.")
@click.option("--days", type=Number(0.1, 365), default=30, show_default=True)
@click.option("--gpus-per-node", type=Whole(1, 64), default=8, show_default=True)
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option("--output", "-o", required=True, type=OutputFile())
def trace(count: int, gpus: int, pool_values: tuple[str, ...], load: float, kinds: str, days: float,
          gpus_per_node: int, seed: int, output: str) -> None:
    """Write a synthetic trace (CSV: job_id,team,submit_s,duration_s,gpus, and instance_type with --pool)."""
    pools = _pools(pool_values)
    if pools:
        from rebalancer.catalog import specs as catalog

        teams = synthetic.pool_teams(count, [(t, n * catalog.spec(t).accelerators) for t, n in pools], load,
                                     _kinds(kinds))
    else:
        teams = synthetic.default_teams(count, gpus, load, _kinds(kinds))
    jobs = synthetic.generate(teams, days=days, seed=seed, gpus_per_node=gpus_per_node)
    with atomic_output(output) as f:
        synthetic.write_csv(jobs, f)
    described = ", ".join(f"{t.name} {t.kind} {t.gpus:.0f} {'GPUs' if not t.instance_type else t.instance_type}"
                          for t in teams)
    click.echo(f"{len(jobs)} jobs over {days:g} days for {len(teams)} teams ({described}) written to {output}",
               err=True)
