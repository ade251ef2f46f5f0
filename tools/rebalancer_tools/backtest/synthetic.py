"""Generated histories with known answers, for the tests, the benchmark and examples: a cluster of one accelerator
type, teams whose demand follows a stated pattern, sampled every few minutes."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rebalancer.domain.sample import DemandSample, Nodes, PoolUse
from rebalancer_tools.backtest.history import History, export_lines, open_text_out

P5 = "ml.p5.48xlarge"
START = datetime(2026, 11, 1, tzinfo=UTC)
ARN = "arn:aws:sagemaker:us-east-1:123456789012:cluster/backtest"

# team → time → (in use, pending) accelerators
Pattern = Callable[[str, datetime], tuple[float, float]]


def history(pattern: Pattern, quotas: Mapping[str, int], *, nodes: int, days: float = 1, step_minutes: int = 5,
            start: datetime = START, cluster: str = "backtest", skip: Callable[[datetime], bool] | None = None,
            instance_type: str = P5) -> History:
    """Samples every `step_minutes` for `days`; `quotas` are the teams' quotas at the start (constant in the
    samples, as a history recorded without the rebalancer). `skip(t)`: no sample at t (a gap)."""
    samples = []
    n = int(days * 24 * 60 / step_minutes)
    for i in range(n):
        at = start + timedelta(minutes=i * step_minutes)
        if skip is not None and skip(at):
            continue
        teams = {}
        for team in sorted(quotas):
            in_use, pending = pattern(team, at)
            teams[team] = {instance_type: PoolUse(in_use=in_use, pending=pending, quota=quotas[team])}
        samples.append(DemandSample(cluster=cluster, cluster_arn=ARN, at=at,
                                    nodes={instance_type: Nodes(healthy=nodes)}, teams=teams))
    return History(cluster=cluster, runs=(), samples=tuple(samples))


def random_walk(teams: int, *, seed: int = 7, change: float = 0.1, peak: int = 24) -> Pattern:
    """Each team's demand holds for a while and moves at random (probability `change` per sample): a busy
    cluster where some team's demand moves at nearly every sample. Deterministic for a seed."""
    rnd = random.Random(seed)
    level = {f"team-{i:02d}": float(rnd.randint(0, peak)) for i in range(teams)}
    seen: dict[datetime, dict[str, tuple[float, float]]] = {}

    def pattern(team: str, at: datetime) -> tuple[float, float]:
        if at not in seen:
            for t in sorted(level):
                if rnd.random() < change:
                    level[t] = float(max(0, min(2 * peak, level[t] + rnd.choice((-8, -4, 4, 8)))))
            seen.clear()
            seen[at] = {t: (min(v, peak), max(0.0, v - peak)) for t, v in level.items()}
        return seen[at][team]

    return pattern


def team_names(teams: int) -> list[str]:
    return [f"team-{i:02d}" for i in range(teams)]


def write(h: History, path: Path) -> Path:
    """The history as `rebalancer history export` writes it."""
    end = h.samples[-1].at if h.samples else START
    with open_text_out(path) as f:
        for line in export_lines(h.cluster, h.runs, h.samples, since=None, exported_at=end):
            f.write(line + "\n")
    return path
