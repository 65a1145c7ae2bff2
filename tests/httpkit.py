"""A real ``serve --http`` on 127.0.0.1 for tests: uvicorn in a thread, credentials from a
table (``secrets``: secret → agent, editable while it runs to revoke one)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import uvicorn

from mailslot import Mailbox
from mailslot.errors import Refused
from mailslot.http_server import Listen, build_app, config

Box = Callable[[str | None], Mailbox]
SECRETS = {"s-claude": "claude", "s-gemini": "gemini"}


@dataclass
class Running:
    url: str
    port: int
    secrets: dict[str, str]


def start(box: Box, listen_names: tuple[str, ...] = (), rate: int = 600,
           max_body: int = 64 * 1024) -> Iterator[Running]:
    secrets = dict(SECRETS)

    def authenticate(secret: str) -> Mailbox:
        agent = secrets.get(secret)
        if agent is None:
            raise Refused("unauthorized")
        return box(agent)

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    listen = Listen("127.0.0.1", port, names=listen_names)
    app = build_app(authenticate, listen.door(max_body_bytes=max_body, rate_per_minute=rate))
    server = uvicorn.Server(config(app, listen))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "server did not start"
        time.sleep(0.01)
    try:
        yield Running(f"http://127.0.0.1:{port}/mcp", port, secrets)
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


