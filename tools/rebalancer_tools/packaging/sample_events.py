"""The sample events in the checkout's events/ folder (AWS's documented shapes; also usable with
`sam local invoke -e`), loaded by name: the tests, the end-to-end flows and the demo all read them here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rebalancer_tools.packaging.template import find_root

EVENTS: Path = find_root() / "events"


def load_event(name: str) -> dict[str, Any]:
    """A fresh copy of events/<name>.json (callers may change it)."""
    data: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text())
    return data


def names() -> list[str]:
    return sorted(p.stem for p in EVENTS.glob("*.json"))
