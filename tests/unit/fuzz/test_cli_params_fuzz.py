"""Every option of every command, fuzzed at parse time (issue 25 item 8): click converts the value with the
command's parameter type, and either refuses it with a usage error (exit 2, one line naming the option) or yields a
value within the type's bounds (finite, in range, a writable path). The command itself is not run: `make_context`
parses and converts only, so no AWS call, no emulator, no file is written."""

from __future__ import annotations

import math
import os
from pathlib import Path

import click
import pytest
from hypothesis import given
from support.fuzz import OPTION_VALUES, fuzz, within_memory

from rebalancer_tools.backtest.search import check_storage
from rebalancer_tools.cli import COMMANDS, cli
from rebalancer_tools.cli.params import Number, OutputDir, OutputFile, Whole


def _commands() -> list[tuple[str, click.Command]]:
    ctx = click.Context(cli)
    out: list[tuple[str, click.Command]] = []
    for name in sorted(COMMANDS):
        command = cli.get_command(ctx, name)
        assert command is not None
        out.append((name, command))
        if isinstance(command, click.Group):
            out += [(f"{name} {sub}", command.commands[sub]) for sub in sorted(command.commands)]
    return out


# Imports that parsing an option pulls in once (sqlalchemy for --storage) are paid here, not in an example's deadline.
check_storage("sqlite://")

OPTIONS = [(name, command, option) for name, command in _commands() for option in command.params
           if isinstance(option, click.Option) and not option.is_flag and option.name != "help"]


def test_every_number_option_of_every_command_uses_the_bounded_types() -> None:
    """No option is a bare int or float (which take NaN, inf, `²`... or 10**30) nor click's ranges (NaN passes)."""
    loose = [f"{name} {option.opts[0]}" for name, _, option in OPTIONS
             if isinstance(option.type, click.types.IntParamType | click.types.FloatParamType)]
    assert loose == []


def _check(option: click.Option, value: object) -> None:
    kind = option.type
    values = value if isinstance(value, tuple) else (value,)
    for v in values:
        if v is None:
            continue
        if isinstance(kind, Number):
            assert isinstance(v, float)
            assert math.isfinite(v)
            assert kind.lo <= v <= kind.hi
        elif isinstance(kind, Whole):
            assert isinstance(v, int)
            assert kind.lo <= v <= kind.hi
        elif isinstance(kind, OutputFile | OutputDir):
            parent = Path(str(v)).absolute().parent
            assert parent.is_dir()
            assert os.access(parent, os.W_OK)


@pytest.mark.parametrize(("name", "command", "option"), OPTIONS,
                         ids=[f"{n} {o.opts[0]}" for n, _, o in OPTIONS])
@fuzz(max_examples=8, deadline_s=2.0)
@given(value=OPTION_VALUES)
@within_memory(16 * 1024 * 1024)
def test_any_value_of_any_option_is_refused_in_one_line_or_within_its_bounds(
        name: str, command: click.Command, option: click.Option, value: str) -> None:
    refused: click.ClickException | None = None
    try:
        ctx = command.make_context(f"rebalancer {name}", [option.opts[0], value])
    except click.ClickException as e:  # anything else escapes and fails the example
        refused = e
    if refused is None:
        _check(option, ctx.params[option.name])  # type: ignore[index]
    elif isinstance(refused, click.BadParameter) and not isinstance(refused, click.MissingParameter):
        assert refused.param is option  # the value given is the one named
        assert "\n" not in refused.format_message()
