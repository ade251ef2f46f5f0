"""What people are told, and how: one Message model, rendered as SNS plain text and as Slack Block Kit (sent with
slack_sdk's WebhookClient). Channels never raise into a run: failures come back as DeliveryResult.

Every message fits its outlet at any number of teams: SNS (and so the email) takes 256 KB, Slack 50 blocks of at
most 3,000 characters a section. One mechanism bounds every list a message carries (changes, held-back changes,
settings, preemptions, notes, warnings, approval reasons): `shown` keeps all of a list that fits its room, else its
largest rows, and a line counts the rest; the email halves every list's room until the body fits SNS, so a plan
that cuts 10,000 teams is summarised (the moves, the counts, the largest changes with their reasons) and always
ends with the decision links and the execution's page."""

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel, ConfigDict

from rebalancer.adapters.aws import one_line
from rebalancer.app.workflow.state import Kind
from rebalancer.domain.plan import Change, FieldChange, Preemption, movement, preemption_line, preemption_summary

TITLES: dict[str, str] = {
    "approval_request": "Approval needed: quota changes on {cluster}",
    "notice": "Notice: quota changes on {cluster} will preempt running work",
    "applied": "Quotas rebalanced on {cluster}",
    "dry_run": "Dry run: quota changes that would be made on {cluster}",
    "rejected": "Quota changes on {cluster} rejected",
    "expired": "Quota changes on {cluster} expired without a decision",
    "rolled_back": "Rebalance of {cluster} failed and was rolled back",
    "rollback_failed": "Rebalance of {cluster} failed and the rollback failed too: needs a person",
    "failed": "Rebalance of {cluster} stopped before changing anything",
    "budget": "Budget thresholds reached on {cluster}",
    "budget_summary": "Budget summary for {cluster}",
    "reservation_started": "Reservation started on {cluster}",
    "reservation_ended": "Reservation ended on {cluster}: quotas return to the policy",
}
MAX_ROWS = 40  # Slack allows 50 blocks; a longer change set is summarised
PREEMPTIONS_SHOWN = 10  # the largest a message names; the rest are counted (the stored plan lists more)
TEXT_ROWS = 500  # rows of each list the email shows at most, before SNS's limit asks for fewer
SNS_BYTES = 256 * 1024 - 4 * 1024  # SNS takes 256 KB with the subject and the message attributes
LINE_CHARS = 1_000  # of one line of the email (a reason, a warning): a recorded text of any length stays one line
SECTION_CHARS = 3_000  # Slack's limit of a section's (and a context element's) text
CONTEXT_ELEMENTS = 10  # Slack's limit of a context block's elements
T = TypeVar("T")


def shown(rows: Sequence[T], room: int, size: Callable[[T], float] | None = None) -> tuple[list[T], int]:
    """The rows a message has room for, and how many it leaves out: all of them, in their order, when they fit;
    else the `room` largest by `size` (the first `room` without one), still in their order."""
    if len(rows) <= room:
        return list(rows), 0
    if size is None or room <= 0:
        return list(rows[:max(room, 0)]), len(rows) - max(room, 0)
    keep = set(sorted(range(len(rows)), key=lambda i: (-size(rows[i]), i))[:room])
    return [r for i, r in enumerate(rows) if i in keep], len(rows) - room


def change_size(c: "Change") -> float:
    """How much a change moves (a held one: how much the policy wanted it to move)."""
    return abs((c.wanted if c.wanted is not None else c.after) - c.before)


def _cut(text: str, limit: int = LINE_CHARS) -> str:
    return text if len(text) <= limit else f"{text[:limit - 1]}…"


