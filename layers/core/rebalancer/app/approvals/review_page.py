"""The approval review page and the pages around it, as server-rendered HTML from the Jinja2 templates next to this
module (templates/*.html.j2, autoescaped: every value is escaped by the engine, none by hand). No script, a small
inline stylesheet, readable on a phone. Pure: takes a view model, returns the page text.

Jinja2 is imported, and the templates compiled, on the first page rendered: RequestApproval never pays for it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rebalancer.app.notifications.messages import field_line
from rebalancer.domain.plan import FieldChange, Plan, Preemption, movement, preemption_summary, ran_text

if TYPE_CHECKING:
    import jinja2

COMMENT_MAX = 500
NAME_MAX = 80
TEMPLATES = Path(__file__).with_name("templates")

# What the pages allow the browser: their own inline style and a form posting back to this API, nothing else.
# no-referrer: the page's URL carries the link's signature, which must not leak to the console link's host.
SECURITY_HEADERS = {
    "content-type": "text/html; charset=utf-8",
    "content-security-policy": ("default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
                                "frame-ancestors 'none'; base-uri 'none'"),
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
}


@dataclass(frozen=True, slots=True)
class Row:
    team: str
    pool: str  # instance type, or instance type:MIG profile
    resource: str
    before: float
    after: float
    reason: str
    wanted: float | None = None  # what the policy wants when a hold keeps it back (the reason says which)

    @property
    def delta(self) -> float:
        return self.after - self.before


@dataclass(frozen=True, slots=True)
class Review:
    """Everything the review page shows."""

    approval_id: str
    cluster: str
    status: str  # pending | approved | rejected | expired | superseded
    decide_by: datetime
    now: datetime
    rows: Sequence[Row]
    trigger: str
    started_at: str | None = None
    approval_reasons: Sequence[str] = ()
    warnings: Sequence[str] = ()
    settings: Sequence[FieldChange] = ()  # settings besides amounts the plan rewrites (console edits among them)
    decided_by: str | None = None
    execution_url: str | None = None
    form: Mapping[str, str] = field(default_factory=dict)  # hidden fields: the signed token and the nonce
    action: str = ""  # where the form posts (relative to the page)
    signed_in_as: str | None = None  # the verified approver (JWT authorizer); None: the form asks for a name
    # What the plan's writes would make Kueue preempt: the plan's list (the largest first, bounded), how many it
    # leaves unlisted, and the GPU-hours at risk over all of them.
    preemptions: Sequence[Preemption] = ()
    preemptions_unlisted: int = 0
    preempted_gpu_hours: float = 0.0

    @property
    def preempting(self) -> str:
        return preemption_summary(self.preemptions, self.preemptions_unlisted, self.preempted_gpu_hours)

    @property
    def moved(self) -> str:
        return movement(self.rows)

    @property
    def remaining(self) -> str:
        seconds = int((self.decide_by - self.now).total_seconds())
        if seconds <= 0:
            return "expired"
        hours, rest = divmod(seconds, 3600)
        minutes = rest // 60
        return f"in {hours} h {minutes} min" if hours else f"in {max(minutes, 1)} min"


def rows_of(plan: Plan) -> list[Row]:
    """Every team's quota per pool, by team: what the plan changes (with its reasons), what a hold keeps back
    (with what the policy wants), and what it leaves alone."""
    changed = [Row(c.team, c.pool, c.resource, c.before, c.after, c.reason, c.wanted)
               for c in (*plan.changes, *plan.held)]
    seen = {(r.team, r.pool, r.resource) for r in changed}
    same = [Row(team, pool, resource, amount, amount, "unchanged")
            for team, pools in sorted(plan.allocations.items()) for pool, amounts in sorted(pools.items())
            for resource, amount in sorted(amounts.items()) if (team, pool, resource) not in seen]
    return sorted(changed + same, key=lambda r: (r.team, r.pool, r.resource))


def trigger_text(trigger: Mapping[str, Any]) -> str:
    summary = str(trigger.get("summary") or "").strip()
    kind = str(trigger.get("kind") or "").strip()
    if summary and kind:
        return f"{summary} ({kind})"
    return summary or kind or "not recorded"


def _n(x: float) -> str:
    return f"{x:g}"


def _signed(x: float) -> str:
    return f"{'+' if x > 0 else ''}{_n(x)}" if x else "="


def _trend(x: float) -> str:
    return "up" if x > 0 else "down" if x < 0 else "same"


def _when(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M UTC") if t.utcoffset() is not None and not t.utcoffset() else t.isoformat()


@cache
def _templates() -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             auto_reload=False)
    env.filters.update(n=_n, signed=_signed, trend=_trend, when=_when, field_line=field_line, ran=ran_text)
    return env


def render(template: str, **values: Any) -> str:
    return _templates().get_template(template).render(**values)


def review_page(r: Review) -> str:
    return render("review.html.j2", r=r, name_max=NAME_MAX, comment_max=COMMENT_MAX)


def message_page(title: str, text: str, *, execution_url: str | None = None, ok: bool = False) -> str:
    return render("message.html.j2", title=title, text=text, execution_url=execution_url, ok=ok)
