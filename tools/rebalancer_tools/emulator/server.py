"""The emulator as an HTTP server on loopback: moto's server app plus the /_emulator/ control routes.

Like moto's ThreadedMotoServer (same app, same request handler), with port 0 meaning "any free port".
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from typing import Any

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import BaseWSGIServer, make_server

from rebalancer_tools.emulator.http_control import control_middleware
from rebalancer_tools.emulator.install import install
from rebalancer_tools.emulator.regions import region_guard


class _QuietHandler(MotoRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass


class EmulatorServer:
    """`quiet` drops the per-request access log (tests); the CLI keeps it."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, quiet: bool = False,
                 wrap: Callable[[Any], Any] | None = None) -> None:
        install()
        self.host = host
        self.port = port
        self.quiet = quiet
        self.wrap = wrap  # more routes in front of the emulator's (the sandbox's Kubernetes API)
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None

    def _make(self) -> BaseWSGIServer:
        if self.port:
            # werkzeug prints and exits when the port is taken; an OSError lets the caller say it in one line.
            with socket.socket() as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind((self.host, self.port))
        app: Any = region_guard(control_middleware(DomainDispatcherApplication(create_backend_app)))
        if self.wrap is not None:
            app = self.wrap(app)
        return make_server(self.host, self.port, app, threaded=True,
                           request_handler=_QuietHandler if self.quiet else MotoRequestHandler)

    @property
    def endpoint(self) -> str:
        assert self._server is not None, "start() first"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> str:
        """Serve in a daemon thread; returns the endpoint URL."""
        self._server = self._make()
        # A short poll interval makes stop() quick (werkzeug's default waits up to 0.5 s).
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="emulator-server", daemon=True)
        self._thread.start()
        return self.endpoint

    def wait(self) -> None:
        """Block until the server stops (Ctrl-C raises KeyboardInterrupt here)."""
        while self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout=0.5)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server = self._thread = None

    def __enter__(self) -> EmulatorServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
