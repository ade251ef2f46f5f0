"""simulate's Markdown parts (the estimated starts, the teams worse off): drawn as tables in a terminal, where raw
pipes and long cells broke the rows; the Markdown itself to a pipe or a file, line for line, for scripts."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from rebalancer_tools.cli.output import PIPED_WIDTH
from rebalancer_tools.cli.simulate_cmd import print_markdown

LONG = "raise its guarantee on ml.p5.48xlarge to 16 and its weight to 3, which keeps it whole in every week"
LINES = ["## Teams worse off than under static", "", "| team | jobs | what keeps it whole |", "|---|---|---|",
         f"| research | 120 | {LONG} |", ""]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def shown(monkeypatch: pytest.MonkeyPatch, stdout: io.StringIO) -> list[str]:
    """As simulate prints: a terminal's console at its width, a pipe's at PIPED_WIDTH without folding."""
    monkeypatch.setattr("sys.stdout", stdout)
    screen = io.StringIO()
    terminal = stdout.isatty()
    out = Console(file=screen, width=80 if terminal else PIPED_WIDTH, soft_wrap=not terminal, color_system=None)
    print_markdown(out, LINES)
    return screen.getvalue().splitlines()


def test_a_terminal_gets_the_table_drawn_each_row_within_its_width(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = shown(monkeypatch, Terminal())
    assert not any("|---" in line or line.startswith("|") for line in lines)
    assert max(len(line) for line in lines) <= 80
    assert any(line.split()[:2] == ["research", "120"] for line in lines)
    assert " ".join(" ".join(lines).split()).count("keeps it whole in every week") == 1  # the long cell, wrapped


def test_a_pipe_gets_the_markdown_line_for_line(monkeypatch: pytest.MonkeyPatch) -> None:
    assert shown(monkeypatch, io.StringIO()) == LINES
