"""Explicit node failures and repairs: CSV `time_s,node,event` with event `fail` or `repair`, nodes 0..N-1. A `fail`
followed by a `repair` of that node is a node HyperPod repairs (the controller sees it labelled
UnschedulablePendingReplacement until then); a `fail` with no `repair` after it, a node failed for good."""

from __future__ import annotations

from pathlib import Path

from rebalancer.errors import InvalidInput
from rebalancer.parsing.text import short
from rebalancer_tools.simulator.csv_rows import csv_rows
from rebalancer_tools.simulator.engine import NodeEvent
from rebalancer_tools.simulator.trace import HORIZON_S


def load_node_events(path: str | Path, nodes: int) -> tuple[NodeEvent, ...]:
    events: list[NodeEvent] = []
    for where, (raw_time, raw_node, kind) in csv_rows(path, "node events", ("time_s", "node", "event")):
        try:
            time_s = float(raw_time)
        except ValueError:
            time_s = -1.0
        if not 0 <= time_s <= HORIZON_S:
            raise InvalidInput(f"must be a number of seconds from 0 to {HORIZON_S:.0f} (the longest trace and its "
                               f"last job), got {short(raw_time)}", source=where, field="time_s", value=raw_time)
        if not (raw_node.isascii() and raw_node.isdigit()) or int(raw_node) >= nodes:
            raise InvalidInput(f"must be a node number from 0 to {nodes - 1}, got {short(raw_node)}", source=where,
                               field="node", value=raw_node)
        if kind not in ("fail", "repair"):
            raise InvalidInput(f"must be 'fail' or 'repair', got {short(kind)}", source=where, field="event",
                               value=kind)
        events.append(NodeEvent(time_s, int(raw_node), kind))
    return tuple(events)
