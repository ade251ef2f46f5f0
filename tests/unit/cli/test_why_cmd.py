"""`rebalancer why` through click's CliRunner, over the memory store (the same repositories as the table)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from support.clock import ticking
from support.why_runs import P5, SECOND, record_runs

from rebalancer_tools.cli import cli, why_cmd
from rebalancer_tools.fakes.memory_store import MemoryStore


@pytest.fixture(autouse=True)
def store(monkeypatch: pytest.MonkeyPatch) -> MemoryStore:
    s = MemoryStore(now=ticking())
    record_runs(s)
    monkeypatch.setattr(why_cmd, "open_store", lambda *_args: s)
    return s


def test_text_answer() -> None:
    got = CliRunner().invoke(cli, ["why", "--cluster", "test", "--team", "a", "--table", "t"])
    assert got.exit_code == 0, got.output
    lines = got.output.splitlines()
    assert lines[0] == "a on test (snapshot 2026-11-30 12:00 UTC)"
    assert lines[1] == (f"  {P5}: quota 8, 8 in use; last changed 24→8 on 2026-11-30 12:00 (applied): idle 90 % of "
                        "its quota")
    assert lines[2] == f"workload pretrain on {P5}: 16 accelerators in 2 pods, waiting since 2026-11-30 07:00"
    assert "  - borrow limit reached: it may borrow 4 beyond its quota, 16 needed" in lines
    assert lines[-1] == f"  would start with: a guarantee of 24 in {P5} (now 8) and 12 accelerators free up"


def test_json_answer() -> None:
    got = CliRunner().invoke(cli, ["why", "--cluster", "test", "--team", "a", "--table", "t", "--format", "json"])
    assert got.exit_code == 0, got.output
    doc = json.loads(got.output)
    assert doc["execution"] == SECOND
    assert doc["quotas"][0]["last_change"]["reason"] == "idle 90 % of its quota"
    assert [r["kind"] for r in doc["waiting"][0]["reasons"]] == ["over_quota", "borrow_limit"]


def test_unknown_team_is_one_line_and_exit_2() -> None:
    got = CliRunner().invoke(cli, ["why", "--cluster", "test", "--team", "nobody", "--table", "t"])
    assert got.exit_code == 2
    assert got.output == "error: team: no team 'nobody' in the latest snapshot of test (teams: a, b)\n"


def test_no_run_is_one_line_and_exit_1() -> None:
    got = CliRunner().invoke(cli, ["why", "--cluster", "elsewhere", "--team", "a", "--table", "t"])
    assert got.exit_code == 1
    assert got.output.startswith("error: no stored run of cluster elsewhere")
    assert "Traceback" not in got.output
