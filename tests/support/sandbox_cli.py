"""A `rebalancer` command as a user runs it in a shell, on the sandbox of tests/e2e/conftest.py's `sandbox`."""

from __future__ import annotations

from click.testing import CliRunner

from rebalancer_tools.cli import cli


def rebalancer(*args: str) -> tuple[int, str]:
    """(exit code, output) of `rebalancer ARGS`."""
    got = CliRunner().invoke(cli, list(args), terminal_width=200)
    return got.exit_code, got.output