class Message(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: Kind
    cluster: str
    execution_url: str | None = None
    changes: tuple[Change, ...] = ()
    held: tuple[Change, ...] = ()  # what the policy wants and a hold keeps back (Plan.held)
    field_changes: tuple[FieldChange, ...] = ()  # settings besides amounts, console edits among them
    warnings: tuple[str, ...] = ()
    approval_reasons: tuple[str, ...] = ()
    error: str | None = None
    decided_by: str | None = None
    approval_id: str | None = None
    approve_url: str | None = None
    reject_url: str | None = None
    expires: str | None = None
    notes: tuple[str, ...] = ()  # budget lines, one per team; reservation lines, one per reservation
    # What the plan's writes would make Kueue preempt (Plan.preemptions, preemptions_unlisted, preempted_gpu_hours)
    preemptions: tuple[Preemption, ...] = ()
    preemptions_unlisted: int = 0
    preempted_gpu_hours: float = 0.0

    @property
    def preempting(self) -> str:
        """`Would preempt 3 running workloads, 42.5 GPU-hours of work at risk`; empty when none."""
        summary = preemption_summary(self.preemptions, self.preemptions_unlisted, self.preempted_gpu_hours)
        return f"Would preempt {summary}" if summary else ""

    def preemption_lines(self) -> list[str]:
        """The largest PREEMPTIONS_SHOWN preemptions, one line each, and a line counting the rest."""
        listed, left = shown(self.preemptions, PREEMPTIONS_SHOWN)  # the plan lists them largest first
        lines = [preemption_line(p) for p in listed]
        rest = left + self.preemptions_unlisted
        return lines + ([f"…and {rest} more (see the execution's plan)"] if rest else [])

    @property
    def title(self) -> str:
        return TITLES[self.kind].format(cluster=self.cluster)


def _amount(x: float) -> str:
    return f"{x:g}"


def change_line(c: Change) -> str:
    """`research ml.p5.48xlarge accelerators: 12 -> 12, held, wants 8 (wants 8 because …; gets 12 because …)`."""
    wants = f", held, wants {_amount(c.wanted)}" if c.wanted is not None else ""
    return f"{c.team} {c.pool} {c.resource}: {_amount(c.before)} -> {_amount(c.after)}{wants} ({c.reason})"


def _value(v: Any) -> str:
    return "(none)" if v is None else v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)


def field_line(f: FieldChange) -> str:
    """One setting the plan rewrites: `training ComputeQuotaConfig.PreemptTeamTasks: Never -> LowerPriority
    (console edit will be replaced)`."""
    return f"{f.team} {f.field}: {_value(f.before)} -> {_value(f.after)} ({f.reason or 'policy'})"


def render_text(m: Message) -> tuple[str, str]:
    """(subject, body) for SNS; the subject fits SNS's 100-character limit, the body its 256 KB: each list is shown
    in full up to TEXT_ROWS rows, and every list's room halves until the body fits."""
    subject = m.title if len(m.title) <= 100 else m.title[:97] + "..."
    room = TEXT_ROWS
    body = _text_body(m, room)
    while len(body.encode()) > SNS_BYTES and room > 1:
        room //= 2
        body = _text_body(m, room)
    return subject, body


def _listed(rows: Sequence[T], room: int, line: Callable[[T], str], more: str,
            size: Callable[[T], float] | None = None) -> list[str]:
    """A list of the email: its rows that have room, one line each, and a line counting the rest."""
    kept, left = shown(rows, room, size)
    return [f"  - {_cut(line(r))}" for r in kept] + ([f"  …and {left} more {more} (see the execution)"] if left else [])


def _text_body(m: Message, room: int) -> str:
    lines = [m.title, ""]
    if m.error:
        lines += [f"Error: {_cut(m.error)}", ""]
    lines += _listed(m.notes, room, str, "notes")
    if m.changes:
        lines.append(f"Moves: {movement(m.changes)}")
        teams = len({c.team for c in m.changes})
        lines.append("Changes (before -> after):" if len(m.changes) <= room else
                     f"Changes (before -> after), the {room} largest of {len(m.changes)} to {teams} teams:")
        lines += _listed(m.changes, room, change_line, "changes", change_size)
        lines.append("")
    if m.preempting:
        lines.append(f"{m.preempting}:")
        lines += [f"  - {_cut(line)}" for line in m.preemption_lines()]
        lines.append("")
    if m.held:
        # A contended cluster under max_move can hold back thousands: the execution keeps all.
        lines.append("Held back (what the policy wants and a hold keeps back):")
        lines += _listed(m.held, min(room, MAX_ROWS), change_line, "held back", change_size)
        lines.append("")
    if m.field_changes:
        lines.append("Settings (before -> after):")
        lines += _listed(m.field_changes, room, field_line, "settings")
        lines.append("")
    if m.approval_reasons:
        reasons, left = shown(m.approval_reasons, room)
        lines.append("Needs approval because: " + "; ".join(_cut(r) for r in reasons)
                     + (f"; …and {left} more reasons (see the execution)" if left else ""))
    if m.warnings:
        lines.append("Warnings:")
        lines += _listed(m.warnings, room, str, "warnings")
    if m.decided_by:
        lines.append(f"Decided by: {_cut(m.decided_by)}")
    # Each URL on a line of its own, so a mail client that wraps long lines never breaks one in two.
    if m.approve_url and m.reject_url:
        lines += ["", "Approve:", m.approve_url, "Reject:", m.reject_url]
        if m.expires:
            lines.append(f"These links expire at {m.expires}.")
    if m.execution_url:
        lines += ["", "Execution:", m.execution_url]
    return "\n".join(lines).strip() + "\n"


