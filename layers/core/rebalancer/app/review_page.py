"""The approval review page and the pages around it, as plain server-rendered HTML: every value escaped, a small
inline stylesheet, readable on a phone, no script. Pure: takes a view model, returns the page text."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from html import escape
from typing import Any

from rebalancer.app.notifications import field_line
from rebalancer.plan import FieldChange, Plan

COMMENT_MAX = 500
NAME_MAX = 80

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

STYLE = """
:root{color-scheme:light dark;--line:#8884;--muted:#777;--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700}
*{box-sizing:border-box}
body{font:16px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:60rem;padding:1rem}
h1{font-size:1.35rem;margin:.2rem 0 .6rem}h2{font-size:1.05rem;margin:1.2rem 0 .4rem}
.meta{display:grid;grid-template-columns:max-content 1fr;gap:.2rem .8rem;margin:0}
.meta dt{color:var(--muted)}.meta dd{margin:0}
.status{padding:.6rem .8rem;border-radius:.4rem;border:1px solid var(--line);margin:.8rem 0}
.warn{border-left:4px solid var(--warn)}.done{border-left:4px solid var(--ok)}.stop{border-left:4px solid var(--bad)}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:.95rem}
th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid var(--line);vertical-align:top}
td.n{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
.up{color:var(--ok)}.down{color:var(--bad)}.same{color:var(--muted)}
form{margin-top:1.2rem}label{display:block;margin:.5rem 0 .2rem}
input[type=text],textarea{width:100%;font:inherit;padding:.4rem;border:1px solid var(--line);border-radius:.3rem}
.buttons{display:flex;gap:.8rem;flex-wrap:wrap;margin-top:.8rem}
button{font:inherit;font-weight:600;padding:.7rem 1.6rem;border-radius:.4rem;border:0;color:#fff;cursor:pointer}
button.approve{background:var(--ok)}button.reject{background:var(--bad)}
.muted{color:var(--muted);font-size:.9rem}
@media (max-width:40rem){body{padding:.6rem}button{flex:1}
 thead{display:none}
 #quotas tr{display:grid;grid-template-columns:1fr auto auto auto;column-gap:.7rem;padding:.45rem 0;
  border-bottom:1px solid var(--line)}
 #quotas td{border:0;padding:0}
 #quotas td:nth-child(1){grid-area:1/1;font-weight:600}#quotas td:nth-child(2){grid-area:2/1;color:var(--muted)}
 #quotas td:nth-child(3){grid-area:1/2}#quotas td:nth-child(4){grid-area:1/3}#quotas td:nth-child(5){grid-area:1/4}
 #quotas td:nth-child(4)::before{content:"→ ";color:var(--muted)}
 #quotas td.r{grid-area:3/1/4/5;font-size:.88rem}}
"""


@dataclass(frozen=True)
class Row:
    team: str
    pool: str  # instance type, or instance type:MIG profile
    resource: str
    before: float
    after: float
    reason: str

    @property
    def delta(self) -> float:
        return self.after - self.before


@dataclass(frozen=True)
class Review:
    """Everything the review page shows."""

    approval_id: str
    cluster: str
    status: str  # pending | approved | rejected | expired
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


def rows_of(plan: Plan) -> list[Row]:
    """Every team's quota per pool, by team: what the plan changes (with its reasons) and what it leaves alone."""
    changed = [Row(c.team, c.pool, c.resource,
                   c.before, c.after, c.reason) for c in plan.changes]
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


def _delta(x: float) -> str:
    cls = "up" if x > 0 else "down" if x < 0 else "same"
    return f"<td class='n {cls}'>{'+' if x > 0 else ''}{_n(x) if x else '='}</td>"


def _remaining(until: datetime, now: datetime) -> str:
    seconds = int((until - now).total_seconds())
    if seconds <= 0:
        return "expired"
    hours, rest = divmod(seconds, 3600)
    minutes = rest // 60
    return f"in {hours} h {minutes} min" if hours else f"in {max(minutes, 1)} min"


def _when(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M UTC") if t.utcoffset() is not None and not t.utcoffset() else t.isoformat()


def document(title: str, body: str) -> str:
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width,initial-scale=1'>"
            f"<meta name='robots' content='noindex'><title>{escape(title)}</title><style>{STYLE}</style></head>"
            f"<body>{body}</body></html>")


def review_page(r: Review) -> str:
    table_rows = "".join(
        f"<tr><td>{escape(x.team)}</td><td>{escape(x.pool)}</td><td class='n'>{_n(x.before)}</td>"
        f"<td class='n'>{_n(x.after)}</td>{_delta(x.delta)}<td class='r'>{escape(x.reason)}</td></tr>"
        for x in r.rows)
    units = sorted({x.resource for x in r.rows})
    moved = sum(x.delta for x in r.rows if x.delta > 0)
    parts = [f"<h1>Quota change on {escape(r.cluster)}</h1>", _status(r),
             "<dl class='meta'>",
             f"<dt>Cluster</dt><dd>{escape(r.cluster)}</dd>",
             f"<dt>Triggered by</dt><dd>{escape(r.trigger)}</dd>"]
    if r.started_at:
        parts.append(f"<dt>Run started</dt><dd>{escape(r.started_at)}</dd>")
    parts += [f"<dt>Decide by</dt><dd>{escape(_when(r.decide_by))} ({escape(_remaining(r.decide_by, r.now))})</dd>",
              f"<dt>Moves</dt><dd>{_n(moved)} {escape(', '.join(units) or 'nothing')}</dd>", "</dl>"]
    if r.approval_reasons:
        parts.append("<h2>Why it needs approval</h2><ul>"
                     + "".join(f"<li>{escape(x)}</li>" for x in r.approval_reasons) + "</ul>")
    if r.warnings:
        parts.append("<h2>Warnings</h2><ul class='status warn'>"
                     + "".join(f"<li>{escape(x)}</li>" for x in r.warnings) + "</ul>")
    parts.append("<h2>Quotas per team and instance type</h2><div class='scroll'><table id='quotas'><thead><tr>"
                 "<th>Team</th><th>Instance type</th><th class='n'>Before</th><th class='n'>After</th>"
                 "<th class='n'>Change</th><th class='r'>Reason</th></tr></thead>"
                 f"<tbody>{table_rows}</tbody></table></div>")
    if r.settings:
        parts.append(_settings(r.settings))
    if r.status == "pending" and r.form:
        parts.append(_form(r))
    if r.execution_url:
        parts.append(f"<p class='muted'><a href='{escape(r.execution_url)}' rel='noreferrer'>The execution in the "
                     "Step Functions console</a> · approval id "
                     f"<code>{escape(r.approval_id)}</code></p>")
    return document(f"Review quota change on {r.cluster}", "".join(parts))


def _settings(settings: Sequence[FieldChange]) -> str:
    """Settings the change rewrites; an edit someone made in the console is flagged, never replaced unseen."""
    items = "".join(
        f"<li class='{'status warn' if f.console_edit else ''}'>"
        + ("<strong>Console edit will be replaced:</strong> " if f.console_edit else "")
        + f"{escape(field_line(f))}</li>" for f in settings)
    return f"<h2>Settings</h2><ul id='settings'>{items}</ul>"


def _status(r: Review) -> str:
    if r.status == "pending":
        return ("<p class='status warn'>Waiting for your decision. Nothing changes until you press Approve or "
                "Reject.</p>")
    by = f" by {escape(r.decided_by)}" if r.decided_by else ""
    css = "done" if r.status == "approved" else "stop"
    return f"<p class='status {css}'>This change was already {escape(r.status)}{by}. Nothing more can be decided.</p>"


def _form(r: Review) -> str:
    hidden = "".join(f"<input type='hidden' name='{escape(k)}' value='{escape(v)}'>" for k, v in r.form.items())
    return (f"<form method='post' action='{escape(r.action)}'>{hidden}"
            f"<label for='name'>Your name (recorded in the audit log)</label>"
            f"<input type='text' id='name' name='name' maxlength='{NAME_MAX}' autocomplete='name'>"
            f"<label for='comment'>Comment (optional, recorded in the audit log)</label>"
            f"<textarea id='comment' name='comment' rows='3' maxlength='{COMMENT_MAX}'></textarea>"
            "<div class='buttons'>"
            "<button type='submit' class='approve' name='decision' value='approve'>Approve</button>"
            "<button type='submit' class='reject' name='decision' value='reject'>Reject</button>"
            "</div></form>")


def message_page(title: str, text: str, *, execution_url: str | None = None, ok: bool = False) -> str:
    link = (f"<p><a href='{escape(execution_url)}' rel='noreferrer'>See the execution in the Step Functions "
            "console</a></p>" if execution_url else "")
    css = "done" if ok else "stop"
    return document(title, f"<h1>{escape(title)}</h1><p class='status {css}'>{escape(text)}</p>{link}")
