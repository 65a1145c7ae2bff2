"""Claude Code's background waiter (``mailslot hook claude wait``) as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hookkit import fixture, sender
from support import run_cli, wait_for
from wake_helpers import configure

AGENT = "claude"
STOP = json.loads(fixture("claude-stop"))
SESSION = STOP["session_id"]


def start_waiter(root: Path, *, session: str = SESSION, agent: str | None = AGENT,
                 env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "mailslot", "hook", "claude", "wait"]
    if agent:
        argv += ["--agent", agent]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE,
                            env=env or {**os.environ, "MAILSLOT_DIR": str(root)})
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({**STOP, "session_id": session}).encode())
    proc.stdin.close()
    return proc


def armed(root: Path, proc: subprocess.Popen[bytes], session: str = SESSION) -> None:
    """Wait until ``proc`` has recorded itself as the session's waiter."""
    record = root / "waiters" / AGENT / session
    wait_for(lambda: record.is_file() and record.read_text() == str(proc.pid),
             timeout=30, what="the waiter to arm")


def outcome(proc: subprocess.Popen[bytes], timeout: float = 60) -> tuple[int, str]:
    """How ``proc`` ended. "At once" is within a minute: a waiter that does not leave
    waits a day, and a loaded machine can take seconds just to start Python."""
    proc.wait(timeout=timeout)
    assert proc.stdout is not None and proc.stderr is not None
    err = proc.stderr.read().decode()
    proc.stdout.close()
    proc.stderr.close()
    return proc.returncode, err


@pytest.fixture(autouse=True)
def opted_in(root: Path) -> None:
    """The agent's config chooses this wake, as `install claude --hooks --wake` sets it."""
    configure(root, {AGENT: {"wake_on_mail": True, "wake_method": "claude-rewake"}})


@pytest.fixture
def waiters() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None and not stream.closed:
                stream.close()


def test_mail_from_another_process_wakes_the_session(
        root: Path, waiters: list[subprocess.Popen[bytes]]) -> None:
    sender(root, "gemini").send("codex", "warm-up", "so the mailbox exists")
    waiters.append(proc := start_waiter(root))
    armed(root, proc)
    sent = run_cli("--agent", "gemini", "send", "--to", AGENT, "--subject", "Secret subject",
                   "--body", "Secret body", "--json", env={**os.environ, "MAILSLOT_DIR": str(root)})
    assert sent.returncode == 0, sent.stderr
    message_id = json.loads(sent.stdout)["id"]
    code, err = outcome(proc)
    assert code == 2
    assert f"gemini sent message {message_id}" in err and "mailslot --agent claude" in err
    assert "Secret" not in err and "not instructions" in err
    # the tool by the name Claude Code's model loads it with (its MCP tools are deferred)
    assert "the MCP tool mcp__mailslot__read_messages." in err
    # the notice is a showing, on the delivery ladder, once it was written
    ladder = sender(root, "gemini").status(message_id).recipients[0]
    assert ladder.rung == "surfaced" and ladder.surfaced is not None
    assert (ladder.surfaced["how"], ladder.surfaced["host"], ladder.surfaced["session"]) == (
        "notice", "claude", SESSION)


def test_only_directed_mail_not_yet_shown_wakes_it(
        root: Path, waiters: list[subprocess.Popen[bytes]]) -> None:
    gemini = sender(root, "gemini")
    already = gemini.send(AGENT, "shown at session start", "x")
    start = run_cli("hook", "claude", "session-start", "--agent", AGENT,
                    stdin=json.dumps({"session_id": SESSION, "source": "startup"}).encode(),
                    env={**os.environ, "MAILSLOT_DIR": str(root)})
    assert already.id in start.stdout
    waiters.append(proc := start_waiter(root))
    armed(root, proc)
    gemini.broadcast("to everyone", "x")
    gemini.send("codex", "for someone else", "x")
    assert proc.poll() is None
    fresh = gemini.send(AGENT, "new", "x")
    code, err = outcome(proc)
    assert code == 2 and fresh.id in err
    assert already.id not in err and "broadcast" not in err and "codex" not in err

    # What it announced is recorded: the next waiter of the session waits for newer mail.
    waiters.append(again := start_waiter(root))
    armed(root, again)
    newer = gemini.send(AGENT, "newer", "x")
    code, err = outcome(again)
    assert code == 2 and newer.id in err and fresh.id not in err


def test_a_second_waiter_for_the_session_replaces_the_first(
        root: Path, waiters: list[subprocess.Popen[bytes]]) -> None:
    sender(root, "gemini").send("codex", "warm-up", "x")
    waiters.append(first := start_waiter(root))
    armed(root, first)
    waiters.append(other_session := start_waiter(root, session="another-session"))
    armed(root, other_session, "another-session")
    waiters.append(second := start_waiter(root))
    armed(root, second)
    assert outcome(first) == (0, "")
    assert other_session.poll() is None and second.poll() is None


