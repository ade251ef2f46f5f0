"""Fingerprints of the planner's output on generated clusters, to check that a change meant only for speed changes
nothing: run it on both trees and compare the files.

    PYTHONPATH=<tree>/layers/core:<tree>/tools:<tree>/tests python benchmarks/plan_outputs.py OUT.json
    diff main.json mine.json

Each case is the benchmark's contended cluster (plan_bench.synthetic) at 3 to 300 teams with one policy or snapshot
variation (spread, max_move, min_step, cooldowns, protection, outsiders, disabled or missing quotas, removals,
families, percents, managed settings, explicit vCPU / memory, CPU and MIG pools, zero weights, modes, guarantees
above capacity), plus the 1,000-team benchmark and its settled re-plan. A fingerprint covers the plan's JSON,
`Plan.output()`, the plan with known versions, and the engine's inputs and outputs as JSON (`engine_json`):
`build_pools`' pools and warnings, and `allocate`'s result.

The engine's JSON is written field by field here, not from the records' types, so that it reads the same whatever
the records are made of (NamedTuple, dataclass, columns or rows):

- a pool (`PoolInput`): {"key", "resource", "capacity", "claims": [one object per claim: "team", "weight",
  "guarantee", "cap", "demand", "current", "in_use", "protected", "cooldown", "notes"], "notes", "families":
  [{"team", "key", "amount"}], "gangs": [per claim, its pending workloads' sizes]};
- a pool's result (`PoolResult`): every field of the record under its name, per-claim fields as lists in claim
  order;
- a hold (`Hold`): {"rule", "text", "until"} with "until" in ISO 8601 or null; tuples are lists;
- a float as Python's shortest round-trip repr (to the last bit: 0.1 + 0.2 is 0.30000000000000004), an infinite
  one as the string "inf" or "-inf" (JSON has no infinity); an int stays an int (1 and 1.0 differ); keys sorted.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import plan_bench as bench

from rebalancer.domain.plan import Hold
from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import Snapshot
from rebalancer.engine.allocation import Allocation, PoolInput, PoolResult, Settings, allocate
from rebalancer.planning.context import planning_context
from rebalancer.planning.planner import make_plan
from rebalancer.planning.pools import build_pools

CPU = "ml.c5.12xlarge"
MIG_TYPE = "ml.p4d.24xlarge"
CASES: list[dict[str, Any]] = [
    {}, {"spread": True}, {"max_move": 64}, {"max_move": 7, "spread": True}, {"min_step": 3}, {"cooldown": True},
    {"protected": True, "cooldown": True}, {"outsiders": True}, {"disabled": True}, {"missing": True},
    {"remove": True}, {"family": True}, {"percent": True}, {"settings": True}, {"vcpu": True, "cpu": True},
    {"cpu": True}, {"mig": True, "cpu": True}, {"weight0": True}, {"mode": "approve"}, {"mode": "dry-run"},
    {"overguarantee": True},
    {"protected": True, "cooldown": True, "max_move": 20, "spread": True, "missing": True, "disabled": True,
     "settings": True},
]


def _cpu_pool(sd: dict[str, Any], names: list[str], rnd: random.Random) -> None:
    sd["cluster"]["InstanceGroups"].append({"InstanceGroupName": "cpu", "InstanceType": CPU, "CurrentCount": 5})
    sd["nodes"] += [{"InstanceGroupName": "cpu", "InstanceId": f"i-cpu{k}", "InstanceType": CPU,
                     "InstanceStatus": {"Status": "Running"}} for k in range(5)]
    for j, q in enumerate(sd["quotas"]):
        resources = q["ComputeQuotaConfig"]["ComputeQuotaResources"]
        if j % 2:
            resources.append({"InstanceType": CPU, "VCpu": 4.0, "MemoryInGiB": 8.0})
        elif j % 3 == 0:
            resources.append({"InstanceType": CPU, "Count": 1})
    for n in names[::2]:
        sd["demand"].setdefault(n, {})[CPU] = {"pending": {"vcpu": rnd.randint(0, 30)},
                                               "in_use": {"vcpu": rnd.randint(0, 4)}}


def variant(teams: int, seed: int, **kw: Any) -> tuple[Snapshot, Policy]:  # one branch per variation
    types = bench.instance_types()
    if kw.get("cpu"):
        types = [*types[:13], MIG_TYPE]
    snap, pol = bench.synthetic(teams, types, seed=seed)
    sd = snap.model_dump(mode="json", exclude_none=True)
    pd = pol.model_dump(mode="json", exclude_none=True)
    rnd = random.Random(seed)
    names = sorted(pd["teams"])
    tps = pd["teams"]
    if kw.get("cpu"):
        _cpu_pool(sd, names, rnd)
    if kw.get("spread"):
        pd["surplus"] = "spread"
    if kw.get("max_move"):
        pd["stability"]["max_move"] = kw["max_move"]
    if kw.get("min_step"):
        pd["stability"]["min_step"] = kw["min_step"]
    if kw.get("cooldown"):
        for q in sd["quotas"][::3]:
            q["LastModifiedTime"] = (bench.NOW - timedelta(minutes=rnd.randint(0, 40))).isoformat()
    if kw.get("protected"):
        for n in names[::4]:
            tps[n]["protected_in_use"] = True
    if kw.get("outsiders"):
        for n in names[-max(1, teams // 10):]:
            del tps[n]
    if kw.get("disabled"):
        for q in sd["quotas"][1::5]:
            q["ActivationState"] = "Disabled"
    if kw.get("missing"):
        del sd["quotas"][2::7]
    if kw.get("remove"):
        for n in names[3::9]:
            tps[n]["remove"] = True
    if kw.get("family"):
        for n in names[::5]:
            tps[n]["guarantee"] = {"ml.g5": rnd.randint(0, 30)}
            tps[n]["cap"] = {"ml.g4dn": "20%"}
    if kw.get("percent"):
        for n in names[1::6]:
            tps[n]["cap"] = {types[0]: f"{rnd.randint(1, 30)}%"}
            tps[n].pop("guarantee", None)
    if kw.get("settings"):
        for n in names[::3]:
            tps[n].update(sharing={"strategy": "Lend"}, fair_share_weight=rnd.randint(0, 100),
                          preempt_team_tasks="Never")
    if kw.get("vcpu"):
        for n in names[::4]:
            tps[n].update(vcpu={types[0]: 8}, memory_gib={types[1]: "1%"})
    if kw.get("mig"):
        sd["mig"] = {MIG_TYPE: {"mig-1g.5gb": 14, "mig-3g.20gb": 4}}
        for n in names[::3]:
            sd["demand"].setdefault(n, {})[f"{MIG_TYPE}:mig-1g.5gb"] = {"pending": {"partitions": rnd.randint(0, 5)}}
    if kw.get("weight0"):
        for n in names[::11]:
            tps[n]["weight"] = 0
    if kw.get("mode"):
        pd["mode"] = kw["mode"]
    if kw.get("overguarantee"):
        for n in names[::2]:
            tps[n]["guarantee"] = {types[2]: 40}
            tps[n].pop("cap", None)
    return Snapshot.model_validate(sd), Policy.model_validate(pd)


CLAIM_FIELDS = ("team", "weight", "guarantee", "cap", "demand", "current", "in_use", "protected", "cooldown", "notes")
RESULT_FIELDS = ("key", "resource", "capacity", "teams", "before", "after", "fair", "desired", "reasons", "warnings",
                 "holds", "wants", "share", "demand", "running", "weight", "guarantee", "cap", "claim_notes", "notes",
                 "factor", "spread")


def _value(v: object) -> object:
    """A value of the engine's records as JSON (see the module's docstring)."""
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)
    if isinstance(v, Hold):
        return {"rule": v.rule, "text": v.text, "until": _value(v.until)}
    if isinstance(v, datetime):
        return v.isoformat()
    if isinstance(v, tuple | list):
        return [_value(x) for x in v]
    return v


def pool_json(pool: PoolInput) -> dict[str, object]:
    """A pool as JSON (see the module's docstring)."""
    return {"key": pool.key, "resource": pool.resource, "capacity": _value(pool.capacity),
            "claims": [{name: _value(getattr(c, name)) for name in CLAIM_FIELDS} for c in pool.claims],
            "notes": _value(pool.notes), "families": [{"team": b.team, "key": b.key, "amount": _value(b.amount)}
                                                      for b in pool.families],
            "gangs": _value(pool.gangs)}


def result_json(result: PoolResult) -> dict[str, object]:
    """A pool's result as JSON: every field under its name."""
    return {name: _value(getattr(result, name)) for name in RESULT_FIELDS}


def engine_json(pools: Sequence[PoolInput], warnings: Sequence[str], result: Allocation) -> list[str]:
    """build_pools' pools and warnings, and allocate's result, as JSON texts."""
    return [json.dumps([pool_json(p) for p in pools], sort_keys=True, allow_nan=False),
            json.dumps(list(warnings), allow_nan=False),
            json.dumps({"pools": [result_json(r) for r in result.pools], "warnings": list(result.warnings)},
                       sort_keys=True, allow_nan=False)]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def fingerprint(snap: Snapshot, pol: Policy) -> list[object]:
    plan = make_plan(snap, pol, bench.NOW)
    known = make_plan(snap, pol, bench.NOW, context=planning_context(
        snap, pol, known_versions=dict.fromkeys(sorted(pol.teams)[::2], 5)))
    pools, warnings = build_pools(snap, pol, bench.NOW)
    result = allocate(pools, Settings(surplus=pol.surplus, min_step=pol.stability.min_step,
                                      max_move=pol.stability.max_move))
    texts = [plan.model_dump_json(), json.dumps(plan.output(), sort_keys=True), known.model_dump_json(),
             *engine_json(pools, warnings, result)]
    return [*map(_digest, texts), len(plan.changes), len(plan.requests), len(plan.field_changes)]


def main(out: str, *, smoke: bool = False) -> None:
    found: dict[str, object] = {}
    for teams in (3,) if smoke else (3, 10, 57, 300):
        for i, kw in enumerate(CASES):
            try:
                found[f"{teams}-{i}-{sorted(kw)}"] = fingerprint(*variant(teams, 100 + i, **kw))
            except Exception as e:  # an error is an output too: both trees must raise the same
                found[f"{teams}-{i}-{sorted(kw)}"] = f"error {type(e).__name__}: {e}"
    snap, pol = bench.synthetic(10 if smoke else 1000, bench.instance_types())
    plan = make_plan(snap, pol, bench.NOW)
    found["bench-1000"] = _digest(plan.model_dump_json())
    found["bench-1000-settled"] = _digest(make_plan(bench.settled(snap, plan.allocations), pol,
                                                    bench.NOW).model_dump_json())
    Path(out).write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    print(f"{len(found)} fingerprints in {out}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--smoke"]:  # once, small (the test suite runs it so): the fingerprints to a scratch file
        import tempfile

        with tempfile.TemporaryDirectory() as scratch:
            main(f"{scratch}/fingerprints.json", smoke=True)
    else:
        main(sys.argv[1])
