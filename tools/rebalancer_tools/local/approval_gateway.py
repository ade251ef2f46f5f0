"""The approval HTTP API (API Gateway in AWS) on loopback, in front of a local stack: the demo, the sandbox's
controller and the tests reach the approval function through it as a browser or Slack would."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rebalancer_tools.fakes.loopback import LoopbackServer, QuietHandler


class ApprovalGateway(LoopbackServer):
    """The approval HTTP API (API Gateway in AWS) on loopback: each real HTTP request becomes the payload-2.0 event
    the approval function receives, and its answer the HTTP response."""

    def __init__(self) -> None:
        self.target: Callable[..., dict[str, Any]] | None = None  # LocalStack.http, bound once the stack is up
        gateway = self

        class Handler(QuietHandler):
            def respond(self, method: str) -> None:
                body = self.body().decode() or None
                assert gateway.target is not None, "the approval API has no stack behind it yet"
                headers = {k: v for k, v in self.headers.items() if k.lower().startswith(("x-", "content-type"))}
                out = gateway.target(method, f"{gateway.url}{self.path}", headers=headers, body=body)
                self.reply(int(out.get("statusCode", 200)), str(out.get("body", "")).encode(),
                           dict(out.get("headers") or {}))

        super().__init__(Handler, "approval-gateway")

    @property
    def url(self) -> str:
        return self.origin