def test_without_identity_or_mailbox_it_leaves_at_once(root: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MAILSLOT_AGENT"}
    no_identity = start_waiter(root, agent=None, env={**env, "MAILSLOT_DIR": str(root)})
    assert outcome(no_identity) == (0, "")
    no_mailbox = start_waiter(tmp_path / "nowhere")
    assert outcome(no_mailbox) == (0, "")
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("entry", [{}, {"wake_on_mail": False, "wake_method": "claude-rewake"},
                                   {"wake_on_mail": True, "wake_method": "tmux"}])
def test_without_the_config_choosing_it_the_waiter_leaves_at_once(
        root: Path, entry: dict[str, object]) -> None:
    configure(root, {AGENT: entry})
    assert outcome(start_waiter(root)) == (0, "")


def test_requested_wakes_only_for_mail_sent_with_wake(
        root: Path, waiters: list[subprocess.Popen[bytes]]) -> None:
    configure(root, {AGENT: {"wake_on_mail": "requested", "wake_method": "claude-rewake"}})
    gemini = sender(root, "gemini")
    waiters.append(proc := start_waiter(root))
    armed(root, proc)
    plain = gemini.send(AGENT, "no wake asked", "x")
    asked = gemini.send(AGENT, "wake please", "x", wake=True)
    code, err = outcome(proc)
    assert code == 2 and asked.id in err and plain.id not in err


def test_under_claude_p_there_is_no_waiter(root: Path) -> None:
    # `claude -p` waits for background hooks before it exits: a waiter would keep it
    # running until mail came or the hook's timeout (a day) ran out.
    sender(root, "gemini").send("codex", "warm-up", "so the mailbox exists")
    proc = start_waiter(root, env={**os.environ, "MAILSLOT_DIR": str(root),
                                   "CLAUDE_CODE_ENTRYPOINT": "sdk-cli"})
    assert outcome(proc) == (0, "")
    assert not (root / "waiters").exists()


def test_a_waiter_run_through_sh_c_leaves_when_the_host_is_gone(
        root: Path, tmp_path: Path) -> None:
    # Claude Code runs hooks as `/bin/sh -c CMD`; the shell does not exec, so it stays
    # as the waiter's parent after Claude Code itself has ended.
    sender(root, "gemini").send("codex", "warm-up", "so the mailbox exists")
    payload = tmp_path / "stop.json"
    payload.write_text(json.dumps(STOP))
    waiter = f"{sys.executable} -m mailslot hook claude wait --agent {AGENT}"
    host_code = ("import subprocess, sys, time\n"
                 f"subprocess.Popen(['/bin/sh', '-c', {f'{waiter} < {payload}; true'!r}])\n"
                 "time.sleep(600)\n")
    host = subprocess.Popen([sys.executable, "-c", host_code],
                            env={**os.environ, "MAILSLOT_DIR": str(root)})
    record = root / "waiters" / AGENT / SESSION
    try:
        wait_for(record.is_file, timeout=30, what="the waiter to arm")
        pid = int(record.read_text())
        parent = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
        assert Path(f"/proc/{parent}/comm").read_text().strip() in ("sh", "dash", "bash")
    finally:
        host.kill()
        host.wait()
    wait_for(lambda: not Path(f"/proc/{pid}").exists()
             or Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z",
             timeout=60, what="the waiter to leave after its host")


def test_with_the_door_chosen_the_waiter_wakes_only_for_what_the_door_did_not_hand_over(
        root: Path, waiters: list[subprocess.Popen[bytes]]) -> None:
    """claude-peer: the watcher's door tells the session first; the waiter (its
    fallback) leaves new mail its grace and then wakes only for what is still untold."""
    from mailslot import FileStore
    from mailslot.hosts.claude import PEER_GRACE

    configure(root, {AGENT: {"wake_on_mail": True, "wake_method": "claude-peer"}})
    gemini = sender(root, "gemini")
    gemini.send("codex", "warm-up", "so the mailbox exists")
    waiters.append(proc := start_waiter(root))
    armed(root, proc)
    handed = gemini.send(AGENT, "the door took this one", "x")
    FileStore(root).add_shown(AGENT, SESSION, [handed.id])  # as claude-peer records it
    missed = gemini.send(AGENT, "the door was refused", "x")
    sent_at = time.monotonic()
    code, err = outcome(proc)
    assert code == 2 and missed.id in err and handed.id not in err
    assert time.monotonic() - sent_at >= PEER_GRACE - 0.5  # it left the door its grace
    assert "only with mailslot" in err and "no mailslot bridge runs" in err  # which tool
    # answers, in its notice too
