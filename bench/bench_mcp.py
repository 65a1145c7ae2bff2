"""The MCP server over stdio: start-up, and tool-call round trips as a host sees them.

A real ``mailslot serve`` process is driven with raw JSON-RPC lines (the legacy
``initialize`` handshake most hosts send), so the client's own cost is not measured.
Baselines from the same run: importing the MCP SDK in a fresh process (most of the
start-up), and the same service calls made in-process (what the round trip adds to).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from common import VENV_BIN, NotDone, Row, ms, percentile, process_time, unlimited
from mailslot import FileStore, Mailbox
from mailslot.access.identity import Identity

CALLS = 200
STARTS = 5
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "bench", "version": "0"}}}


PAGE = 20
"""Messages a read asks for: the mailbox holds more unread, so each read returns this many."""
DID = {"send_message": lambda result: bool(result.get("id")),
       "read_messages": lambda result: len(result.get("messages", ())) == PAGE}
"""What each timed call's structured result shows when it did its work."""


def did(tool: str, result: dict[str, Any]) -> None:
    """:class:`NotDone` unless ``result`` (a call's ``structuredContent``) shows that
    ``tool`` did its work: an id sent, a full page read."""
    if not DID[tool](result):
        raise NotDone(f"{tool} did not do its work: {str(result)[:300]}")


def _send(pipe: IO[str], message: dict[str, Any]) -> None:
    pipe.write(json.dumps(message) + "\n")
    pipe.flush()


def _answer(pipe: IO[str], request_id: int) -> dict[str, Any]:
    while True:
        line = pipe.readline()
        if not line:
            raise RuntimeError("the server closed its output")
        message = json.loads(line)
        if message.get("id") == request_id:
            if "error" in message or message["result"].get("isError"):
                raise RuntimeError(f"call failed: {message}")
            return dict(message)


def _start(root: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "MAILSLOT_DIR": str(root)}
    return subprocess.Popen([str(VENV_BIN / "mailslot"), "serve", "--agent", "bench"], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def _stop(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    proc.wait(timeout=10)
    proc.stdout.close()


def _start_times(root: Path) -> list[float]:
    samples = []
    for _ in range(STARTS):
        start = time.perf_counter()
        proc = _start(root)
        assert proc.stdin is not None and proc.stdout is not None
        _send(proc.stdin, INIT)
        _answer(proc.stdout, 0)
        samples.append(time.perf_counter() - start)
        _stop(proc)
    return samples


def _round_trips(root: Path) -> dict[str, list[float]]:
    proc = _start(root)
    assert proc.stdin is not None and proc.stdout is not None
    _send(proc.stdin, INIT)
    _answer(proc.stdout, 0)
    _send(proc.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    calls = {
        "send_message": {"to": "peer", "subject": "bench", "body": "x" * 500},
        "read_messages": {"limit": PAGE},
    }
    samples: dict[str, list[float]] = {name: [] for name in calls}
    request_id = 0
    for name, arguments in calls.items():
        for _ in range(CALLS):
            request_id += 1
            start = time.perf_counter()
            _send(proc.stdin, {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                               "params": {"name": name, "arguments": arguments}})
            answer = _answer(proc.stdout, request_id)
            samples[name].append(time.perf_counter() - start)
            did(name, answer["result"].get("structuredContent") or {})
    _stop(proc)
    return samples


def _in_process(root: Path) -> dict[str, list[float]]:
    box = Mailbox(FileStore(root), Identity("bench", "--agent"))
    samples: dict[str, list[float]] = {"send_message": [], "read_messages": []}
    for _ in range(CALLS):
        start = time.perf_counter()
        sent = box.send("peer", "bench", "x" * 500)
        samples["send_message"].append(time.perf_counter() - start)
        did("send_message", {"id": sent.id})
    for _ in range(CALLS):
        start = time.perf_counter()
        items, _ = box.read_page(limit=PAGE)
        samples["read_messages"].append(time.perf_counter() - start)
        did("read_messages", {"messages": items})
    return samples


def run() -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "mailbox"
        unlimited(root)
        seeder = Mailbox(FileStore(root), Identity("peer", "--agent"))
        for i in range(50):
            seeder.send("bench", f"seed {i}", "y" * 500)
        starts = _start_times(root)
        sdk_import = process_time([sys.executable, "-c", "import mcp.server.mcpserver"],
                                  repeats=STARTS)
        trips = _round_trips(root)
        local = _in_process(root)
    rows = [Row("serve: start to first response (median)", ms(percentile(starts, 50)),
                f"import mcp: {ms(sdk_import)}", "informational", None)]
    for name in ("send_message", "read_messages"):
        p50, p99 = percentile(trips[name], 50), percentile(trips[name], 99)
        rows.append(Row(f"stdio {name} round trip p50 / p99", f"{ms(p50)} / {ms(p99)}",
                        f"in-process p50 {ms(percentile(local[name], 50))}",
                        "informational", None))
    return rows


if __name__ == "__main__":
    from common import print_table

    print_table(run())
