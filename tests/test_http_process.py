"""``mailslot serve --http`` as a process: refusals at start, and what a stop does to
sends in flight (SIGTERM: finished first; kill -9: every acknowledged send kept)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx2
import pytest

from httpkit import STARTED, no_server_left  # noqa: F401 (autouse: ends the servers)
from mailslot import FileStore, Mailbox
from mailslot.access import authority
from mailslot.access.credentials import read_credential
from mailslot.access.identity import Identity
from mailslot.core.errors import MailslotError
from mailslot.frontends.http.client import Remote
from support import unlimited, wait_for


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])





def serve(log: Path, *argv: str) -> subprocess.Popen[bytes]:
    with log.open("wb") as err:
        server = subprocess.Popen([sys.executable, "-m", "mailslot", "serve", *argv],
                                  stdout=subprocess.DEVNULL, stderr=err)
    STARTED.append(server)
    return server


def refusal(*argv: str) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-m", "mailslot", "serve", *argv],
                          capture_output=True, text=True, timeout=60)
    return done.returncode, done.stderr


def test_refused_at_start_in_one_line() -> None:
    for argv, why in (
        (["--http", "0.0.0.0:8080"], "needs TLS"),
        (["--http", "10.1.2.3:8080", "--tls-cert", "c.pem"], "go together"),
        (["--http", "8080", "--agent", "claude"], "drop --agent"),
        (["--http", "99999"], "port from 0 to 65535"),
        (["--http", "8080", "--session-idle", "0"], "positive number of seconds"),
        (["--http", "0.0.0.0:8080", "--behind-proxy", "proxy.example"], "IP address"),
    ):
        code, err = refusal(*argv)
        assert code == 2 and err.startswith("mailslot: error:") and why in err, err
        assert len(err.strip().splitlines()) == 1


def test_a_port_in_use_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        code, err = refusal("--http", str(taken.getsockname()[1]))
    assert code == 1 and err.startswith("mailslot: error: cannot listen on 127.0.0.1:"), err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL])
def test_a_stop_mid_load_loses_nothing_acknowledged(root: Path, stop: signal.Signals) -> None:
    store = FileStore(root)
    unlimited(store)
    secret_of = {}
    for name in ("claude", "gemini"):
        path = authority.register(store, name, path=str(root.parent / f"{name}.cred")).path
        secret_of[name] = read_credential(path).secret
    port = free_port()
    log = root.parent / "server.log"
    server = serve(log, "--http", str(port), "--rate-limit", "100000")
    remote = Remote(f"http://127.0.0.1:{port}", secret_of["claude"], timeout=30)

    def up() -> bool:
        try:
            remote.get("inbox", limit=1)
        except MailslotError:
            return False
        return True

    wait_for(up, what="the server to answer")
    acked: list[str] = []
    failed: list[str] = []
    lock = threading.Lock()

    def sender(n: int) -> None:
        client = Remote(f"http://127.0.0.1:{port}", secret_of["claude"], timeout=30)
        for i in range(10_000):
            try:
                sent = client.post("send", {"to": "gemini", "subject": f"{n}-{i}",
                                            "body": "load"})
            except MailslotError as exc:
                with lock:
                    failed.append(str(exc))
                return
            with lock:
                acked.append(sent["message"]["id"])

    threads = [threading.Thread(target=sender, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    wait_for(lambda: len(acked) >= 30, what="some sends acknowledged")
    os.kill(server.pid, stop)
    for t in threads:
        t.join(60)
    code = server.wait(60)
    stored = {i for i, _ in store.entries("gemini", ("unread", "read", "done"))}
    assert set(acked) <= stored  # nothing acknowledged is lost
    assert len(acked) == len(set(acked))  # nor given twice
    if stop == signal.SIGTERM:  # uvicorn finishes, then ends as the signal asked
        assert code == -signal.SIGTERM
        assert all("cannot reach" in f for f in failed), failed  # never cut midway
        assert "Traceback" not in log.read_text()


class McpSession:
    """One MCP session (the 2025 handshake) driven with raw JSON-RPC over HTTP."""

    def __init__(self, url: str, secret: str) -> None:
        self.url = url
        self.http = httpx2.Client(timeout=30, headers={
            "authorization": f"Bearer {secret}", "content-type": "application/json",
            "accept": "application/json, text/event-stream"})
        opened = self.http.post(url, content=json.dumps({
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}}))
        opened.raise_for_status()
        self.http.headers["mcp-session-id"] = opened.headers["mcp-session-id"]
        self.http.headers["mcp-protocol-version"] = "2025-11-25"
        self.http.post(url, content=json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}))
        self.calls = 0

    def send(self, subject: str) -> str:
        """The id of the message sent; raises ``httpx2.HTTPError`` if not acknowledged."""
        self.calls += 1
        answer = self.http.post(self.url, content=json.dumps({
            "jsonrpc": "2.0", "id": self.calls, "method": "tools/call", "params": {
                "name": "send_message",
                "arguments": {"to": "gemini", "subject": subject, "body": "burst"}}}))
        answer.raise_for_status()
        result = answer.json()["result"]  # one JSON body, never an event stream
        assert not result.get("isError"), result
        return str(result["structuredContent"]["id"])


def test_sigterm_during_an_mcp_burst_finishes_every_send(root: Path) -> None:
    store = FileStore(root)
    unlimited(store)
    secret_of = {name: read_credential(authority.register(
        store, name, path=str(root.parent / f"{name}.cred")).path).secret
        for name in ("claude", "gemini")}
    port = free_port()
    log = root.parent / "server.log"
    server = serve(log, "--http", str(port), "--rate-limit", "100000")
    url = f"http://127.0.0.1:{port}/mcp"

    def up() -> bool:
        try:
            httpx2.get(url, timeout=5)
        except httpx2.TransportError:
            return False
        return True

    wait_for(up, what="the server to answer")
    sessions = [McpSession(url, secret_of["claude"]) for _ in range(6)]
    acked: list[str] = []
    failed: list[str] = []
    lock = threading.Lock()

    def burst(n: int) -> None:
        for i in range(10_000):
            try:
                sent = sessions[n].send(f"{n}-{i}")
            except httpx2.HTTPError as exc:
                with lock:
                    failed.append(type(exc).__name__)
                return
            with lock:
                acked.append(sent)

    threads = [threading.Thread(target=burst, args=(n,)) for n in range(len(sessions))]
    for t in threads:
        t.start()
    wait_for(lambda: len(acked) >= 30, what="some sends acknowledged")
    os.kill(server.pid, signal.SIGTERM)
    for t in threads:
        t.join(60)
    for session in sessions:
        session.http.close()
    assert server.wait(60) == -signal.SIGTERM
    stored = {i for i, _ in store.entries("gemini", ("unread", "read", "done"))}
    assert set(acked) <= stored and len(acked) == len(set(acked))
    # every send the server took was answered before it stopped: none half-done
    assert len(stored) == len(acked), (len(stored), len(acked), failed)
    assert "Traceback" not in log.read_text()
    ended = Mailbox(store, Identity("claude", "--agent")).sessions("claude")
    assert len(ended) == 6 and not any(s["online"] for s in ended)
