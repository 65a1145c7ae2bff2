"""send -> the idle Claude Code session's next turn started: claude-peer vs claude-rewake.

The real Claude Code TUI (the pinned version, from the real-host suite's install folder:
``MAILSLOT_HOSTS_BIN`` or an install already made; nothing is downloaded here) runs in a
tmux pane, offline against the suite's scripted provider. One agent, one session; for
each round a message from ``codex`` is sent and the time until the provider receives the
model request carrying its notice is taken (the turn has started: Claude Code has read
the notice and asked its model). ``claude-peer``: a running ``mailslot watch`` hands the
notice to the session's own cross-session socket. ``claude-rewake``: the session's
background waiter exits 2 and Claude Code wakes the session. Same session, same run,
rounds alternating between the two, each after the session is idle again and the
watcher's last wake has ended (a claude-peer wake keeps the agent's lane for its receipt
window after the turn has started: a second wake within it waits).

The other way, in a second world: the model's tool call -> the mail in codex's inbox,
``SendMessage`` through a running ``mailslot bridge claude`` against mailslot's own MCP
``send_message`` (the baseline), rounds alternating in the same session. A round's time
runs from the provider's receipt of the request it answered with the call (its log's
``t``) to the time in the new message's id (when the store wrote it): the host's own
tool handling, the socket or the MCP server, and the send.

A round costs seconds of a real TUI, so there are few (``BENCH_CLAUDE_PEER_ROUNDS``,
default 10 each): p99 of 10 is their slowest round, said so in the row.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import ROOT, NotDone, Row, ms, percentile, unlimited

ROUNDS = int(os.environ.get("BENCH_CLAUDE_PEER_ROUNDS", "10"))
sys.path.insert(0, str(ROOT))


def _host_bin() -> Path | None:
    """The real-host suite's folder of host programs, if it is there already."""
    from tests.hosts.install_hosts import target

    given = os.environ.get("MAILSLOT_HOSTS_BIN")
    if given:
        return Path(given)
    folder = target(False)
    return folder / "node_modules" / ".bin" if (folder / ".complete").exists() else None


def run() -> list[Row]:
    bin_dir = _host_bin()
    if bin_dir is None or not (bin_dir / "claude").exists():
        return [Row("send -> Claude turn started (claude-peer, claude-rewake)",
                    "skipped: no installed Claude Code (make test-hosts installs it)", "", "",
                    None)]
    os.environ["MAILSLOT_HOSTS_BIN"] = str(bin_dir)  # the suite's conftest installs nothing
    from tests.hosts.harness import World, request_text, wait_for
    from tests.hosts.test_tui import READY, ask, open_tui

    with tempfile.TemporaryDirectory() as tmp:
        w = World(Path(tmp) / "w", "claude", bin_dir, {"call": None})
        watcher = None
        try:
            w.install("alice", "--hooks", "--wake")
            pane = open_tui(w)
            ask(w, pane, "Hello there")
            sessions = w.home / ".claude" / "sessions"

            waiters = w.mailbox / "waiters" / "alice"

            def armed() -> bool:
                return waiters.is_dir() and any(waiters.iterdir())

            def idle() -> bool:
                texts = [p.read_text() for p in sessions.glob("*.json")]
                return any(t and json.loads(t).get("status") == "idle" for t in texts)

            watcher = subprocess.Popen(
                [str(Path(sys.executable).parent / "mailslot"), "--dir", str(w.mailbox),
                 "watch"], cwd=w.project, env=w.env, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL)
            times: dict[str, list[float]] = {"claude-peer": [], "claude-rewake": []}
            attempts: dict[str, list[float]] = {"claude-peer": []}
            sent_ids: list[str] = []
            for n in range(ROUNDS * 2):
                method = "claude-peer" if n % 2 == 0 else "claude-rewake"
                _choose(w, method)
                pane.wait_screen(READY["claude"], 60)
                wait_for(idle, 60, "the session to be idle")
                if method == "claude-rewake":
                    wait_for(armed, 60, "the waiter to arm")
                    time.sleep(0.3)  # past the waiter's first look, into its wait
                # the previous wake is over: a claude-peer wake keeps the agent's lane
                # for its receipt window (RECEIPT_SECONDS) after the turn has started
                wait_for(lambda: _ended(w.mailbox, sent_ids), 60, "the last wake to end")
                before = len(w.provider.model_requests())
                began = time.time()
                sent = w.send("codex", "alice", f"round {n}", "x")
                sent_ids.append(sent)
                mark = f"codex sent message {sent}"
                woke = wait_for(lambda b=before, m=mark: [  # type: ignore[misc]
                    r for r in w.provider.model_requests()[b:] if m in request_text(r)],
                    60, f"round {n}'s turn")[0]
                times[method].append(woke["t"] - began)
                if method == "claude-peer":
                    attempts[method].append(_attempted(w.mailbox, sent) - began)
                    wait_for(lambda s=sent: _ended(w.mailbox, [s]), 60, "the wake to end")
                    _through_the_door(w.mailbox, sent)
        finally:
            if watcher is not None:
                watcher.terminate()
                watcher.wait(timeout=30)
            w.close()
    door = attempts["claude-peer"]
    notes = {"claude-peer": f"watcher's attempt began p50 {ms(percentile(door, 50))}",
             "claude-rewake": "real TUI, offline"}
    rows = _rows("send -> Claude turn started", times, notes)
    return rows + _rows("Claude tool call -> mail in codex's inbox", *_bridge_times(bin_dir))


