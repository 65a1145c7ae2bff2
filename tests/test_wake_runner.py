"""Claim, attempt, retry, give up: the runner over a real store and real programs."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mailslot import FileStore, Mailbox
from mailslot.store import WakeEntry
from mailslot.wake.claims import Queue
from mailslot.wake.runner import WakeRunner
from wake_helpers import calls, configure, events, fake_host

Box = Callable[[str | None], Mailbox]


class Clock:
    """A clock the test moves, so backoff is checked without waiting."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def command_agent(program: Path, **extra: Any) -> dict[str, Any]:
    return {"wake_on_mail": True, "wake_method": "command",
            "command": [str(program), "{id}", "{from}", "{to}"], **extra}


def test_command_gets_placeholders_and_the_message_on_stdin(
        box: Box, root: Path, bin_dir: Path) -> None:
    record = fake_host(bin_dir, "notify")
    configure(root, {"gemini": command_agent(bin_dir / "notify")})
    m = box("claude").send("gemini", "Schema", "the body")
    done = WakeRunner(FileStore(root)).run_agent("gemini")
    assert [r.outcome.ok for r in done.results] == [True]
    [call] = calls(record)
    assert call["argv"] == [m.id, "claude", "gemini"]
    assert json.loads(call["stdin"])["body"] == "the body"
    assert call["env"]["MAILSLOT_AGENT"] == "gemini"
    assert call["env"]["MAILSLOT_DIR"] == str(root)
    kinds = [(e["event"], e.get("attempt")) for e in events(root)]
    assert kinds == [("wake_queued", None), ("wake_attempt", 1), ("wake_ok", 1)]
    assert Queue(FileStore(root)).agents() == []


def test_failures_back_off_then_the_sender_is_told(box: Box, root: Path, bin_dir: Path) -> None:
    fake_host(bin_dir, "notify", code=3)
    configure(root, {"gemini": command_agent(bin_dir / "notify")},
              wake_retry={"attempts": 3, "backoff_seconds": 5, "backoff_factor": 2})
    m = box("claude").send("gemini", "Private subject", "secret body")
    clock = Clock()
    runner = WakeRunner(FileStore(root), clock=clock)
    first = runner.run_agent("gemini")
    assert first.results[0].retry_in == 5 and first.next_due == clock.now + 5
    clock.now += 4.9
    assert runner.run_agent("gemini").results == []  # not due yet
    clock.now += 0.1
    second = runner.run_agent("gemini")
    assert second.results[0].attempt == 2 and second.results[0].retry_in == 10
    clock.now += 10
    third = runner.run_agent("gemini")
    assert third.results[0].told == "claude" and third.next_due is None
    failed = [e for e in events(root) if e["event"] == "wake_failed"]
    assert [(e["attempt"], e["final"]) for e in failed] == [(1, False), (2, False), (3, True)]
    assert failed[0]["reason"] == "notify exited with status 3"
    notice = box("claude").inbox()[0].message
    assert notice.sender == "mailslot" and notice.subject == "Could not wake gemini"
    body = box("claude").read(notice.id).message.body
    assert m.id in body and "3 times" in body and "waits in gemini's inbox" in body
    assert "Private subject" not in body and "secret body" not in body
    assert [i.message.id for i in box("gemini").inbox()] == [m.id]  # delivered regardless
    assert Queue(FileStore(root)).agents() == []
    log = (root / "log" / "events.jsonl").read_text()
    assert "Private subject" not in log and "secret body" not in log


def test_no_wake_for_mail_already_read(box: Box, root: Path, bin_dir: Path) -> None:
    record = fake_host(bin_dir, "notify")
    configure(root, {"gemini": command_agent(bin_dir / "notify")})
    m = box("claude").send("gemini", "s", "x")
    box("gemini").read(m.id)
    done = WakeRunner(FileStore(root)).run_agent("gemini")
    assert done.results[0].skipped and calls(record) == []
    assert events(root)[-1]["reason"] == "the message is already read"


def test_turning_wakes_off_applies_to_mail_already_queued(
        box: Box, root: Path, bin_dir: Path) -> None:
    record = fake_host(bin_dir, "notify")
    configure(root, {"gemini": command_agent(bin_dir / "notify")})
    box("claude").send("gemini", "s", "x")
    configure(root, {"gemini": command_agent(bin_dir / "notify", wake_on_mail=False)})
    WakeRunner(FileStore(root)).run_agent("gemini")
    assert calls(record) == []
    assert events(root)[-1]["reason"].startswith("no longer allowed")


