"""A property over every path that writes quotas (an apply, and the rollback it makes after a failure; a rollback
of a run after nodes failed; a restore of a saved snapshot), on random clusters against the emulator in process: no
write raises the enabled quotas of an instance type above the healthy capacity at that moment, unless they held as
much before the write. The emulator's invariant monitor (rebalancer_tools.emulator.invariant) counts every API
write that did: none may. Nodes fail between the read the writes were planned on and the writes, or while an apply
waits for its writes to settle (`midway`): a raise after that wait stands on the capacity read after it."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.emulator import EmulatorHandle, in_process_emulator
from support.props import properties

from rebalancer.adapters.sagemaker.cluster import SageMakerReader
from rebalancer.adapters.sagemaker.quota_writer import Poller, QuotaWriter
from rebalancer.app.workflow import runs
from rebalancer.app.workflow.state import RunRef
from rebalancer.domain.plan import QuotaRequest
from rebalancer.domain.quotas import ComputeQuota
from rebalancer_tools.fakes.memory_store import MemoryStore

P5, G5 = "ml.p5.48xlarge", "ml.g5.12xlarge"
PER_NODE = {P5: 8, G5: 4}
MIG = "mig-1g.10gb"  # 7 to a GPU of a p5
TEAMS = ("a", "b", "c", "d")
NAMES = (f"c{i}" for i in itertools.count())  # one cluster per example, in one emulator


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorHandle]:
    with in_process_emulator() as handle:
        yield handle


Amounts = dict[str, dict[str, int]]  # team → P5 | G5 | MIG → amount


def config(amounts: dict[str, int]) -> dict[str, Any]:
    entries: list[dict[str, Any]] = [{"InstanceType": t, "Accelerators": amounts[t]} for t in (P5, G5)
                                     if t in amounts]
    if MIG in amounts:
        entries.append({"InstanceType": P5, "AcceleratorPartition": {"Type": MIG, "Count": amounts[MIG]}})
    return {"ComputeQuotaResources": entries}


@st.composite
def cases(draw: st.DrawFn) -> dict[str, Any]:
    nodes = {P5: draw(st.integers(1, 3)), G5: draw(st.integers(1, 3))}
    amount = {P5: st.integers(0, 16), G5: st.integers(0, 8), MIG: st.integers(0, 14)}

    def holdings() -> dict[str, int]:
        return {k: draw(s) for k, s in amount.items() if k != MIG or draw(st.booleans())}

    now = {t: holdings() for t in TEAMS if draw(st.booleans())}
    return {"nodes": nodes, "now": now,
            "target": {t: holdings() for t in TEAMS if t in now or draw(st.booleans())},
            "failed": {t: draw(st.integers(0, n)) for t, n in nodes.items()},
            "path": draw(st.sampled_from(["apply", "midway", "undo", "restore"])),
            "order": draw(st.permutations(TEAMS)), "fail_at": draw(st.integers(0, 3))}


def setup(emu: EmulatorHandle, case: dict[str, Any]) -> tuple[str, str, tuple[ComputeQuota, ...]]:
    name = next(NAMES)
    e = emu.emulator
    arn = e.create_cluster(name, [("p5", P5, case["nodes"][P5]), ("g5", G5, case["nodes"][G5])])
    for team, held in case["now"].items():
        emu.sagemaker.create_compute_quota(Name=f"{team}-quota", ClusterArn=arn, ComputeQuotaConfig=config(held),
                                           ComputeQuotaTarget={"TeamName": team})
    e.settle()
    return name, arn, SageMakerReader(emu.sagemaker).quotas(arn)


def requests(arn: str, before: tuple[ComputeQuota, ...], case: dict[str, Any]) -> list[QuotaRequest]:
    by_team = {q.team: q for q in before}
    out = []
    for team in case["order"]:
        if team not in case["target"]:
            continue
        q = by_team.get(team)
        if q is None:
            out.append(QuotaRequest(operation="CreateComputeQuota", team=team, parameters={
                "Name": f"{team}-quota", "ClusterArn": arn, "ComputeQuotaConfig": config(case["target"][team]),
                "ComputeQuotaTarget": {"TeamName": team}}))
        else:
            out.append(QuotaRequest(operation="UpdateComputeQuota", team=team, parameters={
                "ComputeQuotaId": q.ComputeQuotaId, "TargetVersion": q.ComputeQuotaVersion,
                "ComputeQuotaConfig": config(case["target"][team])}))
    return out


def fail_nodes(emu: EmulatorHandle, name: str, case: dict[str, Any]) -> None:
    for group, t in (("p5", P5), ("g5", G5)):
        for i in range(case["failed"][t]):
            emu.emulator.fail_node(name, f"{group}-{i}")


@given(cases())
@properties(60)
def test_no_write_raises_a_pool_above_the_healthy_capacity_read_at_that_moment(emu: EmulatorHandle,
                                                                               case: dict[str, Any]) -> None:
    name, arn, before = setup(emu, case)
    start = emu.emulator.monitor.last_seq
    writer = QuotaWriter(emu.sagemaker, Poller(sleep=lambda _s: None, timeout=0.0))
    if case["path"] == "apply":  # planned on the cluster read before the nodes failed; its rollback included
        fail_nodes(emu, name, case)
        writer.apply(arn, requests(arn, before, case), before)
    elif case["path"] == "midway":  # the nodes fail during the `fail_at`-th wait for writes to settle
        waits = itertools.count()

        def wait(_seconds: float) -> None:
            if next(waits) == case["fail_at"]:
                fail_nodes(emu, name, case)

        emu.emulator.set_transition_reads(1)  # every write is seen Updating once: the writer waits after each
        try:
            QuotaWriter(emu.sagemaker, Poller(sleep=wait, clock=lambda: 0.0)).apply(arn, requests(arn, before, case),
                                                                                    before)
        finally:
            emu.emulator.set_transition_reads(0)
    elif case["path"] == "undo":  # written on full capacity, undone after nodes failed (rollback --run, Rollback)
        done = writer.apply(arn, requests(arn, before, case), before, rollback_on_failure=False)
        fail_nodes(emu, name, case)
        written = {o.quota_id: o.version for o in done.outcomes if o.quota_id and o.version is not None}
        created = [o.quota_id for o in done.outcomes if o.operation == "CreateComputeQuota" and o.quota_id]
        writer.rollback(arn, [q for q in before if q.ComputeQuotaId in written], created_ids=created,
                        expected_versions=written)
    else:  # a saved snapshot restored over whatever the quotas are now (rollback --to)
        writer.apply(arn, requests(arn, before, case), before, rollback_on_failure=False)
        fail_nodes(emu, name, case)
        current = {q.ComputeQuotaId: q for q in SageMakerReader(emu.sagemaker).quotas(arn)}
        run = RunRef(cluster_name=name, execution_name=f"{name}-restore", execution_arn="", source="cli")
        runs.restore_quotas(run, arn, [q for q in before if q.ComputeQuotaId in current], current,
                            store=MemoryStore(), writer=writer)
    raised = [r for r in emu.emulator.monitor.raised_above_capacity(since=start) if r.cluster_arn == arn]
    assert raised == []
