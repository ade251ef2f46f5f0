"""The sample events in events/ (real-shaped; also usable with `sam local invoke -e`), loaded by name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

EVENTS = Path(__file__).resolve().parents[2] / "events"


def load_event(name: str) -> dict[str, Any]:
    """A fresh copy of events/<name>.json (tests may change it)."""
    data: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text())
    return data


def names() -> list[str]:
    return sorted(p.stem for p in EVENTS.glob("*.json"))
