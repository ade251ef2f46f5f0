"""What a run has to announce besides its plan: the budget thresholds a team passed and the periods that ended
(rebalancer.app.budgets.news), and the reservation windows that began or ended (rebalancer.app.reservations.news).

The Plan step works it out, as it reads the policy, the period-to-date use and the reservations anyway, and claims
each line for its run in the table's announcement records, so no other run says it again; it stores the lines as
the run's NEWS and counts them in its result. The state machine then goes to its Announce state, whatever the plan
decides (a window that opens must be told even when nothing changes), and the Notify step sends each kind of line
as one message, each channel once per run (the delivery records), so a retry resends only what failed."""

from typing import Literal

from pydantic import BaseModel, ConfigDict

from rebalancer.app.workflow.state import Artifacts, RunRef
from rebalancer.parsing.validation import stored_model

NewsKind = Literal["budget", "budget_summary", "reservation_started", "reservation_ended"]
NEWS = "NEWS"  # the run's document


class News(BaseModel):
    """The lines of each kind, in the order they are sent."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    budget: tuple[str, ...] = ()
    budget_summary: tuple[str, ...] = ()
    reservation_started: tuple[str, ...] = ()
    reservation_ended: tuple[str, ...] = ()

    def messages(self) -> list[tuple[NewsKind, tuple[str, ...]]]:
        """(kind, lines) for each kind that has lines."""
        kinds: tuple[NewsKind, ...] = ("budget", "budget_summary", "reservation_started", "reservation_ended")
        return [(kind, getattr(self, kind)) for kind in kinds if getattr(self, kind)]

    def count(self) -> int:
        return sum(len(lines) for _, lines in self.messages())


def record_news(artifacts: Artifacts, run: RunRef, news: News) -> None:
    artifacts.put(run.execution_name, NEWS, news.model_dump(mode="json"))


def load_news(artifacts: Artifacts, run: RunRef) -> News:
    """The run's news; none when its Plan step stored none."""
    doc = artifacts.get(run.execution_name, NEWS)
    return News() if doc is None else stored_model(News, doc, f"the news of run {run.execution_name}",
                                                   "its lines are not sent; the next run's are")