def email_links(body: str) -> dict[str, str]:
    """The signed links an email's text carries, by label ("Approve", "Reject"), as render_text lays them out."""
    lines = body.splitlines()
    return {label: lines[i + 1].strip() for i, line in enumerate(lines[:-1])
            for label in ("Approve", "Reject") if line == f"{label}:"}


def escaped(text: object) -> str:
    """Slack's mrkdwn escapes for recorded text (reasons, notes, names, errors): shown as typed, never read as a
    link, a mention (`<!channel>`) or a formatting control."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _block_row(c: Change) -> str:
    wants = f" (held, wants {_amount(c.wanted)})" if c.wanted is not None else ""
    return (f"`{c.team}` {c.instance_type}{':' + c.mig_profile if c.mig_profile else ''} {c.resource}: "
            f"*{_amount(c.before)} → {_amount(c.after)}*{wants}\n_{escaped(c.reason)}_")


def _rooms(m: Message) -> tuple[int, int, int]:
    """How many changes, held-back changes and settings get a block of their own: MAX_ROWS in all (less the
    preemptions' block), the changes first, up to 5 of each of the others kept for them."""
    rows = MAX_ROWS - bool(m.preempting)
    held, fields = min(len(m.held), 5), min(len(m.field_changes), 5)
    changes = min(len(m.changes), rows - held - fields)
    held = min(len(m.held), rows - changes - fields)
    return changes, held, min(len(m.field_changes), rows - changes - held)


def _fitted(text: str, tail: str = "") -> str:
    """`text` and `tail` within a section's SECTION_CHARS, the text cut (with an ellipsis) to keep the tail."""
    room = SECTION_CHARS - len(tail)
    return (text if len(text) <= room else f"{text[:room - 1]}…") + tail


def _bullets(items: Sequence[str], what: str) -> str:
    """One section of bullets: as many of `items` as its SECTION_CHARS hold, and a line counting the rest."""
    out: list[str] = []
    used = 0
    for i, item in enumerate(items):
        line = _fitted(f"• {escaped(item)}")
        tail = f"\n…and {len(items) - i} more {what}"
        if used + len(line) + 1 + len(tail) > SECTION_CHARS and i:
            return "\n".join(out) + tail
        out.append(line)
        used += len(line) + 1
    return "\n".join(out)[:SECTION_CHARS]


def _preemption_block(m: Message) -> dict[str, Any]:
    """One section: what the plan would preempt, the largest first, within Slack's 3,000 characters."""
    head = f"*:warning: {escaped(m.preempting)}:*"
    text = "\n".join([head, *(f"• {escaped(line)}" for line in m.preemption_lines())])
    if len(text) > 3000:
        cut = text[:2990].rsplit("\n", 1)[0]
        text = f"{cut}\n…"
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def _amount_blocks(m: Message, changes: int, held: int) -> list[dict[str, Any]]:
    """The changes, then what a hold keeps back, each row with its reason; the first `changes` and `held` of them,
    and a line counting the rest."""
    blocks: list[dict[str, Any]] = []
    if m.changes:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": f"*Moves:* {movement(m.changes)}"}})
        for row in [_block_row(c) for c in shown(m.changes, changes, change_size)[0]]:
            blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": row[:3000]}})
        if len(m.changes) > changes:
            blocks.append({"type": "context", "elements": [
                {"type": "mrkdwn", "text": f"…and {len(m.changes) - changes} more changes (see the execution)"}]})
    if m.held:
        blocks.append({"type": "section", "text": {"type": "mrkdwn",
                                                   "text": "*Held back:* what the policy wants and a hold keeps back"}})
        for row in [_block_row(c) for c in shown(m.held, held, change_size)[0]]:
            blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": row[:3000]}})
        if len(m.held) > held:
            blocks.append({"type": "context", "elements": [
                {"type": "mrkdwn", "text": f"…and {len(m.held) - held} more held back (see the execution)"}]})
    return blocks


def render_blocks(m: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "header", "text": {"type": "plain_text", "text": m.title[:150]}}]
    if m.error:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": f"*Error:* {escaped(m.error)}"[:3000]}})
    if m.notes:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": _bullets(m.notes, "notes")}})
    changes, held, room = _rooms(m)
    blocks += _amount_blocks(m, changes, held)
    if m.preempting:
        blocks.append(_preemption_block(m))
    if m.field_changes:
        rows = [f"`{f.team}` {f.field}: *{_value(f.before)} → {_value(f.after)}*\n"
                + (":pencil2: _console edit will be replaced_" if f.console_edit
                   else f"_{escaped(f.reason or 'policy')}_")
                for f in m.field_changes[:room]]
        for row in rows:
            blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": row[:3000]}})
        if len(m.field_changes) > room:
            blocks.append({"type": "context", "elements": [
                {"type": "mrkdwn", "text": f"…and {len(m.field_changes) - room} more settings (see the execution)"}]})
    context = []
    if m.approval_reasons:
        reasons, left = shown(m.approval_reasons, MAX_ROWS)
        context.append(_fitted("*Needs approval:* " + escaped("; ".join(reasons)),
                               f"; …and {left} more" if left else ""))
    if m.decided_by:
        context.append(f"*Decided by:* {escaped(m.decided_by)}")
    # Slack takes 10 elements in a context block: the warnings get what the others leave, and a count of the rest.
    free = CONTEXT_ELEMENTS - len(context)
    warnings, left = shown(m.warnings, free if len(m.warnings) <= free else free - 1)
    context += [f":warning: {escaped(w)}" for w in warnings] + ([f"…and {left} more warnings"] if left else [])
    if context:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": _fitted(t)} for t in context]})
    buttons: list[dict[str, Any]] = []
    if m.approval_id and m.kind == "approval_request":
        buttons += [
            {"type": "button", "style": "primary", "text": {"type": "plain_text", "text": "Approve"},
             "action_id": "approve", "value": m.approval_id},
            {"type": "button", "style": "danger", "text": {"type": "plain_text", "text": "Reject"},
             "action_id": "reject", "value": m.approval_id},
        ]
    if m.execution_url:
        buttons.append({"type": "button", "text": {"type": "plain_text", "text": "Execution"},
                        "action_id": "open_execution", "url": m.execution_url})
    if buttons:
        blocks.append({"type": "actions", "elements": buttons})
    return blocks


