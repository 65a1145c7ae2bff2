"""``mailslot web``: serve the page on 127.0.0.1 in the foreground until Ctrl-C.

The port is bound here, before anything is printed: a busy port falls back to a free
one the system picks (and says so), and the socket is handed to uvicorn, so the
address printed is the one listening. Only loopback: there is no option to listen
anywhere else (docs/web.md).
"""

from __future__ import annotations

import errno
import socket
import sys
from types import FrameType
from typing import TextIO

import uvicorn

from ...core.errors import StoreError
from ...store import Store
from .app import build_app
from .live import Hub
from .security import Sessions

HOST = "127.0.0.1"
DEFAULT_PORT = 3344


def bind(port: int, out: TextIO) -> socket.socket:
    """A listening socket on loopback at ``port``, or at a free one if it is taken."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE or port == 0:
            sock.close()
            raise StoreError(f"cannot listen on {HOST}:{port} ({exc.strerror})") from None
        sock.bind((HOST, 0))
        print(f"mailslot: port {port} is busy; using {sock.getsockname()[1]} instead",
              file=out, flush=True)
    sock.listen(64)
    return sock


def serve(store: Store, port: int = DEFAULT_PORT, out: TextIO = sys.stdout) -> int:
    """Run the page over ``store`` until interrupted; prints the one-time login URL."""
    sock = bind(port, out)
    bound = sock.getsockname()[1]
    sessions = Sessions()
    hub = Hub(store)
    app = build_app(store, sessions, hub, lambda: bound)
    print(f"mailslot web: {store.location}\n"
          f"open http://{HOST}:{bound}/login?token={sessions.token}\n"
          "(the link works once; Ctrl-C stops the page)", file=out, flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False,
                            timeout_graceful_shutdown=1, server_header=False)
    _Server(config, hub).run(sockets=[sock])
    return 0


class _Server(uvicorn.Server):
    """uvicorn, ending open event streams at Ctrl-C so it stops at once (an event stream
    never ends by itself)."""

    def __init__(self, config: uvicorn.Config, hub: Hub) -> None:
        super().__init__(config)
        self._hub = hub

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self._hub.end_streams()
        super().handle_exit(sig, frame)
