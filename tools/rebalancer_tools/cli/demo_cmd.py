"""`rebalancer demo` (what `make demo` runs): the whole controller on the emulator, on 127.0.0.1, in one process."""

from __future__ import annotations

import functools
import logging
import sys
import time
from contextlib import ExitStack, redirect_stdout
from io import StringIO
from pathlib import Path

import click

from rebalancer.parsing.loading import POLICY_MAX_BYTES, read_text
from rebalancer_tools.cli.output import width
from rebalancer_tools.cli.params import InputFile, OutputDir
from rebalancer_tools.packaging.template import find_root

DEFAULT_POLICY = "examples/demo-policy.yaml"


def run_cli(args: list[str], columns: int | None = None) -> tuple[int, str]:
    """The `rebalancer` command, in this process (so it reaches the emulator through AWS_ENDPOINT_URL); its tables
    laid out in `columns` (None: as for a pipe, one line a row)."""
    from click.testing import CliRunner

    from rebalancer_tools.cli import cli

    env = {"COLUMNS": str(columns)} if columns else {}
    got = CliRunner().invoke(cli, args, catch_exceptions=True, env=env)
    text = got.output
    if got.exception is not None and not isinstance(got.exception, SystemExit):
        text += f"\n{type(got.exception).__name__}: {got.exception}"
    return got.exit_code, text


@click.command()
@click.option("--policy", "policy_file", type=InputFile(),
              help=f"Policy of the demo cluster (default: {DEFAULT_POLICY}).")
@click.option("--out", "out_dir", type=OutputDir(), default="demo-out", show_default=True,
              help="Folder for the report (Markdown + PNG) and the rollback snapshot.")
def demo(policy_file: str | None, out_dir: str) -> None:
    """Run the six demo scenarios end to end against the emulator; exit 0 only if every one ended as expected."""
    from rich.console import Console

    started = time.monotonic()
    console = Console(width=width() or 80)  # a terminal's width (or COLUMNS); a pipe gets 80 columns
    # The handlers log JSON lines (Powertools) and print EMF metrics to stdout; the narrative is the demo's output.
    logging.disable(logging.WARNING)
    from rebalancer_tools.demo import scenarios
    from rebalancer_tools.demo.narrative import RichStory, quota_table
    from rebalancer_tools.demo.report import Stage, read_utilization, write_report
    from rebalancer_tools.demo.world import open_world

    policy = Path(policy_file) if policy_file else find_root() / DEFAULT_POLICY
    policy_text = read_text(policy, what="policy", max_bytes=POLICY_MAX_BYTES)  # one line if it cannot be read
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    console.print("[bold]hyperpod-rebalancer demo[/bold]: the real state machine and Lambda handlers, against an "
                  "emulated HyperPod cluster, Kueue, CloudWatch and Slack, all on 127.0.0.1.")
    with ExitStack() as stack:
        with console.status("starting the emulator, Kueue stand-in and Slack receiver; deploying the stack…"):
            world = stack.enter_context(open_world(policy_text))
        initial = world.quotas()
        start = Stage(world.clock.t, initial, world.healthy_capacity())
        for name, url in (("emulator", world.endpoint), ("Kueue API", world.stack.kube_url),
                          ("approvals", world.gateway.url)):
            console.print(f"{name + ':':11}{url}", soft_wrap=True, highlight=False, markup=False)
        console.print(f"policy: {policy}")
        console.print(quota_table(initial, initial, world.healthy_capacity(),
                                  f"{world.cluster}: quotas (accelerators) per team"))
        console.file = sys.stdout  # the console keeps the terminal; what the handlers print is dropped
        with redirect_stdout(StringIO()):
            # The commands the story shows print for the story's width.
            results = scenarios.run_all(world, RichStory(console), out,
                                        functools.partial(run_cli, columns=console.width))
            world.publish_utilization()  # to the story's end: the figure shows it all along
            utilization = read_utilization(world.client("cloudwatch"), world.clock.t,
                                           hours=(world.clock.t - start.at).total_seconds() / 3600 + 1)
            end = world.clock.t
    seconds = time.monotonic() - started
    report = write_report(results, start, utilization, out, seconds, end)
    console.print()
    passed = sum(r.ok for r in results)
    for r in results:
        console.print(("[green]✓[/green] " if r.ok else "[bold red]✗[/bold red] ") + r.title)
    console.print(f"{passed}/{len(results)} scenarios ended as expected in {seconds:.0f} s. Report: {report}")
    if passed != len(results):
        sys.exit(1)
