"""Explicit node failures and repairs: CSV `time_s,node,event` with event `fail` or `repair`, nodes 0..N-1."""

from __future__ import annotations

import csv
from pathlib import Path

from rebalancer.errors import InvalidInput
from rebalancer.simulator.engine import NodeEvent


def load_node_events(path: str | Path, nodes: int) -> tuple[NodeEvent, ...]:
    p = Path(path)
    try:
        lines = p.read_text().splitlines()
    except OSError as e:
        raise InvalidInput(f"cannot read node events: {e.strerror}", source=str(p)) from None
    reader = csv.reader(lines)
    header = [h.strip() for h in next(reader, [])]
    if header[:3] != ["time_s", "node", "event"]:
        raise InvalidInput(f"expected the header time_s,node,event, got {','.join(header)!r}", source=f"{p}:1",
                           field="header", value=header)
    events: list[NodeEvent] = []
    for row in reader:
        where = f"{p}:{reader.line_num}"
        if not row or not "".join(row).strip():
            continue
        if len(row) < 3:
            raise InvalidInput(f"expected 3 columns, got {len(row)}", source=where, value=row)
        raw_time, raw_node, kind = (c.strip() for c in row[:3])
        try:
            time_s = float(raw_time)
        except ValueError:
            time_s = -1.0
        if not time_s >= 0:
            raise InvalidInput(f"must be a number of seconds >= 0, got {raw_time!r}", source=where, field="time_s",
                               value=raw_time)
        if not raw_node.isdigit() or int(raw_node) >= nodes:
            raise InvalidInput(f"must be a node number from 0 to {nodes - 1}, got {raw_node!r}", source=where,
                               field="node", value=raw_node)
        if kind not in ("fail", "repair"):
            raise InvalidInput(f"must be 'fail' or 'repair', got {kind!r}", source=where, field="event", value=kind)
        events.append(NodeEvent(time_s, int(raw_node), kind))
    return tuple(events)