def test_a_config_error_at_wake_time_fails_closed_naming_the_field(
        box: Box, root: Path) -> None:
    configure(root, {"gemini": {"wake_on_mail": True, "wake_method": "tmux"}})
    box("claude").send("gemini", "s", "x")
    done = WakeRunner(FileStore(root)).run_agent("gemini")
    assert done.results[0].told == "claude"  # no retry: config errors do not heal
    assert "agents.gemini.tmux_target is missing" in events(root)[-1]["reason"]


def test_unknown_method_names_the_field(box: Box, root: Path) -> None:
    configure(root, {"gemini": {"wake_on_mail": True, "wake_method": "carrier-pigeon"}})
    box("claude").send("gemini", "s", "x")
    WakeRunner(FileStore(root)).run_agent("gemini")
    assert "agents.gemini.wake_method 'carrier-pigeon' is not a wake method" in (
        events(root)[-1]["reason"])


def test_a_claim_left_by_a_stopped_watcher_is_retried(box: Box, root: Path, bin_dir: Path) -> None:
    record = fake_host(bin_dir, "notify")
    configure(root, {"gemini": command_agent(bin_dir / "notify")})
    m = box("claude").send("gemini", "s", "x")
    store = FileStore(root)
    assert Queue(store).claim(WakeEntry(m.id, "gemini")) is not None  # then "dies"
    assert Queue(store).pending("gemini") == []
    done = WakeRunner(store).run_agent("gemini")
    assert [(r.attempt, r.outcome.ok) for r in done.results] == [(1, False), (2, True)]
    assert "interrupted" in done.results[0].outcome.reason
    assert len(calls(record)) == 1


def test_command_runs_once_per_message_in_order(box: Box, root: Path, bin_dir: Path) -> None:
    record = fake_host(bin_dir, "notify")
    configure(root, {"gemini": command_agent(bin_dir / "notify")})
    ids = [box("claude").send("gemini", f"m{n}", "x").id for n in range(3)]
    WakeRunner(FileStore(root)).run_agent("gemini")
    assert [c["argv"][0] for c in calls(record)] == ids


def test_a_slow_wake_is_stopped_at_the_timeout(box: Box, root: Path, bin_dir: Path) -> None:
    fake_host(bin_dir, "notify", hang_first=True)
    configure(root, {"gemini": command_agent(
        bin_dir / "notify", wake_retry={"timeout_seconds": 5, "backoff_seconds": 0})})
    # The retry is a whole Python process that must finish within the same bound: 5 s,
    # not half a second, so a loaded machine does not time out the healthy run too.
    box("claude").send("gemini", "s", "x")
    done = WakeRunner(FileStore(root)).run_agent("gemini")
    assert "did not finish within 5 s" in done.results[0].outcome.reason
    assert done.results[1].outcome.ok  # the retry ran at once (backoff 0) and worked


def test_a_failed_program_reports_its_stderr_with_secrets_hidden(tmp_path: Path) -> None:
    import sys
    import threading

    from mailslot.wake.process import Spawn, run

    program = tmp_path / "host"
    program.write_text(f"#!{sys.executable}\nimport os, sys\n"
                       "print('bad token ' + os.environ['HOST_API_TOKEN'], file=sys.stderr)\n"
                       "sys.exit(2)\n")
    program.chmod(0o755)
    spawn = Spawn([str(program)], env={"HOST_API_TOKEN": "tok-123456"})
    reason = run(spawn, 30, threading.Event())
    assert reason == "host exited with status 2; stderr: bad token <secret>"
    ok = tmp_path / "quiet"
    ok.write_text(f"#!{sys.executable}\nimport sys\nprint('all fine', file=sys.stderr)\n")
    ok.chmod(0o755)
    assert run(Spawn([str(ok)]), 30, threading.Event()) is None


class _CountingPresence(FileStore):
    """A file store that counts how often every session's presence was read."""

    reads = 0

    def presence(self) -> list[dict[str, Any]]:
        type(self).reads += 1
        return super().presence()


def test_presence_is_read_only_for_a_queued_agent_without_a_host(
        box: Box, root: Path, bin_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every session's record is read (and parsed) to place an agent by where it was
    last seen; an agent whose ``host`` is set needs none of that, at every look."""
    fake_host(bin_dir, "notify")
    monkeypatch.setenv("MAILSLOT_HOST", "here")
    configure(root, {"gemini": command_agent(bin_dir / "notify", host="here"),
                     "codex": command_agent(bin_dir / "notify", host="elsewhere"),
                     "pi": command_agent(bin_dir / "notify")})
    runner = WakeRunner(_CountingPresence(root))
    for agent in ("gemini", "codex"):
        box("claude").send(agent, "s", "x")
    assert runner.agents() == ["gemini"] and _CountingPresence.reads == 0
    box("claude").send("pi", "s", "x")  # never seen, no host: any watcher wakes it
    assert runner.agents() == ["gemini", "pi"] and _CountingPresence.reads == 1
