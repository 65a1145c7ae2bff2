"""``claude-rewake`` and ``claude-channel``: the watcher checks the session wakes itself."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Result
from hookkit import sender
from mailslot import FileStore
from wake_helpers import configure, events

Cli = Callable[..., Result]
ONE_TRY = {"attempts": 1, "backoff_seconds": 0}


@pytest.mark.parametrize("method", ["claude-rewake", "claude-channel"])
def test_validate_states_what_each_needs_and_its_limits(root: Path, cli: Cli,
                                                        method: str) -> None:
    configure(root, {"claude": {"wake_on_mail": True, "wake_method": method}})
    r = cli("watch", "--validate")
    assert r.code == 0, r.out + r.err
    assert method in r.out and "install claude" in r.out
    assert ("86,400" in r.out) if method == "claude-rewake" else ("research preview" in r.out)


def test_rewake_with_no_waiter_running_tells_the_sender(root: Path, cli: Cli) -> None:
    configure(root, {"claude": {"wake_on_mail": True, "wake_method": "claude-rewake",
                                "wake_retry": ONE_TRY}})
    sent = sender(root, "gemini").send("claude", "hello", "x")
    assert cli("watch", "--once").code == 0
    failed = [e for e in events(root) if e["event"] == "wake_failed"]
    assert failed and "no Claude Code session" in json.dumps(failed)
    notices = sender(root, "gemini").inbox()
    assert [n.message.sender for n in notices] == ["mailslot"]
    assert sent.id in sender(root, "gemini").read(notices[0].message.id).message.body


def test_rewake_with_a_live_waiter_counts_as_woken(root: Path, cli: Cli) -> None:
    configure(root, {"claude": {"wake_on_mail": True, "wake_method": "claude-rewake",
                                "wake_retry": ONE_TRY}})
    sender(root, "gemini").send("claude", "hello", "x")
    FileStore(root).set_waiter("claude", "session-1", os.getpid())
    assert cli("watch", "--once").code == 0
    assert [e["event"] for e in events(root) if e["event"] in ("wake_ok", "wake_failed")] == [
        "wake_ok"]
    assert sender(root, "gemini").inbox() == []


def test_rewake_does_not_count_a_waiter_that_is_gone(root: Path, cli: Cli) -> None:
    configure(root, {"claude": {"wake_on_mail": True, "wake_method": "claude-rewake",
                                "wake_retry": ONE_TRY}})
    sender(root, "gemini").send("claude", "hello", "x")
    gone = subprocess.Popen(["true"])
    gone.wait()
    FileStore(root).set_waiter("claude", "session-1", gone.pid)
    assert cli("watch", "--once").code == 0
    assert "wake_failed" in [e["event"] for e in events(root)]


def test_channel_counts_only_a_running_channel_server(root: Path, cli: Cli) -> None:
    configure(root, {"claude": {"wake_on_mail": True, "wake_method": "claude-channel",
                                "wake_retry": ONE_TRY}})
    plain = sender(root, "claude").beacon(program="claude")
    plain.announce()
    sender(root, "gemini").send("claude", "one", "x")
    assert cli("watch", "--once").code == 0
    assert [e["event"] for e in events(root) if e["event"].startswith("wake_")][-1] == \
        "wake_failed"

    sender(root, "claude").beacon(program="claude", channel=True).announce()
    assert any(r.get("channel") for r in FileStore(root).presence())
    sender(root, "codex").send("claude", "two", "x")
    assert cli("watch", "--once").code == 0
    assert [e["event"] for e in events(root) if e["event"].startswith("wake_")][-1] == "wake_ok"