def _rows(what: str, times: dict[str, list[float]], notes: dict[str, str]) -> list[Row]:
    """p50 and p99 of each way, the way's note as the baseline column."""
    rows = []
    for way, samples in times.items():
        rows.append(Row(f"{what}, {way}, p50 ({ROUNDS} rounds)",
                        ms(percentile(samples, 50)), notes[way], "", None))
        rows.append(Row(f"{what}, {way}, p99 (= slowest of {ROUNDS})",
                        ms(percentile(samples, 99)), notes[way], "", None))
    return rows


BRIDGE_WAYS = {"SendMessage via bridge": "SendMessage",
               "mailslot MCP send_message": "mcp__mailslot__send_message"}


def _bridge_times(bin_dir: Path) -> tuple[dict[str, list[float]], dict[str, str]]:
    """The model's call -> the mail in codex's inbox, each way (module docstring)."""
    from tests.hosts.harness import MAILSLOT, World, merge_json, wait_for
    from tests.hosts.test_tui import ask, open_tui

    times: dict[str, list[float]] = {way: [] for way in BRIDGE_WAYS}
    with tempfile.TemporaryDirectory() as tmp:
        w = World(Path(tmp) / "w", "claude", bin_dir, {"call": None})
        bridge = None
        try:
            w.install("alice", "--hooks")
            unlimited(w.mailbox)  # 20 sends from alice to codex in a minute: not a loop
            settings = w.home / ".claude" / "settings.json"
            allow = json.loads(settings.read_text())["permissions"]["allow"]
            merge_json(settings, {"permissions": {"allow": [*allow, "SendMessage"]}})
            w.send("bob", "codex", "hello", "codex has a mailbox")
            pane = open_tui(w)
            ask(w, pane, "Hello there")
            bridge = subprocess.Popen([MAILSLOT, "--dir", str(w.mailbox), "bridge", "claude"],
                                      cwd=w.project, env=w.env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
            sessions = w.home / ".claude" / "sessions"
            wait_for(lambda: any("mailslotBridge" in p.read_text()
                                 for p in sessions.glob("*.json")), 60, "the bridge's record")
            for n in range(ROUNDS * 2):
                way = list(BRIDGE_WAYS)[n % 2]
                tool, subject = BRIDGE_WAYS[way], f"bench round {n}"
                args = ({"to": "codex", "message": subject} if tool == "SendMessage" else
                        {"to": "codex", "subject": subject, "body": subject})
                before = len(w.provider.model_requests())
                w.provider.script({"call": {"tool": tool, "args": args, "each_turn": True}})
                pane.type(f"Round {n}")
                mail = wait_for(lambda s=subject: [  # type: ignore[misc]
                    m for m in w.inbox("codex") if m["subject"] == s], 90, f"round {n}'s mail")
                call = next(r for r in w.provider.model_requests()[before:]
                            if r["reply"] == f"tool:{tool}")
                times[way].append(_written(mail[0]["id"]) - call["t"])
                wait_for(lambda b=before: [  # type: ignore[misc]
                    r for r in w.provider.model_requests()[b:] if r["reply"] == "text"],
                    90, f"round {n}'s turn to end")
                wait_for(lambda: _idle(sessions), 60, "the session to be idle")
        finally:
            if bridge is not None:
                bridge.terminate()
                bridge.wait(timeout=30)
            w.close()
    return times, {"SendMessage via bridge": "baseline: the MCP tool, same session",
                   "mailslot MCP send_message": "the baseline (real TUI, offline)"}


def _written(message_id: str) -> float:
    """When the store wrote ``message_id`` (the UTC time its id starts with)."""
    from datetime import UTC, datetime

    return datetime.strptime(message_id[:22], "%Y-%m-%d_%H%M%S.%f").replace(
        tzinfo=UTC).timestamp()


def _idle(sessions: Path) -> bool:
    """Does a Claude Code session's own record (not a bridge's) say idle?"""
    records = [json.loads(t) for p in sessions.glob("*.json") if (t := p.read_text())]
    return any(r.get("status") == "idle" and "mailslotBridge" not in r for r in records)


def _ended(mailbox: Path, ids: list[str]) -> bool:
    """Has the watcher logged an outcome for every one of ``ids``?"""
    log = mailbox / "log" / "events.jsonl"
    lines = log.read_text().splitlines() if log.exists() else []
    done = {e.get("id") for e in map(json.loads, lines)
            if e.get("event") in ("wake_ok", "wake_failed")}
    return all(i in done for i in ids)


def _through_the_door(mailbox: Path, message_id: str) -> None:
    """A claude-peer round's turn was started by the door, not by a fallback: its wake
    ended ``wake_ok`` by the claude-peer method (else the round timed something else)."""
    lines = (mailbox / "log" / "events.jsonl").read_text().splitlines()
    ends = [e for e in map(json.loads, lines)
            if e.get("id") == message_id and e.get("event") in ("wake_ok", "wake_failed")]
    if not ends or ends[-1]["event"] != "wake_ok" or ends[-1].get("method") != "claude-peer":
        raise NotDone(f"the claude-peer round's wake of {message_id} ended "
                      f"{ends[-1] if ends else 'unlogged'}")


def _attempted(mailbox: Path, message_id: str) -> float:
    """When the watcher's wake attempt for ``message_id`` began (the events log)."""
    from datetime import datetime

    for line in (mailbox / "log" / "events.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("event") == "wake_attempt" and event.get("id") == message_id:
            return datetime.fromisoformat(event["ts"]).timestamp()
    raise RuntimeError(f"no wake attempt logged for {message_id}")


def _choose(w: Any, method: str) -> None:
    path = w.mailbox / "config.json"
    config = json.loads(path.read_text())
    config["agents"]["alice"]["wake_method"] = method
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(config))
    tmp.replace(path)
