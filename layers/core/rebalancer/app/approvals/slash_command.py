"""The Slack slash command `/rebalancer why <team> [cluster]`: the text parsed, the answer of rebalancer.app.why
(stored documents only, so it comes within Slack's three seconds) as an ephemeral message of Block Kit blocks made
with slack_sdk's models. slack_sdk is imported when a command is answered: every other request of the API (the
review page, its form, Slack's buttons) stays without it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rebalancer.app.notifications.messages import escaped
from rebalancer.app.why import RunsAndReservations, why
from rebalancer.domain.plan import preemption_line
from rebalancer.errors import InvalidInput
from rebalancer.planning.why import (
    Explanation,
    Waiting,
    eta_text,
    preempted_title,
    quota_line,
    running_text,
    standing_lines,
    track_record_text,
    waiting_title,
)

USAGE = "usage: /rebalancer why <team> [cluster]"
TEXT_MAX = 200  # a command's text is a team and a cluster name; anything longer is not ours
SHOWN_MAX = 10  # pending workloads shown; Slack takes at most 50 blocks and 3,000 characters a section
SECTION_MAX = 2900


def cluster_and_team(text: str, clusters: Sequence[str]) -> tuple[str, str]:
    """(cluster, team) of `why <team> [cluster]`; the cluster may be left out when the stack manages one."""
    words = text[:TEXT_MAX + 1].split()
    if len(text) > TEXT_MAX or not 2 <= len(words) <= 3 or words[0].lower() != "why":
        raise InvalidInput(USAGE)
    team = words[1]
    if len(words) == 3:
        if words[2] not in clusters:
            raise InvalidInput(f"this controller manages {', '.join(clusters) or 'no cluster'}", field="cluster",
                               value=words[2][:80])
        return words[2], team
    if len(clusters) != 1:
        raise InvalidInput(f"name the cluster: /rebalancer why {team} <cluster> (one of {', '.join(clusters)})")
    return clusters[0], team


def answer(store: RunsAndReservations, clusters: Sequence[str], text: str) -> dict[str, Any]:
    cluster, team = cluster_and_team(text, clusters)
    return message(why(store, cluster, team))


def one_line(text: str) -> dict[str, Any]:
    """A refusal or an error, as the ephemeral reply Slack shows only to the one who typed the command."""
    return {"response_type": "ephemeral", "text": text}


def message(e: Explanation) -> dict[str, Any]:
    from slack_sdk.models.blocks import ContextBlock, HeaderBlock, MarkdownTextObject, SectionBlock

    quotas = "\n".join(f"• {escaped(quota_line(q))}" for q in e.quotas) or "no quota on any pool"
    notes = "".join(f"\n_note:_ {escaped(n)}" for n in e.notes)
    notes += "".join(f"\n• {escaped(running_text(r))}" for r in e.running)
    notes += f"\n• … and {e.running_unlisted} more running" if e.running_unlisted else ""
    blocks: list[Any] = [HeaderBlock(text=_cut(f"Why: {e.team} on {e.cluster}", 150)),
                         SectionBlock(text=MarkdownTextObject(text=_cut(f"*Quota*\n{quotas}{notes}", SECTION_MAX)))]
    if e.preempted:
        title = preempted_title(e.preempted)
        lines = [f"*:warning: {escaped(title[0].upper() + title[1:])}*",
                 *(f"• {escaped(preemption_line(p))}" for p in e.preempted[:SHOWN_MAX])]
        if len(e.preempted) > SHOWN_MAX:
            lines.append(f"…and {len(e.preempted) - SHOWN_MAX} more")
        blocks.append(SectionBlock(text=MarkdownTextObject(text=_cut("\n".join(lines), SECTION_MAX))))
    if e.standing is not None:
        head, *rest = standing_lines(e.standing)
        text = f"*Standing {escaped(head.rstrip(':'))}*\n" + "\n".join(f"• {escaped(line.strip())}" for line in rest)
        blocks.append(SectionBlock(text=MarkdownTextObject(text=_cut(text, SECTION_MAX))))
    blocks += [SectionBlock(text=MarkdownTextObject(text=_cut(_waiting_text(w), SECTION_MAX)))
               for w in e.waiting[:SHOWN_MAX]]
    if not e.waiting:
        blocks.append(SectionBlock(text=MarkdownTextObject(text="Nothing pending.")))
    more = len(e.waiting) - SHOWN_MAX
    context = f"snapshot {e.snapshot_at:%Y-%m-%d %H:%M} UTC" + (f", run {e.execution}" if e.execution else "")
    if more > 0:
        context += f"; {more} more pending: `rebalancer why --cluster {e.cluster} --team {e.team}`"
    if e.track_record is not None:
        context += f"; {track_record_text(e.track_record)}"
    context += "".join(f"; the estimates: {n}" for n in e.estimates_rest_on)
    blocks.append(ContextBlock(elements=[MarkdownTextObject(text=_cut(escaped(context), SECTION_MAX))]))
    waiting = f"{len(e.waiting)} pending" if e.waiting else "nothing pending"
    return {"response_type": "ephemeral", "text": f"Why: {e.team} on {e.cluster}: {waiting}",
            "blocks": [b.to_dict() for b in blocks]}


def _waiting_text(w: Waiting) -> str:
    lines = [f"*{escaped(waiting_title(w))}*"] + [f"• {escaped(r.text)}" for r in w.reasons]
    if w.would_start:
        lines.append(f"_Would start with:_ {escaped(w.would_start)}")
    if w.eta is not None:
        lines.append(f"_When:_ {escaped(eta_text(w.eta))}")
    return "\n".join(lines)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"