@dataclass(frozen=True, slots=True)
class DeliveryResult:
    channel: str
    ok: bool
    error: str | None = None


class Channel(Protocol):
    name: str

    def send(self, message: Message) -> DeliveryResult: ...


class SnsChannel:
    name = "sns"

    def __init__(self, client: Any, topic_arn: str):
        self._client = client
        self._topic_arn = topic_arn

    def send(self, message: Message) -> DeliveryResult:
        subject, body = render_text(message)
        try:
            self._client.publish(TopicArn=self._topic_arn, Subject=subject, Message=body,
                                 MessageAttributes={"kind": {"DataType": "String", "StringValue": message.kind},
                                                    "cluster": {"DataType": "String", "StringValue": message.cluster}})
        except (ClientError, BotoCoreError) as e:  # AWS said no or was not reached; a bug here still raises
            return DeliveryResult(self.name, False, f"SNS Publish: {one_line(e)}")
        return DeliveryResult(self.name, True)


class SlackChannel:
    name = "slack"

    def __init__(self, webhook_url: str, timeout: int = 10):
        from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler
        from slack_sdk.webhook import WebhookClient

        self._client = WebhookClient(webhook_url, timeout=timeout)
        self._client.retry_handlers.append(RateLimitErrorRetryHandler(max_retry_count=2))

    def send(self, message: Message) -> DeliveryResult:
        from slack_sdk.errors import SlackClientError  # slack_sdk is loaded only where Slack is configured

        subject, _ = render_text(message)
        try:
            response = self._client.send(text=subject, blocks=render_blocks(message))
        except (OSError, SlackClientError) as e:  # network, timeout or a refused request; a bug here still raises
            return DeliveryResult(self.name, False, f"Slack webhook: {one_line(e)}")
        if response.status_code != 200:
            return DeliveryResult(self.name, False, f"Slack webhook: HTTP {response.status_code}: {response.body}")
        return DeliveryResult(self.name, True)
