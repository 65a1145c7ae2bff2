"""mailslot's MCP server beside its peers, measured the same way with the official client.

As docs/performance.md's table: the official ``mcp`` client spawns each server over stdio; 200
sends (p50), then 50 reads of the newest 200 (p50; the peers cap a read at 100, so
their read is of 100), and spawn → ``tools/list`` (median of 5). mailslot's sends are
fsynced (file, then folder); letterbox 1.2.2's MCP send does not fsync. The servers take
turns call by call (who goes first alternating), so a burst of load on this shared
machine falls on both alike; every call must succeed, and mailslot's reads must return
every message sent.

The peers are pip-installed into their own venvs under ``.bench-peers/`` (never into the
project's dependencies; letterbox needs ``mcp<2``, so each gets its own). A peer that will
not install, or cannot run without services of its own, gets a row saying so instead of
a figure. ``agent-mailbox`` 0.8.2's MCP server is a client of its workbench (an HTTP
service with enrolled employees and tokens), so it is reported, not measured.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from common import ROOT, VENV_BIN, NotDone, Row, ms, percentile, process_time, unlimited

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


@dataclass
class Server:
    """One MCP server measured: how to start it, its send and read calls, and what a
    read's answer shows when it did its work."""

    params: StdioServerParameters
    send: tuple[str, dict[str, Any]]
    read: tuple[str, dict[str, Any]]
    read_did: Callable[[Any], bool]


async def _spawn_to_list(params: StdioServerParameters) -> float:
    start = time.perf_counter()
    async with Client(params, mode=MODE) as client:
        if not (await client.list_tools()).tools:
            raise NotDone("tools/list answered no tool")
        return time.perf_counter() - start


async def _timed(call: Callable[[], Awaitable[Any]], did: Callable[[Any], bool]) -> float:
    """One call's seconds; :class:`NotDone` if it failed or did not do its work."""
    start = time.perf_counter()
    result = await call()
    took = time.perf_counter() - start
    if getattr(result, "is_error", False) or not did(result):
        raise NotDone(f"call failed or did nothing: {str(result.content)[:300]}")
    return took


def _turns(names: list[str], n: int) -> list[str]:
    """Who goes first in turn ``n``: each in turn, so neither always follows the other."""
    return names if n % 2 == 0 else names[::-1]


async def _measure(servers: dict[str, Server]) -> dict[str, dict[str, float]]:
    """Every server's spawn -> tools/list, sends and reads, the servers taking turns
    call by call, so a burst of load on this shared machine falls on each alike."""
    names = list(servers)
    got: dict[str, dict[str, list[float]]] = {
        n: {"spawn": [], "send": [], "read": []} for n in names}
    for k in range(STARTS):
        for name in _turns(names, k):
            got[name]["spawn"].append(await _spawn_to_list(servers[name].params))
    async with contextlib.AsyncExitStack() as stack:
        clients = {n: await stack.enter_async_context(Client(servers[n].params, mode=MODE))
                   for n in names}
        for what, times in (("send", SENDS), ("read", READS)):
            for k in range(times):
                for name in _turns(names, k):
                    tool, arguments = getattr(servers[name], what)
                    did = servers[name].read_did if what == "read" else _answered
                    got[name][what].append(await _timed(
                        lambda c=clients[name], t=tool, a=arguments: c.call_tool(t, a), did))
    return {n: {"spawn": statistics.median(got[n]["spawn"]),
                "send": percentile(got[n]["send"], 50),
                "read": percentile(got[n]["read"], 50)} for n in names}


def _answered(result: Any) -> bool:
    return bool(result.content)


def _mailslot(tmp: Path) -> Server:
    env = {"MAILSLOT_DIR": str(tmp / "mailslot"), "HOME": str(tmp)}
    unlimited(tmp / "mailslot")
    params = StdioServerParameters(command=str(VENV_BIN / "mailslot"),
                                   args=["serve", "--agent", "bench"], env=env)
    return Server(params, ("send_message", {"to": "bench", "subject": "bench",
                                            "body": "x" * 500}),
                  ("read_messages", {"limit": SENDS}),  # all it sent itself, each time
                  lambda r: len((r.structured_content or {}).get("messages", ())) == SENDS)


def _letterbox(tmp: Path, bin_dir: Path) -> Server:
    home = tmp / "letterbox"
    env = {"HOME": str(tmp), "LETTERBOX_HOME": str(home), "LETTERBOX_CHANNEL": "bench",
           "LETTERBOX_SENDER": "bench", "LETTERBOX_INSTANCE_ID": "bench-1",
           "PATH": os.environ.get("PATH", "")}
    params = StdioServerParameters(command=str(bin_dir / "letterbox"), args=["mcp"], env=env)
    return Server(params, ("send_message", {"body": "x" * 500}),
                  ("check_messages", {"limit": 100}), _answered)


def run() -> list[Row]:
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        bin_dir, why = _peer_venv("letterbox", LETTERBOX)
        servers = {"mailslot": _mailslot(tmp)}
        found: dict[str, dict[str, float]] | None = None
        if bin_dir is not None:
            try:  # measured together, taking turns
                found = anyio.run(_measure, {**servers, "letterbox": _letterbox(tmp, bin_dir)})
            except Exception as exc:  # a peer's failure is a row, not a crash
                why = f"did not run ({type(exc).__name__}: {str(exc)[:60]})"
        if found is None:  # mailslot alone
            found = anyio.run(_measure, servers)
        mine, theirs = found["mailslot"], found.get("letterbox")
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
