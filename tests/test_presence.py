"""Presence: who is online now, who was last seen when, and crashed servers dropping out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from conftest import Result
from mailslot import FileStore, Mailbox
from mailslot.mail.presence import STALE_SECONDS, hostname, last_machines, pid_alive, summarize

Box = Callable[[str | None], Mailbox]
NOW = datetime(2026, 9, 21, 14, 0, tzinfo=datetime.now().astimezone().tzinfo)


def dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          check=True, capture_output=True, text=True)
    return int(proc.stdout)


def record(pid: int, beat: datetime, host: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"pid": pid, "hostname": host or hostname(), "program": "claude", "cwd": "/p",
            "started": (beat - timedelta(minutes=5)).isoformat(),
            "heartbeat": beat.isoformat(), **extra}


def test_online_needs_a_fresh_heartbeat_and_a_live_process(root: Path) -> None:
    store = FileStore(root)
    stale = NOW - timedelta(seconds=STALE_SECONDS + 1)
    store.write_presence("fresh", "1", record(os.getpid(), NOW))
    store.write_presence("stale", "2", record(os.getpid(), stale))
    store.write_presence("crashed", "3", record(dead_pid(), NOW))
    store.write_presence("elsewhere", "4", record(dead_pid(), NOW, host="other-machine"))
    store.write_presence("stopped", "5", record(os.getpid(), NOW,
                                                stopped=(NOW - timedelta(seconds=1)).isoformat()))
    seen = summarize(store.presence(), NOW)
    assert {n for n, p in seen.items() if p.online} == {"fresh", "elsewhere"}
    assert seen["stale"].last_seen == stale.isoformat()
    assert seen["crashed"].last_seen == NOW.isoformat()
    assert seen["stopped"].last_seen == (NOW - timedelta(seconds=1)).isoformat()
    assert seen["fresh"].sessions[0].program == "claude"


def test_unreadable_records_are_ignored(root: Path) -> None:
    store = FileStore(root)
    store.write_presence("claude", "1", record(os.getpid(), NOW))
    folder = root / "presence" / "claude"
    (folder / "2.json").write_text("{not json")
    (folder / "3.json").write_text(json.dumps({"pid": "x"}))
    (folder / "4.json").symlink_to(folder / "1.json")
    assert [r["key"] for r in store.presence()] == ["1", "3"]
    assert len(summarize(store.presence(), NOW)["claude"].sessions) == 1


def test_beacon_announces_beats_and_stops(box: Box, root: Path) -> None:
    ticks = iter(range(100))

    def clock() -> datetime:  # ten seconds later on every look
        return NOW + timedelta(seconds=10 * next(ticks))

    beacon = box("claude").beacon(program="codex", cwd="/work", clock=clock)
    beacon.announce()
    (first,) = FileStore(root).presence()
    beacon.beat()
    (mine,) = FileStore(root).presence()
    assert mine["pid"] == os.getpid() and mine["program"] == "codex" and mine["cwd"] == "/work"
    assert mine["started"] == NOW.isoformat() and mine["heartbeat"] > first["heartbeat"]
    beacon.stop()
    (stopped,) = FileStore(root).presence()
    assert stopped["stopped"] == stopped["heartbeat"] > mine["heartbeat"]
    later = datetime.fromisoformat(stopped["stopped"]) + timedelta(seconds=1)
    assert not summarize([stopped], later)["claude"].online


def test_announce_forgets_only_this_agents_gone_servers(box: Box, root: Path) -> None:
    store = FileStore(root)
    store.write_presence("claude", "1", record(dead_pid(), NOW))
    store.write_presence("claude", "2", record(os.getppid(), datetime.now().astimezone()))
    store.write_presence("claude", "3", record(dead_pid(), NOW, host="other-machine"))
    store.write_presence("gemini", "4", record(dead_pid(), NOW))
    box("claude").beacon().announce()
    keys = {(r["agent"], r["key"]) for r in store.presence()}
    assert keys == {("claude", "2"), ("claude", "3"), ("claude", str(os.getpid())),
                    ("gemini", "4")}


def test_pid_alive() -> None:
    assert pid_alive(os.getpid())
    assert not pid_alive(dead_pid())


def test_who_shows_online_and_last_seen(cli: Callable[..., Result], root: Path) -> None:
    store = FileStore(root)
    now = datetime.now().astimezone()
    store.write_presence("claude", "1", record(os.getpid(), now))
    store.write_presence("gemini", "2", record(dead_pid(), now - timedelta(hours=1)))
    cli("--agent", "codex", "send", "--to", "claude", "--subject", "s", "--body", "b")
    shown = cli("who")
    assert shown.code == 0
    lines = {line.split()[0]: line for line in shown.out.splitlines()}
    assert "online (claude)" in lines["claude"] and lines["claude"].endswith("mailbox, server")
    assert f"last seen {(now - timedelta(hours=1)).isoformat()[:16].replace('T', ' ')}" in (
        lines["gemini"])
    assert "no server seen" in lines["codex"]
    data = {a["name"]: a for a in json.loads(cli("who", "--json").out)}
    assert data["claude"]["online"] is True and data["claude"]["sessions"][0]["pid"] > 0
    assert data["gemini"]["online"] is False and data["gemini"]["sessions"] == []


def test_an_agents_machine_is_where_its_presence_was_last_seen() -> None:
    """The default of ``agents.NAME.host``: the newest record's machine; a
    record without one (older mailslot) decides nothing."""
    earlier = NOW - timedelta(hours=1)
    records = [{**record(1, earlier, machine="laptop"), "agent": "gemini", "key": "1"},
               {**record(2, NOW, machine="vm"), "agent": "gemini", "key": "2"},
               {**record(3, NOW), "agent": "codex", "key": "3"}]
    assert last_machines(records) == {"gemini": "vm"}
