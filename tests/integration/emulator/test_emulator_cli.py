"""`rebalancer emulator` errors are one line, not a traceback."""

from __future__ import annotations

import socket

from click.testing import CliRunner

from rebalancer_tools.cli import cli


def test_a_port_in_use_is_one_clear_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(cli, ["emulator", "--port", str(port)])
    assert result.exit_code == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.output
    assert "Traceback" not in result.output
