"""An autoscaled pool, as HyperPod's Karpenter-based autoscaling runs one: between `min_nodes` and `max_nodes` nodes
of the pool's type. Nodes are requested when Kueue has admitted work whose pods cannot be placed (Karpenter acts
on unschedulable pods, never on pending Workloads, which have no pods), and come `scale_up_delay_s` later; a node
idle for `idle_scale_down_s` is removed (Karpenter's consolidation after `consolidateAfter`), never below
`min_nodes`. Cost is counted in node-hours.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Autoscaling:
    min_nodes: int
    max_nodes: int
    scale_up_delay_s: float = 600.0  # a p5 node's launch, HyperPod's health checks and join: about ten minutes
    idle_scale_down_s: float = 1800.0
    check_s: float = 300.0  # how often idle nodes are looked for

    def __post_init__(self) -> None:
        if not 0 <= self.min_nodes <= self.max_nodes:
            raise ValueError(f"autoscaling needs 0 <= min_nodes <= max_nodes, got {self.min_nodes} and "
                             f"{self.max_nodes}")
        if self.scale_up_delay_s < 0 or self.idle_scale_down_s < 0 or self.check_s <= 0:
            raise ValueError("autoscaling delays must be >= 0 and check_s > 0")


def node_seconds(steps: Sequence[tuple[float, int]], end_s: float) -> float:
    """∫ nodes dt over [0, end_s] for a step function given as (time, nodes from then on), times ascending."""
    total = 0.0
    for (t, n), (t_next, _) in zip(steps, [*steps[1:], (end_s, 0)], strict=True):
        lo, hi = min(t, end_s), min(t_next, end_s)
        total += n * max(0.0, hi - lo)
    return total
