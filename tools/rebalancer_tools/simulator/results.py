"""What a simulation run records (integrals, per-job outcomes, the timeline): written by the engine, read by the
metrics and the report."""

from __future__ import annotations

from dataclasses import dataclass, field, fields


@dataclass(slots=True)
class Timeline:
    times_s: list[float] = field(default_factory=list)
    busy: list[int] = field(default_factory=list)
    capacity: list[int] = field(default_factory=list)
    quota: dict[str, list[int]] = field(default_factory=dict)
    usage: dict[str, list[int]] = field(default_factory=dict)
    demand: dict[str, list[int]] = field(default_factory=dict)
    pool_busy: dict[str, list[int]] = field(default_factory=dict)  # pool → accelerators busy, per sample
    pool_capacity: dict[str, list[int]] = field(default_factory=dict)
    pools_of: dict[str, list[str]] = field(default_factory=dict)  # team → the pools its jobs ran in


@dataclass(slots=True)
class PoolRaw:
    """One pool's integrals, per team (the same team order as RawResult's)."""

    name: str
    busy_gpu_s_window: float
    capacity_gpu_s_window: float
    received_gpu_s: list[float]
    entitled_gpu_s: list[float]
    deficit_gpu_s: list[float]
    preemptions: list[int]
    lost_gpu_s: list[float]
    failure_kills: list[int]
    failure_lost_gpu_s: list[float]
    quota_changes: list[int]


# The integrals a pool has of its own and a run has in total (summed over the pools).
POOL_FIELDS = tuple(f.name for f in fields(PoolRaw) if f.name != "name")


@dataclass(slots=True)
class RawResult:
    """Integrals (summed over the pools) and per-job outcomes; `metrics.summarize` turns them into the reported
    figures. `pools` holds each pool's own integrals, `job_pool` each job's pool."""

    teams: list[str]
    end_s: float
    window_s: float
    busy_gpu_s_window: float
    capacity_gpu_s_window: float
    received_gpu_s: list[float]
    entitled_gpu_s: list[float]
    deficit_gpu_s: list[float]
    preemptions: list[int]
    lost_gpu_s: list[float]
    failure_kills: list[int]
    failure_lost_gpu_s: list[float]
    quota_changes: list[int]
    job_team: list[int]
    job_wait_s: list[float]
    job_done: list[bool]
    timeline: Timeline
    pools: list[PoolRaw] = field(default_factory=list)
    job_pool: list[int] = field(default_factory=list)
    # (received, entitled) accelerator-seconds per team, cumulative at the end of each whole week since the start
    week_marks: list[tuple[list[float], list[float]]] = field(default_factory=list)
    # With an estimator: per job its submission, its first start (-1: never), the start it was estimated to have
    # when first asked about (None: no estimate), whether it was asked about at all, and the likely range told with
    # the estimate (earliest, latest; latest None: later than the forecast reaches).
    job_submit_s: list[float] = field(default_factory=list)
    job_first_start_s: list[float] = field(default_factory=list)
    job_estimate_s: list[float | None] = field(default_factory=list)
    job_asked: list[bool] = field(default_factory=list)
    job_likely_s: list[tuple[float, float | None] | None] = field(default_factory=list)
