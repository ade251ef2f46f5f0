"""Notice before reclaim on the command line: `rebalancer apply` writes a plan that would make Kueue preempt running
work only with --notice-given (the command cannot tell the teams), records what the notice named, and once written
reads Kueue again and records what it preempted beside what the plan named. Against the emulator over HTTP and the
loopback Kueue API, through the real CLI entry point."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import Result
from support.five_teams import BEFORE, P5, cli_apply, cli_table, gpus
from support.kube_api import KubeState, cluster_queue, pod_set, serve, workload

from rebalancer.adapters.aws import AwsClients
from rebalancer.adapters.dynamodb.store import Store
from rebalancer_tools.emulator.control import Emulator

GPU = "nvidia.com/gpu"
POLICY = """
mode: auto
stability: {min_step: 1, cooldown_minutes: 0, max_move: 64}
approval: {moved_accelerators: 64, max_decrease_percent: 100}
reclaim: {notice_minutes: 15}
teams:
""" + "".join(f"  {t}: {{weight: 1}}\n" for t in "abcde")
# What each team runs (name, GPUs, admitted): the cluster full at BEFORE's quotas, a 2 above its share.
RUNS = {"a": [("a-old", 6, "2026-12-01T03:00:00Z"), ("a-new", 4, "2026-12-01T05:00:00Z")],
        "b": [("b-1", 8, "2026-12-01T01:00:00Z")], "c": [("c-1", 6, "2026-12-01T01:00:00Z")],
        "d": [("d-1", 4, "2026-12-01T01:00:00Z")], "e": [("e-1", 4, "2026-12-01T01:00:00Z")]}


@pytest.fixture
def kube() -> Iterator[str]:
    """c waits for 2 more: its share is 8, a's 8 of the 10 it runs."""
    state = KubeState()
    for team, runs in RUNS.items():
        state.add(cluster_queue(team, {P5: {GPU: 32}}, reserved={P5: {GPU: sum(g for _, g, _ in runs)}}),
                  *(workload(team, name, [pod_set(1, {GPU: g}, P5)], admitted_on=P5, admitted=at)
                    for name, g, at in runs))
    state.add(workload("c", "c-small", [pod_set(1, {GPU: 2}, P5)], created="2026-12-01T05:30:00Z"))
    with serve(state) as (url, _):
        yield url


@pytest.fixture
def table(emu: Emulator, aws: AwsClients, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("REBALANCER_TABLE", raising=False)
    return cli_table(emu, aws)


def apply(tmp_path: Path, kube: str, table: str, *extra: str) -> Result:
    return cli_apply(tmp_path, kube, POLICY, "--yes", "--table", table, *extra)


def records(aws: AwsClients, table: str) -> list[dict[str, object]]:
    return Store(table, resource=aws.session.resource("dynamodb")).audit.records("c1")


def test_a_plan_that_preempts_is_refused_without_notice_given(emu: Emulator, aws: AwsClients, kube: str,
                                                               table: str, tmp_path: Path) -> None:
    result = apply(tmp_path, kube, table)
    assert result.exit_code == 1, result.output
    assert "│ a    │ a-new    │" in result.stdout  # the plan's table named it
    [line] = result.stderr.strip().splitlines()[-1:]
    # the GPU-hours count from a-new's admission to the command's own clock
    assert re.fullmatch(r"error: the plan would preempt 1 running workload, [0-9.]+ GPU-hours of work at risk "
                        r"\(teams a\): nothing applied; tell them 15 minutes ahead \(reclaim.notice_minutes\) and "
                        r"run again with --notice-given", line), line
    assert gpus(emu) == BEFORE
    assert [(r["kind"], r["outcome"]) for r in records(aws, table)] == [("plan", "notice"), ("apply", "refused")]


def test_with_notice_given_it_is_written_and_what_kueue_preempted_is_recorded(
        emu: Emulator, aws: AwsClients, kube: str, table: str, tmp_path: Path) -> None:
    result = apply(tmp_path, kube, table, "--notice-given")
    assert result.exit_code == 0, result.output
    assert (gpus(emu)["a"], gpus(emu)["c"]) == (8, 8)
    # this Kueue API is a fixture that never preempts: the run records that it did not, beside what was named
    assert f"Kueue preempted 0 workload(s); the plan named 1 (not named: none; named, still running: a/a-new@{P5})" \
        in result.stdout
    [seen] = [r for r in records(aws, table) if r["kind"] == "preempted"]
    assert (seen["outcome"], seen["before"], seen["after"]) == ("differs", [f"a/a-new@{P5}"], [])
