"""``serve --http`` under connections that never finish a request: idle, half-sent and
dripping sockets are closed within a bound, a real client is still served while they
are held, and the log stays small when the server runs out of file descriptors. A real
server process on a free loopback port (``--http 0``: its "listening on" line names it)."""

from __future__ import annotations

import contextlib
import os
import re
import resource
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from httpkit import STARTED, no_server_left  # noqa: F401 (autouse: ends the servers)
from mailslot import FileStore
from mailslot.access import authority
from mailslot.access.credentials import read_credential
from mailslot.core.errors import MailslotError
from mailslot.frontends.http.client import Remote
from mailslot.frontends.http.limits import BODY_SECONDS
from support import wait_for

LISTENING = re.compile(r"^mailslot: listening on http://127\.0\.0\.1:(\d+)/mcp$", re.M)


class Server:
    """A ``mailslot serve --http`` process, its log, and a registered agent's secret."""

    def __init__(self, root: Path, *argv: str, files: int | None = None) -> None:
        store = FileStore(root)
        self.secret = read_credential(authority.register(
            store, "claude", path=str(root.parent / "claude.cred")).path).secret
        self.log = root.parent / "server.log"

        def fewer_files() -> None:  # in the server process only
            if files is not None:
                hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
                resource.setrlimit(resource.RLIMIT_NOFILE, (files, hard))

        with self.log.open("wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "mailslot", "serve", "--http", "0", *argv],
                stdout=subprocess.DEVNULL, stderr=err, preexec_fn=fewer_files)
        STARTED.append(self.process)
        found: list[int] = []

        def listening() -> bool:
            assert self.process.poll() is None, self.log.read_text()
            found[:] = [int(p) for p in LISTENING.findall(self.log.read_text())]
            return bool(found)

        wait_for(listening, what="the listening line")
        assert len(found) == 1
        self.port = found[0]

    def served(self) -> bool:
        """A real client's call, on a new connection, answered."""
        remote = Remote(f"http://127.0.0.1:{self.port}", self.secret, timeout=30)
        return remote.get("inbox", limit=1)["items"] == []

    def served_now(self) -> bool:
        try:
            return self.served()
        except MailslotError:
            return False

    def files(self) -> int:
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=30)


def closed(sock: socket.socket) -> bool:
    """Whether the server has closed ``sock`` (whatever it said first is read and
    dropped)."""
    while select.select([sock], [], [], 0)[0]:
        try:
            if not sock.recv(65536):
                return True
        except OSError:
            return True
    return False


def all_closed(socks: list[socket.socket]) -> Callable[[], bool]:
    return lambda: all(closed(s) for s in socks)


def drip(socks: list[socket.socket], head: bytes, stop: threading.Event) -> threading.Thread:
    """A thread that sends ``head`` one byte at a time to each socket, a byte every
    0.2 s, until the server closes it (bounded: it gives up after the whole head)."""

    def run() -> None:
        for byte in (head[i:i + 1] for i in range(len(head))):
            if stop.wait(0.2):
                return
            for sock in socks:
                with contextlib.suppress(OSError):  # closed: what the test waits for
                    sock.send(byte)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_serve_says_where_it_listens(root: Path) -> None:
    """``--http 0`` asks for any free port; the line names the one bound, once."""
    server = Server(root)
    assert server.served()
    server.process.terminate()
    assert server.process.wait(60) == -15
    assert len(LISTENING.findall(server.log.read_text())) == 1


def test_unfinished_connections_are_closed_and_do_not_starve_a_client(root: Path) -> None:
    """More idle, half-sent and dripping connections (heads and bodies) than the server
    takes at once (with 256 files it takes 128): a real client is still served while
    they are held, every one of them is closed within its bound, and the server never
    runs out of files."""
    server = Server(root, files=256)
    port = server.port
    head = (f"POST /api/send HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {server.secret}\r\n" + "X-Pad: y\r\n" * 200).encode()
    idle = [connect(port) for _ in range(100)]
    half = [connect(port) for _ in range(100)]
    for sock in half:
        sock.sendall(head[:60])
    answered = [connect(port) for _ in range(20)]  # one request answered, then a drip
    for sock in answered:
        sock.sendall(f"GET /api/inbox HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                     f"Authorization: Bearer {server.secret}\r\n\r\n".encode())
    dripping = [connect(port) for _ in range(100)]
    slow_body = [connect(port) for _ in range(20)]  # a whole head, then a body a byte
    for sock in slow_body:                          # at a time
        sock.sendall(f"POST /api/send HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                     f"Authorization: Bearer {server.secret}\r\n"
                     "Content-Type: application/json\r\nContent-Length: 2000\r\n\r\n"
                     .encode())
    stop = threading.Event()
    threads = [drip(dripping, head, stop), drip(answered, head, stop),
               drip(slow_body, b"x" * 2000, stop)]
    held = idle + half + answered + dripping + slow_body
    try:
        for _ in range(5):
            assert server.served()
        assert server.files() < 256
        wait_for(all_closed(held), timeout=BODY_SECONDS * 3, what="every socket closed")
        assert server.served()
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
        for sock in held:
            sock.close()
    log = server.log.read_text()
    assert "Too many open files" not in log and len(log) < 64 * 1024, log[-2000:]


def test_running_out_of_files_does_not_flood_the_log(root: Path) -> None:
    """The server's file limit is cut to what it holds, and connections keep arriving:
    every accept fails, the same error again and again; the log says so a few times,
    not thousands, and once files are free again a client is served."""
    server = Server(root)
    assert server.served()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.prlimit(server.process.pid, resource.RLIMIT_NOFILE, (server.files() + 2, hard))
    waiting: list[socket.socket] = []
    try:
        waiting = [connect(server.port) for _ in range(50)]  # queued: the kernel accepts
        wait_for(lambda: "Too many open files" in server.log.read_text(),
                 what="the accept error in the log")
        seen = time.monotonic()
        size = 0
        while time.monotonic() - seen < 5:  # five seconds of failing accepts
            size = len(server.log.read_bytes())
            time.sleep(0.1)
        assert size < 32 * 1024, server.log.read_text()[-2000:]
    finally:
        resource.prlimit(server.process.pid, resource.RLIMIT_NOFILE, (soft, hard))
        for sock in waiting:
            sock.close()
    wait_for(server.served_now, what="a client served once files are free")
