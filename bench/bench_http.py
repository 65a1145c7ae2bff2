"""``serve --http``: tool-call round trips next to stdio's, and a bounded load on loopback.

Round trips: one client, raw JSON-RPC (the legacy ``initialize`` handshake, a session
id), ``send_message`` and ``read_messages`` as in ``bench_mcp``, whose stdio numbers are
measured again here so both sit in one run. Load: 50 clients at once, each its own
registered agent and MCP session (so each a server session of its own: the time to open
them is reported too), 200 calls each, sends and reads mixed; afterwards every
acknowledged send must be in its recipient's mailbox exactly once.
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx2

from bench_mcp import INIT, PAGE, _round_trips, did
from common import VENV_BIN, NotDone, Row, ms, per_second, percentile, unlimited
from mailslot import FileStore, Mailbox
from mailslot.access import authority
from mailslot.access.credentials import read_credential
from mailslot.access.identity import Identity
from mailslot.backends import open_store

CALLS = 200
OPENS = 30
CLIENTS = 50
LOAD_CALLS = 200
OPENS = 30
VERSION = "2025-11-25"


class Session:
    """One MCP session over HTTP, driven with raw JSON-RPC."""

    def __init__(self, url: str, secret: str) -> None:
        self.url = url
        self.http = httpx2.Client(timeout=120, headers={
            "authorization": f"Bearer {secret}", "content-type": "application/json",
            "accept": "application/json, text/event-stream"})
        first = self.http.post(url, content=json.dumps(INIT))
        first.raise_for_status()
        self.http.headers["mcp-session-id"] = first.headers["mcp-session-id"]
        self.http.headers["mcp-protocol-version"] = VERSION
        self.http.post(url, content=json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}))
        self.next_id = 0

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        answer = self.http.post(self.url, content=json.dumps(
            {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
             "params": {"name": tool, "arguments": arguments}}))
        answer.raise_for_status()
        data = [line[5:] for line in answer.text.splitlines() if line.startswith("data:")]
        message = json.loads(data[-1] if data else answer.text)
        result = message.get("result") or {}
        if "error" in message or result.get("isError"):
            raise RuntimeError(f"{tool} failed: {message}")
        return dict(result.get("structuredContent") or {})

    def close(self) -> None:
        """End the MCP session (``DELETE``, as the SDKs do), then the connection."""
        self.http.delete(self.url)
        self.http.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(root: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {**os.environ, "MAILSLOT_DIR": str(root)}
    proc = subprocess.Popen([str(VENV_BIN / "mailslot"), "serve", "--http", str(port),
                             "--rate-limit", "1000000"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx2.get(url, timeout=5)
            return proc, url
        except httpx2.TransportError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("serve --http did not start") from None
            time.sleep(0.05)


def _http_round_trips(url: str, secret: str) -> dict[str, list[float]]:
    session = Session(url, secret)
    calls: dict[str, dict[str, Any]] = {
        "send_message": {"to": "peer", "subject": "bench", "body": "x" * 500},
        "read_messages": {"limit": PAGE}}
    samples: dict[str, list[float]] = {name: [] for name in calls}
    samples["open"] = []
    for _ in range(OPENS):  # one client's sessions, one after another, each ended
        start = time.perf_counter()
        opened = Session(url, secret)
        samples["open"].append(time.perf_counter() - start)
        opened.close()
    for name, arguments in calls.items():
        for _ in range(CALLS):
            start = time.perf_counter()
            result = session.call(name, arguments)
            samples[name].append(time.perf_counter() - start)
            did(name, result)
    session.close()
    return samples


def _load(url: str, secrets: dict[str, str]
          ) -> tuple[list[float], dict[str, list[str]], float, list[float]]:
    names = sorted(secrets)
    latencies: list[float] = []
    opens: list[float] = []  # each client's handshake: a server session of its own
    sent: dict[str, list[str]] = {n: [] for n in names}
    lock = threading.Lock()
    failures: list[str] = []

    def client(me: str) -> None:
        rng = random.Random(me)
        try:
            start = time.perf_counter()
            session = Session(url, secrets[me])
            with lock:
                opens.append(time.perf_counter() - start)
            for i in range(LOAD_CALLS):
                start = time.perf_counter()
                if i % 2 == 0:
                    to = rng.choice([n for n in names if n != me])
                    facts = session.call("send_message", {"to": to, "subject": f"load {i}",
                                                          "body": "z" * 200, "new": True})
                    with lock:
                        sent[to].append(facts["id"])
                elif "messages" not in session.call("read_messages", {"limit": 20}):
                    raise NotDone("read_messages answered without its messages")
                with lock:
                    latencies.append(time.perf_counter() - start)
            session.close()
        except Exception as exc:  # reported in the table, never hidden
            with lock:
                failures.append(f"{me}: {exc}")

    threads = [threading.Thread(target=client, args=(n,)) for n in names]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise RuntimeError(f"{len(failures)} clients failed, first: {failures[0]}")
    return latencies, sent, time.perf_counter() - began, opens


def run() -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "mailbox"
        unlimited(root)
        # Fifty agents each reading its newest mail and then sending on are one long
        # chain of causes to the governor, stopped at its hop limit: none here, so each
        # send follows its causes as far as the governor looks without one.
        open_store(str(root)).update_config(
            lambda raw: raw["governor"].update(hop_limit=None) is None)
        store = FileStore(root)
        seeder = Mailbox(store, Identity("peer", "--agent"))
        for i in range(50):
            seeder.send("bench", f"seed {i}", "y" * 500)
        stdio = _round_trips(root)
        names = ["bench", *(f"load-{i:02d}" for i in range(CLIENTS))]
        secrets = {n: read_credential(authority.register(
            store, n, path=str(Path(tmp) / f"{n}.json")).path).secret for n in names}
        proc, url = _serve(root)
        try:
            http = _http_round_trips(url, secrets.pop("bench"))
            latencies, sent, took, opens = _load(url, secrets)
        finally:
            proc.terminate()
            proc.wait(60)
        stored = {n: [i for i, _ in store.entries(n, ("unread", "read", "done"))]
                  for n in sent}
    rows = []
    for name in ("send_message", "read_messages"):
        h, s = http[name], stdio[name]
        rows.append(Row(f"http {name} round trip p50 / p99",
                        f"{ms(percentile(h, 50))} / {ms(percentile(h, 99))}",
                        f"stdio {ms(percentile(s, 50))} / {ms(percentile(s, 99))}",
                        "informational", None))
    rows.append(Row("http MCP session opened, one client, p50 / p99",
                    f"{ms(percentile(http['open'], 50))} / {ms(percentile(http['open'], 99))}",
                    "initialize + initialized", "informational", None))
    acked = sum(len(v) for v in sent.values())
    exact = all(sorted(stored[n]) == sorted(set(sent[n])) == sorted(sent[n]) for n in sent)
    rows.append(Row(f"http load {CLIENTS} clients x {LOAD_CALLS} calls, p50 / p99",
                    f"{ms(percentile(latencies, 50))} / {ms(percentile(latencies, 99))}",
                    f"{per_second(len(latencies), took)} overall", "informational", None))
    rows.append(Row(f"http MCP session opened under load ({CLIENTS} at once), p50 / p99",
                    f"{ms(percentile(opens, 50))} / {ms(percentile(opens, 99))}",
                    "initialize + initialized", "informational", None))
    rows.append(Row("http load: acknowledged sends stored exactly once",
                    f"{acked} acked, {sum(len(v) for v in stored.values())} stored",
                    "every ack stored, none twice", "exact", exact))
    return rows


if __name__ == "__main__":
    from common import print_table

    print_table(run())
