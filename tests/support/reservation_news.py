"""What the runs' news says of reservations, kept per run as a test reads it back."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from rebalancer.app import reservations
from rebalancer_tools.fakes.memory_store import MemoryStore


@dataclass(slots=True)
class Told:
    """The messages the runs' news makes: one per kind of line."""

    sent: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)

    def news(self, store: MemoryStore, at: datetime) -> list[str]:
        """The run at `at`: the windows that began, then those that ended."""
        started, ended = reservations.news(store.reservations, store.audit, "test", at)
        self.sent += [(kind, tuple(lines)) for kind, lines in (("reservation_started", started),
                                                               ("reservation_ended", ended)) if lines]
        return started + ended
