"""The event an API Gateway HTTP API (payload format 2.0) passes to its Lambda for one request, shaped as AWS documents
it: headers lower-cased, the query both raw and parsed, a `$default` stage, and, when the API has a JWT authorizer,
the verified token's claims under requestContext.authorizer.jwt. The local stack, the demo's gateway and the tests
build approval API requests through this one function."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import parse_qsl, urlsplit

API_ID = "abc123"


def http_api_event(method: str, url: str, *, headers: dict[str, str] | None = None, body: str | bytes | None = None,
                   base64_body: bool = False, source_ip: str = "127.0.0.1",
                   claims: dict[str, str] | None = None) -> dict[str, Any]:
    """`base64_body`: as API Gateway passes form posts (and any body that is not plain text). `claims`: the request
    came through the JWT authorizer with a valid token carrying these claims."""
    u = urlsplit(url)
    path = u.path or "/"
    event: dict[str, Any] = {
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": u.query,
        "headers": {k.lower(): v for k, v in (headers or {}).items()},
        "requestContext": {
            "accountId": "123456789012", "apiId": API_ID, "domainName": u.netloc or f"{API_ID}.execute-api.local",
            "domainPrefix": API_ID,
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": source_ip,
                     "userAgent": (headers or {}).get("user-agent", "local")},
            "requestId": "local", "routeKey": "$default", "stage": "$default",
            "time": "30/Nov/2026:12:00:00 +0000", "timeEpoch": 1796040000000,
        },
        "isBase64Encoded": False,
    }
    if u.query:
        event["queryStringParameters"] = dict(parse_qsl(u.query, keep_blank_values=True))
    parts = path.strip("/").split("/")
    if len(parts) in (2, 3) and parts[0] == "approvals":
        event["pathParameters"] = {"id": parts[1]}
    if claims is not None:
        event["requestContext"]["authorizer"] = {"jwt": {"claims": claims, "scopes": None}}
    if body is not None:
        raw = body.encode() if isinstance(body, str) else body
        if base64_body or isinstance(body, bytes):
            event["body"], event["isBase64Encoded"] = base64.b64encode(raw).decode(), True
        else:
            event["body"] = body
    return event
