"""The demo told on a terminal: chapters, the plan, the messages an admin receives, and before → after tables of
every team's quota per instance type (rich, at the terminal's width)."""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from rebalancer.domain.plan import Plan
from rebalancer_tools.demo.scenarios import Quotas, ScenarioResult
from rebalancer_tools.reports.render import plan_renderable

SHORT = {"ml.p5.48xlarge": "p5.48xl", "ml.trn1.32xlarge": "trn1.32xl", "ml.g5.12xlarge": "g5.12xl"}


def short(instance_type: str) -> str:
    return SHORT.get(instance_type, instance_type.removeprefix("ml."))


def quota_table(before: Quotas, after: Quotas, capacity: dict[str, int], title: str = "quotas") -> Table:
    """Rows: teams; columns: instance types; cells: before → after accelerators (changed ones coloured)."""
    types = sorted({t for q in (before, after) for pools in q.values() for t in pools} | set(capacity))
    table = Table(title=title, title_justify="left", show_footer=True)
    table.add_column("team", "healthy capacity", no_wrap=True)
    for t in types:
        table.add_column(short(t), str(capacity.get(t, 0)), justify="right", no_wrap=True)
    for team in sorted(set(before) | set(after)):
        cells = []
        for t in types:
            b, a = before.get(team, {}).get(t, 0), after.get(team, {}).get(t, 0)
            if a == b:
                cells.append(Text(str(a) if a else "·", style="dim" if not a else ""))
            else:
                cells.append(Text.assemble(f"{b} → ", (str(a), "green" if a > b else "red")))
        table.add_row(team, *cells)
    totals = []
    for t in types:
        b = sum(p.get(t, 0) for p in before.values())
        a = sum(p.get(t, 0) for p in after.values())
        style = "red" if a > capacity.get(t, 0) else ""
        totals.append(Text(f"{b} → {a}" if a != b else str(a), style=style))
    table.add_row(Text("total", style="bold"), *totals, end_section=True)
    return table


# Slack's markers count at word edges only: `max_decrease_percent` is one word, not an italic "decrease".
MRKDWN = re.compile(r"<([^<>|]+)\|([^<>]+)>|<([^<>]+)>|(?<!\w)\*(\S[^*\n]*?)\*(?!\w)|(?<!\w)_(\S[^\n]*?)_(?!\w)"
                    r"|`([^`\n]+)`")


def mrkdwn(text: str) -> Text:
    """Slack mrkdwn as Slack shows it: *bold*, _italic_, `code`, <url|label> as its label, and the escapes Slack
    asks senders to use (&amp; &lt; &gt;) as the characters they stand for."""
    out = Text()
    at = 0
    for m in MRKDWN.finditer(text):
        out.append(_unescaped(text[at:m.start()]))
        link_label, bare, bold, italic, code = m.group(2), m.group(3), m.group(4), m.group(5), m.group(6)
        if link_label is not None:
            out.append(_unescaped(link_label), style="underline")
        elif bare is not None:
            out.append(_unescaped(bare), style="underline")
        elif bold is not None:
            out.append(_unescaped(bold), style="bold")
        elif italic is not None:
            out.append(_unescaped(italic), style="italic")
        else:
            out.append(_unescaped(code), style="cyan")
        at = m.end()
    return out.append(_unescaped(text[at:]))


def _unescaped(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def slack_text(post: dict[str, Any]) -> Group:
    """A Block Kit message as Slack would lay it out, roughly: headers bold, sections and context as their mrkdwn
    renders, buttons in []."""
    parts: list[Any] = []
    for block in post.get("blocks", []):
        kind = block.get("type")
        if kind == "header":
            parts.append(Text(block["text"]["text"], style="bold"))
        elif kind in ("section", "context"):
            texts = [block["text"]] if "text" in block else block.get("elements", [])
            for t in texts:
                raw = str(t.get("text", ""))
                parts.append(mrkdwn(raw) if t.get("type") == "mrkdwn" else Text(raw))
        elif kind == "actions":
            buttons = "  ".join(f"[ {e.get('text', {}).get('text', e.get('action_id'))} ]"
                                for e in block.get("elements", []))
            parts.append(Text(buttons, style="bold cyan"))
        elif kind == "divider":
            parts.append(Rule(style="dim"))
    if not parts and post.get("text"):
        parts.append(Text(str(post["text"])))
    return Group(*parts)


URL = re.compile(r"https?://\S+")


class RichStory:
    def __init__(self, console: Console | None = None):
        self.console = console or Console(width=80)

    def chapter(self, title: str, text: str) -> None:
        self.console.print()
        self.console.print(Rule(Text(title, style="bold magenta"), align="left"))
        self.console.print(text)

    def say(self, text: str) -> None:
        self.console.print(Text("→ ", style="cyan").append(text))

    def plan(self, plan: Plan) -> None:
        self.console.print(plan_renderable(plan))

    def email(self, subject: str, body: str) -> None:
        """The email as text under a rule, not in a box: a URL is a line of its own that the console never breaks,
        so a link copied from the terminal is whole."""
        self.console.print(Rule(Text(f"email (SNS): {subject}", style="blue"), align="left", style="blue"))
        for line in body.strip().splitlines():
            if URL.fullmatch(line.strip()):
                self.console.print(line.strip(), soft_wrap=True, highlight=False, markup=False)
            else:
                self.console.print(Text(line), highlight=False)
        self.console.print(Rule(style="blue"))

    def slack(self, post: dict[str, Any]) -> None:
        self.console.print(Panel(slack_text(post), title="Slack (webhook POST received)", title_align="left",
                                 border_style="green"))

    def terminal(self, command: str, output: str) -> None:
        self.console.print(Text(f"$ {command}", style="bold"))
        self.console.print(output.rstrip(), highlight=False, markup=False)

    def quotas(self, before: Quotas, after: Quotas, capacity: dict[str, int]) -> None:
        self.console.print(quota_table(before, after, capacity, "quotas (accelerators), before → after"))

    def verdict(self, result: ScenarioResult) -> None:
        for c in result.checks:
            mark = Text("  ✓ ", style="green") if c.ok else Text("  ✗ ", style="bold red")
            line = mark.append(c.what)
            if not c.ok and c.detail:
                line.append(f" ({c.detail})", style="red")
            self.console.print(line)
