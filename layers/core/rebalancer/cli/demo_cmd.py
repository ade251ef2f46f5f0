"""`rebalancer demo` (what `make demo` runs): the whole controller on the emulator, on 127.0.0.1, in one process."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from rebalancer.app.template import find_root

DEFAULT_POLICY = "examples/demo-policy.yaml"


@click.command()
@click.option("--policy", "policy_file", type=click.Path(dir_okay=False, exists=True),
              help=f"Policy of the demo cluster (default: {DEFAULT_POLICY}).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="demo-out", show_default=True,
              help="Folder for the report (Markdown + PNG) and the rollback snapshot.")
def demo(policy_file: str | None, out_dir: str) -> None:
    """Run the four demo scenarios end to end against the emulator; exit 0 only if every one ended as expected."""
    import logging

    from rich.console import Console

    started = time.monotonic()
    console = Console(width=80)
    # The handlers log JSON lines (Powertools) and print EMF metrics; the narrative is the demo's output.
    logging.disable(logging.WARNING)
    from contextlib import redirect_stdout
    from io import StringIO

    from rebalancer.demo import scenarios
    from rebalancer.demo.narrative import RichStory, quota_table
    from rebalancer.demo.report import read_utilization, write_report
    from rebalancer.demo.world import open_world

    policy = Path(policy_file) if policy_file else find_root() / DEFAULT_POLICY
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    console.print("[bold]hyperpod-rebalancer demo[/bold]: the real state machine and Lambda handlers, against an "
                  "emulated HyperPod cluster, Kueue, CloudWatch and Slack, all on 127.0.0.1.")
    with console.status("starting the emulator, Kueue stand-in and Slack receiver; deploying the stack…"):
        world_cm = open_world(policy.read_text())
        world = world_cm.__enter__()
    try:
        initial = world.quotas()
        console.print(f"emulator: {world.endpoint}   Kueue API: {world.stack.kube_url}   approvals: "
                      f"{world.gateway.url}")
        console.print(f"policy: {policy}")
        console.print(quota_table(initial, initial, world.healthy_capacity(),
                                  f"{world.cluster}: quotas (accelerators) per team"))
        story = RichStory(console)
        noise = StringIO()
        with redirect_stdout(noise):  # EMF metric lines the handlers print; the story prints to the console
            console.file = sys.__stdout__ or sys.stdout
            results = scenarios.run_all(world, story, out)
            utilization = read_utilization(world.client("cloudwatch"), world.clock.t)
    finally:
        world_cm.__exit__(None, None, None)
    seconds = time.monotonic() - started
    report = write_report(results, initial, utilization, out, seconds)
    console.print()
    passed = sum(r.ok for r in results)
    for r in results:
        console.print(("[green]✓[/green] " if r.ok else "[bold red]✗[/bold red] ") + r.title)
    console.print(f"{passed}/{len(results)} scenarios ended as expected in {seconds:.0f} s. Report: {report}")
    if passed != len(results):
        sys.exit(1)
