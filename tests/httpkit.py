"""A real ``serve --http`` on 127.0.0.1 for tests: uvicorn in a thread, over the test's
mailbox, with registered agents (claude, gemini, and helper: a child of claude) and their
real credential files."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn

from mailslot import FileStore, Mailbox
from mailslot.access import authority
from mailslot.frontends.http.bearer import Bearers
from mailslot.frontends.http.http_server import Listen, build_app, config

Box = Callable[[str | None], Mailbox]
AGENTS = {"claude": None, "gemini": None, "helper": "claude"}  # name → parent


@dataclass
class Running:
    url: str
    port: int
    store: FileStore
    files: dict[str, str]
    """agent → its credential file"""

    def secret(self, agent: str) -> str:
        return str(json.loads(Path(self.files[agent]).read_text())["secret"])

    def box(self, agent: str) -> Mailbox:
        """The service as ``agent``, with its credential (registered agents need one)."""
        return Bearers(self.store).open(self.secret(agent))


def start(root: Path, rate: int = 600, max_body: int = 64 * 1024,
          session_idle: float = 30 * 60.0) -> Iterator[Running]:
    store = FileStore(root)
    files = {name: authority.register(store, name, parent=parent,
                                      path=str(root.parent / f"{name}.credential")).path
             for name, parent in AGENTS.items()}
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    listen = Listen("127.0.0.1", port)
    door = listen.door(max_body_bytes=max_body, rate_per_minute=rate)
    server = uvicorn.Server(config(build_app(Bearers(store).open, door,
                                               session_idle=session_idle), listen))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "server did not start"
        time.sleep(0.01)
    try:
        yield Running(f"http://127.0.0.1:{port}/mcp", port, store, files)
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


STARTED: list[subprocess.Popen[bytes]] = []
"""``serve --http`` processes the tests started; :func:`no_server_left` ends them."""


@pytest.fixture(autouse=True)
def no_server_left() -> Iterator[None]:
    """A test that fails midway leaves no server running (autouse where imported)."""
    yield
    while STARTED:
        server = STARTED.pop()
        if server.poll() is None:
            server.kill()
        server.wait(30)
