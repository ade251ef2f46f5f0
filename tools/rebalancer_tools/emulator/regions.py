"""The emulator answers a request signed for a region no AWS partition has (`--region mars-1`) as AWS's endpoints
would: one error naming the region, in the protocol the client speaks (XML for the query services, JSON for the
rest), never moto's HTML 500 page and the traceback it logs (moto keeps its backends per known region)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any
from xml.sax.saxutils import escape

from rebalancer.adapters.aws import known_regions

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
SIGNED_REGION = re.compile(r"Credential=[^/,\s]+/\d{8}/([^/,\s]+)/")
CODE = "InvalidRegion"


def signed_region(environ: dict[str, Any]) -> str | None:
    """The region a SigV4 request was signed for (its credential scope), or None for an unsigned one."""
    found = SIGNED_REGION.search(str(environ.get("HTTP_AUTHORIZATION", "")))
    return found.group(1) if found else None


def refusal(region: str, query_protocol: bool) -> tuple[str, list[tuple[str, str]], bytes]:
    message = (f"no such AWS region {region[:64]!r}: this emulator serves the regions botocore knows "
               "(the sandbox's is us-east-1); check --region, AWS_REGION / AWS_DEFAULT_REGION")
    if query_protocol:
        body = (f"<ErrorResponse><Error><Type>Sender</Type><Code>{CODE}</Code><Message>{escape(message)}"
                "</Message></Error></ErrorResponse>").encode()
        return "text/xml", [], body
    return "application/x-amz-json-1.1", [("x-amzn-ErrorType", CODE)], json.dumps(
        {"__type": CODE, "message": message}).encode()


def region_guard(app: WsgiApp) -> WsgiApp:
    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        region = signed_region(environ)
        if region is None or region in known_regions():
            return app(environ, start_response)
        query = str(environ.get("CONTENT_TYPE", "")).startswith("application/x-www-form-urlencoded")
        kind, headers, body = refusal(region, query)
        start_response("400 Bad Request", [("Content-Type", kind), ("Content-Length", str(len(body))), *headers])
        return [body]

    return guarded
