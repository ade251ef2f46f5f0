"""A small HTTP server on 127.0.0.1 (a free port), served from a daemon thread between __enter__ and __exit__:
the local stand-ins for Slack's webhook and for API Gateway are built on it."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class QuietHandler(BaseHTTPRequestHandler):
    """No access log on stderr; GET and POST both go to `respond(method)`; `reply` sends one complete response."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.respond("GET")

    def do_POST(self) -> None:
        self.respond("POST")

    def respond(self, method: str) -> None:
        self.reply(405, f"{method} not served here".encode())

    def body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def reply(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class LoopbackServer:
    """`attrs` become attributes of the server, which handlers read as `self.server.<name>` (shared state)."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], name: str, **attrs: Any) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        for key, value in attrs.items():
            setattr(self._server, key, value)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True, name=name)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
