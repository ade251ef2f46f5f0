"""`rebalancer reserve` on the sandbox as a user runs it: the capacity read live from the emulated cluster (no
--snapshot), stored in the sandbox's table, listed, a plan of `rebalancer apply` honouring it, and refused in one
line when it would not fit beside it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from support.sandbox_cli import rebalancer

from rebalancer_tools.emulator.demo_cluster import DEMO, P5
from rebalancer_tools.local.sandbox import Sandbox

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
POLICY = str(ROOT / "examples" / "demo-policy.yaml")
CLUSTER = DEMO.cluster_name


def test_a_reservation_read_against_the_live_cluster_is_honoured_by_apply(sandbox: Sandbox) -> None:
    until = (datetime.now(UTC) + timedelta(days=2)).strftime("%Y-%m-%dT%H:%MZ")
    code, out = rebalancer("reserve", "--cluster", CLUSTER, "--team", "platform", "--pool", P5, "--accelerators",
                           "12", "--until", until, "--reason", "launch", "--policy", POLICY)
    assert code == 0, out
    assert "(launch): approved" in out
    assert "warning" not in out  # reserve reads capacity only: no word of Kueue, nor of an option it lacks
    code, out = rebalancer("reservations", "--cluster", CLUSTER, "--format", "json")
    assert code == 0, out
    [rec] = json.loads(out)
    assert (rec["team"], rec["accelerators"], rec["status"]) == ("platform", 12, "approved")
    # 32 H100s: inference's guarantee 4 and this 12 leave 16; 17 more do not fit beside them.
    code, out = rebalancer("reserve", "--cluster", CLUSTER, "--team", "research", "--pool", P5, "--accelerators",
                           "16", "--until", until, "--reason", "hero", "--policy", POLICY)
    assert code == 0, out
    assert "needs approval" not in out
    code, out = rebalancer("reserve", "--cluster", CLUSTER, "--team", "training", "--pool", P5, "--accelerators",
                           "1", "--until", until, "--reason", "more", "--policy", POLICY)
    assert code == 2
    assert "would hold 33 of its 32 accelerators" in out
    # The plan takes all of two teams' quotas (above approval.max_decrease_percent): --yes alone writes nothing.
    code, out = rebalancer("apply", "--cluster", CLUSTER, "--policy", POLICY, "--yes")
    assert code == 1, out
    assert "error: the plan needs approval (" in out
    code, out = rebalancer("apply", "--cluster", CLUSTER, "--policy", POLICY, "--yes", "--approve", "the launch")
    assert code == 0, out
    platform = next(line for line in out.splitlines() if "│ platform" in line)
    assert "0 → 12 acc" in platform
    assert rec["reservation_id"] in out  # the reason's fact "reservation r-… for launch until …", wrapped in its cell
