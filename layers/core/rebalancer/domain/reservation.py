"""A reservation: a time-bounded guarantee of accelerators of one instance type for one team ("a hero job for the
launch, until Friday"). Stored in the table (rebalancer.adapters.dynamodb.reservations), made and decided by
rebalancer.app.reservations, honoured by the planner inside [start, until) only and only once approved
(rebalancer.engine.reservations). Pure data."""

from datetime import UTC, datetime
from typing import Literal

from pydantic import AwareDatetime, Field

from rebalancer.domain.frozen import Frozen

ReservationStatus = Literal["pending", "approved", "cancelled"]


class Reservation(Frozen):
    """`status`: pending (its size needs an admin's approval), approved (honoured inside its window), cancelled.
    `started_at` / `ended_at`: set once by the plan run that first saw it active / past its end (what announces
    it, once each)."""

    reservation_id: str
    cluster: str
    team: str
    pool: str  # an accelerator instance type
    accelerators: int = Field(gt=0)
    start: AwareDatetime
    until: AwareDatetime
    reason: str
    status: ReservationStatus
    requested_by: str
    requested_at: AwareDatetime
    decided_by: str | None = None
    started_at: AwareDatetime | None = None
    ended_at: AwareDatetime | None = None

    def active_at(self, at: datetime) -> bool:
        """Honoured at `at`: approved and within [start, until)."""
        return self.status == "approved" and self.start <= at < self.until

    def overlaps(self, start: datetime, until: datetime) -> bool:
        return self.status != "cancelled" and self.start < until and start < self.until

    @property
    def label(self) -> str:
        """How reasons and messages name it: `reservation r-1a2b for launch until Fri 04 Dec 18:00 UTC`."""
        until = self.until.astimezone(UTC)
        return f"reservation {self.reservation_id} for {self.reason} until {until:%a %d %b %H:%M} UTC"
