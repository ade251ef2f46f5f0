"""What a Kueue Workload says of how long it runs, for the estimated starts: the run time it declares (the
`kueue.x-k8s.io/estimated-duration` annotation, a Go duration such as `4h` or `1h30m`: this project's convention,
which Kueue itself neither defines nor reads, see docs/cli/why.md) and the longest Kueue lets it run
(`spec.maximumExecutionTimeSeconds`, Kueue's KEP-3125). Either is optional;
one that is not what Kueue allows (a duration Go's time.ParseDuration refuses: rebalancer.parsing.go_duration) is left
out with a problem naming the field and the value, and the workload is still read (its quota is real whatever it says
of its run time). A declaration is taken at most at the workload's own limit (Kueue stops it there) and at the
forecast's horizon (HORIZON_S: no estimate looks further), so a run time of centuries reaches neither the forecast,
the declared/ran ratios nor `why`."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from rebalancer.domain.snapshot import ESTIMATED_DURATION
from rebalancer.forecast.estimate import HORIZON_S
from rebalancer.parsing.go_duration import TEXT_MAX, go_duration
from rebalancer.parsing.text import short

INT32_MAX = 2**31 - 1  # maximumExecutionTimeSeconds is an int32


@dataclass(frozen=True, slots=True)
class RunTime:
    """Seconds, or None where the workload says nothing (or nothing readable); `problems`: what was left out, why."""

    declared: float | None = None
    limit: float | None = None
    problems: tuple[str, ...] = ()


def run_time(meta: dict[str, Any], spec: dict[str, Any]) -> RunTime:
    """What the Workload with this metadata and spec declares of its run time."""
    problems = []
    declared = None
    annotations = meta.get("annotations")
    raw = annotations.get(ESTIMATED_DURATION) if isinstance(annotations, dict) else None
    if raw is not None:
        with contextlib.suppress(ValueError):
            declared = go_duration(raw) if isinstance(raw, str) else None
        if declared is None:
            problems.append(f"metadata.annotations[{ESTIMATED_DURATION}] {short(raw, TEXT_MAX)} is not a duration "
                            "(a Go duration such as 4h or 1h30m): left out, its run time is drawn from its team's runs")
    limit = None
    raw = spec.get("maximumExecutionTimeSeconds")
    if raw is not None:
        if isinstance(raw, int) and not isinstance(raw, bool) and 0 < raw <= INT32_MAX:
            limit = float(raw)
        else:
            problems.append(f"spec.maximumExecutionTimeSeconds {short(raw, TEXT_MAX)} is not a whole number of "
                            f"seconds from 1 to {INT32_MAX}: left out")
    if declared is not None:
        declared = min(declared, HORIZON_S if limit is None else min(limit, HORIZON_S))
    return RunTime(declared, limit, tuple(problems))
