"""mailslot's two stdio wires in one run: the SDK's public path against the fast wire.

``mailslot serve`` uses its own wire (``mcp_stdio``: pipes read and written by the event
loop) where the SDK has the shape it needs, and the SDK's ``run_stdio_async`` otherwise.
The fast wire is kept only while it wins, so this measures both with the official client:
200 sends, then 50 reads of the newest 200, per wire, in alternated rounds (the load on
a shared machine moves between series). The public path is forced as an SDK of another
shape would force it: by a server whose shape check finds nothing. Besides wall-clock
p50s, the server's own CPU time per call (from ``/proc``), which load disturbs less.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from common import VENV_BIN, NotDone, Row, ms, percentile, unlimited

SENDS = 200
READS = 50
ROUNDS = 5
_PUBLIC = ("import sys\n"
           "from mailslot.frontends.mcp import stdio as mcp_stdio\n"
           "mcp_stdio.sdk_shape = lambda server: None\n"
           "from mailslot.entry import main\n"
           "sys.argv[0] = 'mailslot'\n"
           "sys.exit(main())\n")
WIRES = ("public", "fast")


def _children_cpu() -> float:
    """CPU seconds used so far by this process's children (the server under test)."""
    total, me, tick = 0.0, os.getpid(), os.sysconf("SC_CLK_TCK")
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


async def _series(call: Callable[[], Awaitable[Any]], times: int,
                  walls: list[float], did: Callable[[dict[str, Any]], bool]) -> float:
    """Append each call's wall time to ``walls``; the server's CPU seconds per call.
    Each call must have done its work (``did`` of its structured result)."""
    cpu = _children_cpu()
    for _ in range(times):
        start = time.perf_counter()
        result = await call()
        walls.append(time.perf_counter() - start)
        if result.is_error or not did(result.structured_content or {}):
            raise NotDone(f"call failed or did nothing: {str(result.content)[:300]}")
    return (_children_cpu() - cpu) / times


async def _round(params: StdioServerParameters, got: dict[str, list[float]]) -> None:
    async with Client(params, mode="legacy") as client:
        got["send cpu"].append(await _series(
            lambda: client.call_tool("send_message", {"to": "bench", "subject": "bench",
                                                      "body": "x" * 500}),
            SENDS, got["send"], lambda sent: bool(sent.get("id"))))
        got["read cpu"].append(await _series(  # each read returns all it sent to itself
            lambda: client.call_tool("read_messages", {"limit": SENDS}), READS, got["read"],
            lambda page: len(page.get("messages", ())) == SENDS))


def _params(wire: str, folder: Path, home: Path) -> StdioServerParameters:
    env = {"MAILSLOT_DIR": str(folder), "HOME": str(home)}
    serve = ["serve", "--agent", "bench"]
    if wire == "public":
        return StdioServerParameters(command=sys.executable, args=["-c", _PUBLIC, *serve],
                                     env=env)
    return StdioServerParameters(command=str(VENV_BIN / "mailslot"), args=serve, env=env)


def run() -> list[Row]:
    got = {wire: {"send": [], "read": [], "send cpu": [], "read cpu": []}
           for wire in WIRES}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        for n in range(ROUNDS):
            for wire in WIRES if n % 2 == 0 else WIRES[::-1]:
                folder = tmp / f"{wire}-{n}"
                unlimited(folder)
                anyio.run(_round, _params(wire, folder, tmp), got[wire])
        loads.append(os.getloadavg()[0])
    load = f"load {min(loads):.1f}-{max(loads):.1f}"
    rows = []
    for what, count in (("send", SENDS), ("read", READS)):
        public, fast = (percentile(got[w][what], 50) for w in WIRES)
        label = "send" if what == "send" else f"read of {SENDS}"
        rows.append(Row(f"MCP stdio {label} p50 ({ROUNDS}x{count}), fast wire", ms(fast),
                        f"public path {ms(public)} ({load})", "<= public", fast <= public))
        cpu_public, cpu_fast = (sorted(got[w][f"{what} cpu"])[ROUNDS // 2] for w in WIRES)
        rows.append(Row(f"MCP stdio {label}: server CPU a call (median round), fast wire",
                        ms(cpu_fast), f"public path {ms(cpu_public)}", "informational",
                        None))
    return rows


if __name__ == "__main__":
    from common import print_table

    print_table(run())
