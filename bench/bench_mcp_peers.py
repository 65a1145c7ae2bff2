"""mailslot's MCP server beside its peers, measured the same way with the official client.

As docs/performance.md's table: the official ``mcp`` client spawns each server over stdio; 200
sends (p50), then 50 reads of the newest 200 (p50; the peers cap a read at 100, so
their read is of 100), and spawn → ``tools/list`` (median of 5). mailslot's sends are
fsynced (file, then folder); letterbox 1.2.2's MCP send does not fsync.

The peers are pip-installed into their own venvs under ``.bench-peers/`` (never into the
project's dependencies; letterbox needs ``mcp<2``, so each gets its own). A peer that will
not install, or cannot run without services of its own, gets a row saying so instead of
a figure. ``agent-mailbox`` 0.8.2's MCP server is a client of its workbench (an HTTP
service with enrolled employees and tokens), so it is reported, not measured.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from common import ROOT, VENV_BIN, Row, ms, percentile, process_time, unlimited

MODE = "legacy"  # the initialize handshake every host sends, and all letterbox speaks
SENDS = 200
READS = 50
STARTS = 5
PEERS = ROOT / ".bench-peers"
LETTERBOX = "letterbox==1.2.2"
AGENT_MAILBOX = "agent-mailbox==0.8.2"


def _peer_venv(name: str, requirement: str) -> tuple[Path | None, str]:
    """The peer's venv bin folder, installing it on first use; or ``None`` and why."""
    venv = PEERS / name
    marker = venv / ".installed"
    if marker.exists() and marker.read_text() == requirement:
        return venv / "bin", ""
    try:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True,
                       capture_output=True, timeout=300)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", requirement], check=True,
                       capture_output=True, timeout=600)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        return None, f"did not install ({type(exc).__name__})"
    marker.write_text(requirement)
    return venv / "bin", ""


async def _spawn_to_list(params: StdioServerParameters) -> float:
    start = time.perf_counter()
    async with Client(params, mode=MODE) as client:
        await client.list_tools()
        return time.perf_counter() - start


async def _timed(call: Callable[[], Awaitable[Any]], times: int) -> list[float]:
    samples = []
    for _ in range(times):
        start = time.perf_counter()
        result = await call()
        samples.append(time.perf_counter() - start)
        if getattr(result, "is_error", False):
            raise RuntimeError(f"call failed: {result.content}")
    return samples


async def _measure(params: StdioServerParameters, send: tuple[str, dict[str, Any]],
                   read: tuple[str, dict[str, Any]]) -> dict[str, float]:
    starts = [await _spawn_to_list(params) for _ in range(STARTS)]
    async with Client(params, mode=MODE) as client:
        sends = await _timed(lambda: client.call_tool(*send), SENDS)
        reads = await _timed(lambda: client.call_tool(*read), READS)
    return {"spawn": statistics.median(starts), "send": percentile(sends, 50),
            "read": percentile(reads, 50)}


def _mailslot(tmp: Path) -> dict[str, float]:
    env = {"MAILSLOT_DIR": str(tmp / "mailslot"), "HOME": str(tmp)}
    unlimited(tmp / "mailslot")
    params = StdioServerParameters(command=str(VENV_BIN / "mailslot"),
                                   args=["serve", "--agent", "bench"], env=env)
    send = ("send_message", {"to": "bench", "subject": "bench", "body": "x" * 500})
    read = ("read_messages", {"limit": SENDS})
    return anyio.run(_measure, params, send, read)


def _letterbox(tmp: Path, bin_dir: Path) -> dict[str, float]:
    home = tmp / "letterbox"
    env = {"HOME": str(tmp), "LETTERBOX_HOME": str(home), "LETTERBOX_CHANNEL": "bench",
           "LETTERBOX_SENDER": "bench", "LETTERBOX_INSTANCE_ID": "bench-1",
           "PATH": os.environ.get("PATH", "")}
    params = StdioServerParameters(command=str(bin_dir / "letterbox"), args=["mcp"], env=env)
    send = ("send_message", {"body": "x" * 500})
    read = ("check_messages", {"limit": 100})
    return anyio.run(_measure, params, send, read)


def run() -> list[Row]:
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        mine = _mailslot(tmp)
        bin_dir, why = _peer_venv("letterbox", LETTERBOX)
        theirs: dict[str, float] | None = None
        if bin_dir is not None:
            try:
                theirs = _letterbox(tmp, bin_dir)
            except Exception as exc:  # a peer's failure is a row, not a crash
                why = f"did not run ({type(exc).__name__}: {str(exc)[:60]})"
        _, am_why = _peer_venv("agent-mailbox", AGENT_MAILBOX)
    am = am_why or "installs; its MCP server needs its workbench service: not measured"
    lb = "" if theirs is not None else f"letterbox: {why}"
    rows.append(Row("MCP send p50 (mailslot fsyncs; letterbox does not)",
                    ms(mine["send"]),
                    f"letterbox {ms(theirs['send'])}" if theirs else lb,
                    "<= letterbox", None if theirs is None else mine["send"] <= theirs["send"]))
    rows.append(Row(f"MCP read p50, {SENDS} messages (letterbox: 100, its cap)",
                    ms(mine["read"]),
                    f"letterbox {ms(theirs['read'])}" if theirs else lb,
                    "<= letterbox's 100",
                    None if theirs is None else mine["read"] <= theirs["read"]))
    sdk = process_time([sys.executable, "-c", "import mcp.server.mcpserver"], repeats=STARTS)
    peer = f"letterbox {ms(theirs['spawn'])}" if theirs else lb
    rows.append(Row("MCP spawn -> tools/list (median)", ms(mine["spawn"]),
                    f"{peer}; import of the mcp SDK alone {ms(sdk)}",
                    "<= 600 ms", mine["spawn"] <= 0.6))
    rows.append(Row(f"{AGENT_MAILBOX}", "-", am, "informational", None))
    return rows


if __name__ == "__main__":
    from common import print_table

    print_table(run())
