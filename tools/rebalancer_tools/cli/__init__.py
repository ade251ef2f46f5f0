"""`rebalancer` command line. Each command lives in its own module and is imported only when run, so
`rebalancer plan` does not pay for the simulator's or the emulator's imports."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from rebalancer.errors import CredentialsError, InvalidInput, RebalancerError
from rebalancer_tools.cli.params import AWS_PROFILE_KEY

# name → "module:attribute" of a click command. One line per command.
COMMANDS: dict[str, str] = {
    "plan": "rebalancer_tools.cli.plan_cmd:plan",
    "diff": "rebalancer_tools.cli.diff_cmd:diff",
    "snapshot": "rebalancer_tools.cli.live_cmds:snapshot",
    "apply": "rebalancer_tools.cli.live_cmds:apply",
    "rollback": "rebalancer_tools.cli.live_cmds:rollback",
    "emulator": "rebalancer_tools.cli.emulator_cmd:emulator",
    "schema": "rebalancer_tools.cli.schema_cmd:schema",
    "simulate": "rebalancer_tools.cli.simulate_cmd:simulate",
    "history": "rebalancer_tools.cli.history_cmd:history",
    "demo": "rebalancer_tools.cli.demo_cmd:demo",
    "doctor": "rebalancer_tools.cli.doctor_cmd:doctor",
    "backtest": "rebalancer_tools.cli.backtest_cmd:backtest",
    "recommend": "rebalancer_tools.cli.recommend_cmd:recommend",
    "usage": "rebalancer_tools.cli.usage_cmd:usage",
    "trace": "rebalancer_tools.cli.trace_cmd:trace",
    "approvals": "rebalancer_tools.cli.approvals_cmd:approvals",
    "policy": "rebalancer_tools.cli.policy_cmd:policy",
    "reserve": "rebalancer_tools.cli.reservations_cmd:reserve",
    "reservations": "rebalancer_tools.cli.reservations_cmd:reservations",
    "why": "rebalancer_tools.cli.why_cmd:why",
    "lock": "rebalancer_tools.cli.lock_cmd:lock",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, _, attr = target.partition(":")
        command = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command)
        return command


class Rebalancer(LazyGroup):
    """Errors become one clear line on stderr: exit 2 for invalid input, 1 for anything else (unless --debug). A
    problem with the caller's AWS configuration (profile, credentials, region) is one line wherever it arises, naming
    the profile in use."""

    def invoke(self, ctx: click.Context) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        from rebalancer.adapters.aws import credentials_problem

        try:
            return super().invoke(ctx)
        except InvalidInput as e:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"error: {e}", err=True)
            sys.exit(2)
        except CredentialsError as e:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"error: {_with_profile(str(e), ctx)}", err=True)
            sys.exit(1)
        except RebalancerError as e:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            click.echo(f"error: {e}", err=True)
            sys.exit(1)
        except (BotoCoreError, ClientError) as e:  # raised outside every aws_call
            problem = credentials_problem(e)
            if problem is None or (ctx.obj and ctx.obj.get("debug")):
                raise
            click.echo(f"error: {_with_profile(problem, ctx)}", err=True)
            sys.exit(1)


def _with_profile(problem: str, ctx: click.Context) -> str:
    """The problem, and the profile it concerns unless the problem names it already."""
    profile = (ctx.obj or {}).get(AWS_PROFILE_KEY) or os.environ.get("AWS_PROFILE")
    return problem if not profile or repr(profile) in problem else f"{problem} [AWS profile {profile!r}]"


@click.group(cls=Rebalancer)
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.version_option(package_name="hyperpod-rebalancer")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Keep SageMaker HyperPod task-governance quotas matched to what teams need."""
    ctx.obj = {"debug": debug}


def main() -> None:
    cli(prog_name="rebalancer")
